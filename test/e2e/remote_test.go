package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startEverythingHTTP runs the npm everything server over a network
// transport ("streamableHttp" or "sse") on 127.0.0.1 and returns its base URL.
func startEverythingHTTP(t *testing.T, transport string) string {
	t.Helper()
	preload, err := filepath.Abs("../../internal/upstream/testdata/loopback.cjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(npmBin, "node"), "--require", preload, filepath.Join(npmBin, "mcp-server-everything"), transport)
	cmd.Env = append(os.Environ(), "PORT=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("the everything server (%s) did not start", transport)
	}
	return ""
}

// headerServer is a Go SDK server over streamable HTTP that records the
// Authorization header of each request, and refuses a wrong one.
type headerServer struct {
	mu   sync.Mutex
	seen []string
	want string
	url  string
}

// revoke makes the server refuse the credentials it accepted so far.
func (h *headerServer) revoke() {
	h.mu.Lock()
	h.want = "revoked"
	h.mu.Unlock()
}

func startHeaderServer(t *testing.T, want string) *headerServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "secured", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says the request was authorized."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, nil, nil
		})
	h := &headerServer{want: want}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		h.mu.Lock()
		h.seen = append(h.seen, got)
		want := h.want
		h.mu.Unlock()
		if got != want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	h.url = ts.URL + "/mcp"
	return h
}

// Remote servers over streamable HTTP and legacy SSE behind the gateway, a
// header with a secret placeholder, and the secret kept out of sight.
func TestRemoteServers(t *testing.T) {
	const secret = "s3cret-api-key-7f1c"
	httpURL := startEverythingHTTP(t, "streamableHttp") + "/mcp"
	sseURL := startEverythingHTTP(t, "sse") + "/sse"
	secured := startHeaderServer(t, "Bearer "+secret)
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{
		"remote-http": {"url": %q, "transport": "http"},
		"remote-sse": {"url": %q},
		"secured": {"url": %q, "headers": {"Authorization": "Bearer ${API_KEY}"}, "envs": {"API_KEY": %q}}
	}`, httpURL, sseURL, secured.url, secret))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			cs := g.connectEra(ctx, era)
			names := toolNames(ctx, t, cs)
			for _, want := range []string{"echo", "remote-sse_echo", "whoami", "get-sum"} {
				if !slices.Contains(names, want) {
					t.Errorf("tool %q missing from %v", want, names)
				}
			}
			for tool, want := range map[string]string{"echo": "Echo: over http", "remote-sse_echo": "Echo: over sse"} {
				msg := strings.TrimPrefix(want, "Echo: ")
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": msg}})
				if err != nil || text(res) != want {
					t.Errorf("%s: %v %v", tool, res, err)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
			if err != nil || text(res) != "authorized" {
				t.Errorf("whoami: %v %v", res, err)
			}
		})
	}

	secured.mu.Lock()
	seen := slices.Clone(secured.seen)
	secured.mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the secured server saw no request")
	}
	for _, h := range seen {
		if h != "Bearer "+secret {
			t.Errorf("the secured server got Authorization %q", h)
		}
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", g.port))
	if err != nil {
		t.Fatal(err)
	}
	healthBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	places := map[string]string{"the log file": g.log(), "/health": string(healthBody)}
	for _, f := range []string{"cmdline", "environ"} {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", g.pid, f))
		places["/proc/<gateway>/"+f] = string(b)
	}
	for where, content := range places {
		if strings.Contains(content, secret) {
			t.Errorf("the secret appears in %s", where)
		}
	}
}

// A missing secret fails the launch naming the placeholder; refused
// credentials become a tool error the agent can read.
func TestRemoteSecretsAndCredentials(t *testing.T) {
	secured := startHeaderServer(t, "Bearer right")
	g := newGW(t)
	g.launch(fmt.Sprintf(`{"secured": {"url": %q, "headers": {"Authorization": "Bearer ${API_KEY}"}}}`, secured.url))
	if g.exit != 2 || !strings.Contains(g.stderr, "API_KEY") {
		t.Errorf("missing secret: exit %d, stderr %q: want exit 2 naming API_KEY", g.exit, g.stderr)
	}

	g = newGW(t)
	g.launch(`{"metadata": {"url": "http://169.254.169.254/latest/meta-data"}}`)
	if g.exit != 2 || !strings.Contains(g.stderr, "169.254.169.254") {
		t.Errorf("cloud-metadata URL: exit %d, stderr %q: want it refused", g.exit, g.stderr)
	}
}

// The mcpServers file an agent already has, used as it is.
func TestMCPServersFile(t *testing.T) {
	httpURL := startEverythingHTTP(t, "streamableHttp") + "/mcp"
	file := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	content := fmt.Sprintf(`{
  "mcpServers": {
    "memory": {"command": %q, "args": [], "env": {"MEMORY_FILE_PATH": %q}},
    "everything": {"type": "http", "url": %q}
  }
}`, filepath.Join(npmBin, "mcp-server-memory"), filepath.Join(t.TempDir(), "m.jsonl"), httpURL)
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newGW(t)
	g.mustLaunch("", "--config-file", file)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := toolNames(ctx, t, g.connect(ctx))
	for _, want := range []string{"read_graph", "echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %q missing from %v", want, names)
		}
	}
}

// Credentials the server stops accepting: the agent gets a tool error that
// says so, not an authentication challenge of its own. The secret comes from
// a secrets file, which must be private.
func TestRemoteRefusedCredentials(t *testing.T) {
	secured := startHeaderServer(t, "Bearer good-key-1234")
	secrets := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(secrets, []byte("# test\nSECURED_KEY=good-key-1234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`{"secured": {"url": %q, "headers": {"Authorization": "Bearer ${SECURED_KEY}"}}}`, secured.url)
	out, err := exec.Command(gatewayBin, "serve", "--config", config, "--secrets-file", secrets, "--host", "127.0.0.1", "--port", "0", "--token-file", "").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chmod 600") {
		t.Errorf("a secrets file readable by others: %v\n%s", err, out)
	}
	if err := os.Chmod(secrets, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, config, "--secrets-file", secrets)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.connectEra(ctx, "2025-11-25")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil || text(res) != "authorized" {
		t.Fatalf("whoami with good credentials: %v %v\n%s", res, err, s.serveLog())
	}
	secured.revoke()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatalf("refused credentials became a protocol error: %v", err)
	}
	if !res.IsError || !strings.Contains(text(res), `mcp server "secured" refused the credentials (HTTP 401)`) {
		t.Errorf("refused credentials: isError=%v %q", res.IsError, text(res))
	}
	if strings.Contains(s.serveLog(), "good-key-1234") {
		t.Error("the secret is in the log")
	}
}

// A remote server that is down when the gateway starts does not stop it; its
// tools arrive, with list_changed, once it is up.
func TestRemoteServerDownAtStart(t *testing.T) {
	// Reserve a port, then free it: nothing listens there until the server starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := startServe(t, fmt.Sprintf(`{"later": {"url": "http://%s/mcp", "transport": "http"}, "local": {"runCmd": %q}}`, addr, testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if st := s.health(t).Upstreams["later"]; st.State != "failed" || st.LastError == "" {
		t.Fatalf("health of the server that is down: %+v", st)
	}
	cs, changed := s.connectListChanged(ctx)

	// Now the server comes up on that address.
	srv := mcp.NewServer(&mcp.Implementation{Name: "later", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "late_tool", Description: "Arrives late."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "here at last"}}}, nil, nil
		})
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the reserved port was taken meanwhile: %v", err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no list_changed after the remote server came up; log:\n%s", s.serveLog())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "late_tool"})
	if err != nil || text(res) != "here at last" {
		t.Errorf("late_tool: %v %v", res, err)
	}
}
