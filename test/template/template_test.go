package template

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTemplate builds template/Dockerfile as docs/template.md says, with
// the locally made base image (node, npm, git; no uv, so npm catalog
// servers only) and the gateway built from this checkout; starts the
// container as a sandbox platform does (the image's port 50005 published)
// and runs `mcp-gateway --config '<json>'` in it as root through the exec
// API, as the SDKs do; then uses it through the published port as an agent
// does, pauses and resumes it (a memory-snapshot stand-in), and reads the
// token back as get_mcp_token() does.
func TestTemplate(t *testing.T) {
	need(t)
	d := dockerd
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// The gateway built here, as an image the Dockerfile takes it from
	// (GATEWAY=image): no Go image can be pulled on these machines.
	gatewayImage := "mcp-gateway-test-gateway:" + randomHex(6)
	d.importFiles(t, gatewayImage, map[string]string{"/out/mcp-gateway": gatewayBin, "/out/mcp-gateway-codemode": runnerBin})
	t.Cleanup(func() { _, _ = d.run(context.Background(), nil, "rmi", gatewayImage) })
	image := "mcp-gateway-test-template:" + randomHex(6)
	start := time.Now()
	d.must(t, "build", "--progress", "plain", "-f", filepath.Join(repoRoot, "template", "Dockerfile"), "-t", image,
		"--build-arg", "BASE_IMAGE="+baseImage,
		"--build-arg", "GATEWAY=image", "--build-arg", "GATEWAY_IMAGE="+gatewayImage,
		"--build-arg", "UV=no",
		"--build-arg", "MCP_SERVERS=memory filesystem sequentialthinking",
		repoRoot)
	t.Logf("docker build: %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _, _ = d.run(context.Background(), nil, "rmi", "-f", image) })
	if out := d.must(t, "run", "--rm", image, "mcp-gateway", "version"); !strings.Contains(out, "mcp-gateway") {
		t.Errorf("mcp-gateway version in the image printed %q", out)
	}

	// The platform starts the sandbox; its own agent (here: sleep) keeps it up.
	name := "mcp-gateway-test-sandbox-" + randomHex(4)
	d.must(t, "run", "-d", "--init", "--name", name, "-p", "127.0.0.1::50005", image, "sleep", "infinity")
	t.Cleanup(func() { _, _ = d.run(context.Background(), nil, "rm", "-f", name) })
	addr := d.publishedPort(t, name, "50005")

	// The SDK's exec call: the token in the environment, the mcp object
	// shell-quoted, as root, within 60 s; exit 0 means ready.
	token := uuid4()
	config := `{"memory":{},"filesystem":{"paths":["/tmp"]},"sequentialthinking":null}`
	launch := func() (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return d.run(ctx, nil, "exec", "-u", "root", "-e", "GATEWAY_ACCESS_TOKEN="+token, name,
			"/bin/sh", "-c", "mcp-gateway --config '"+config+"'")
	}
	start = time.Now()
	out, err := launch()
	if err != nil {
		log, _ := d.run(context.Background(), nil, "exec", name, "tail", "-n", "50", "/var/log/mcp-gateway.log")
		t.Fatalf("mcp-gateway --config in the container: %v\nits log:\n%s", err, log)
	}
	t.Logf("mcp-gateway --config in the container was ready in %s", time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(out, "MCP gateway is ready on port 50005 (pid ") {
		t.Errorf("the launcher printed %q, want the ready line", out)
	}

	// /health, the template's probe: no token.
	health := func() {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h struct {
			Servers []string
			Status  string
			Tools   int
		}
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/health: %d, %v", resp.StatusCode, err)
		}
		if want := []string{"filesystem", "memory", "sequentialthinking"}; !slices.Equal(h.Servers, want) || h.Status != "ok" || h.Tools < 20 {
			t.Errorf("/health: %+v, want servers %v, status ok and every server's tools", h, want)
		}
	}
	health()

	// No token, a wrong one: 401 with the contract's challenge.
	for _, bearer := range []string{"", "Bearer not-" + token} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			req.Header.Set("Authorization", bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer realm="mcp-gateway"`) {
			t.Errorf("POST /mcp with Authorization %q: %d %q, want 401 with Bearer realm=\"mcp-gateway\"", bearer, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// The sandbox proxy's Host header (the gateway sees the request on its
	// non-loopback address, from the bridge): not refused as DNS rebinding.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxy","version":"1"}}}`))
	req.Host = "50005-" + name + ".sandbox.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("initialize with Host %s: %d, want 200", req.Host, resp.StatusCode)
		}
	}

	// An agent with the token, through the published port.
	cs := connect(ctx, t, addr, token, "2025-11-25")
	names := toolNames(ctx, t, cs)
	for _, want := range []string{"create_entities", "read_graph", "list_allowed_directories", "read_text_file", "sequentialthinking"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s (memory, filesystem and sequentialthinking's tools): %v", want, names)
		}
	}
	if text := call(ctx, t, cs, "list_allowed_directories", nil); !strings.Contains(text, "/tmp") {
		t.Errorf("list_allowed_directories: %q, want /tmp", text)
	}
	call(ctx, t, cs, "create_entities", map[string]any{"entities": []map[string]any{
		{"name": "sandbox-snapshot", "entityType": "test", "observations": []string{"made before the pause"}}}})

	// A second launch is refused while the gateway runs.
	if out, err := launch(); err == nil || !strings.Contains(err.Error(), "already running (pid") {
		t.Errorf("a second mcp-gateway --config: %q, %v; want a failure saying already running (pid N)", out, err)
	}

	// Pause and resume: the same gateway, the same token, the same memory.
	d.must(t, "pause", name)
	if st := strings.TrimSpace(d.must(t, "inspect", "-f", "{{.State.Status}}", name)); st != "paused" {
		t.Fatalf("after docker pause the container is %s", st)
	}
	d.must(t, "unpause", name)
	health()
	if text := call(ctx, t, cs, "read_graph", nil); !strings.Contains(text, "made before the pause") {
		t.Errorf("read_graph after the pause, same session: %q", text)
	}
	cs2 := connect(ctx, t, addr, token, "")
	if text := call(ctx, t, cs2, "read_graph", nil); !strings.Contains(text, "sandbox-snapshot") {
		t.Errorf("read_graph after the pause, a new client with the same token: %q", text)
	}

	// get_mcp_token(): the SDK reads /etc/mcp-gateway/.token as root, untrimmed.
	if got := d.must(t, "exec", "-u", "root", name, "cat", "/etc/mcp-gateway/.token"); got != token {
		t.Errorf("/etc/mcp-gateway/.token holds %q, want exactly the token %q", got, token)
	}
	if modes := d.must(t, "exec", "-u", "root", name, "stat", "-c", "%a %U", "/etc/mcp-gateway", "/etc/mcp-gateway/.token"); modes != "700 root\n600 root\n" {
		t.Errorf("modes of /etc/mcp-gateway and its .token: %q, want 700 and 600, root's", modes)
	}
	// The code-mode runner is installed beside the gateway, where it looks.
	if which := d.must(t, "exec", name, "sh", "-c", "command -v mcp-gateway-codemode"); strings.TrimSpace(which) != "/usr/local/bin/mcp-gateway-codemode" {
		t.Errorf("mcp-gateway-codemode in the template: %q, want /usr/local/bin/mcp-gateway-codemode", which)
	}
	// The token is in no server's environment.
	if env := d.must(t, "exec", name, "sh", "-c", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c GATEWAY_ACCESS_TOKEN || true"); strings.TrimSpace(env) != "0" {
		t.Errorf("%s processes of the container have GATEWAY_ACCESS_TOKEN in their environment", strings.TrimSpace(env))
	}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect is an agent's Go SDK client of the gateway at addr (host:port).
func connect(ctx context.Context, t *testing.T, addr, token, version string) *mcp.ClientSession {
	t.Helper()
	return connectURL(ctx, t, "http://"+addr+"/mcp", token, version)
}

// connectURL is an agent's Go SDK client at url with the token; version ""
// is the SDK's newest protocol version.
func connectURL(ctx context.Context, t *testing.T, url, token, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "template-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting to the gateway at %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// call calls a tool that must succeed and returns its text.
func call(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s answered an error: %s", tool, text.String())
	}
	return text.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func uuid4() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
