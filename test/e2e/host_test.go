package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// hostGW is a running `mcp-gateway host` daemon on a state directory.
type hostGW struct {
	t     *testing.T
	state string // its state directory
	logf  string
	url   string
	cmd   *exec.Cmd
}

var hostReady = regexp.MustCompile(`msg="mcp-gateway host is ready" url=(\S+)`)

// startHost runs the daemon on state (a fresh port each time) and waits until it is ready.
func startHost(t *testing.T, state string, extra ...string) *hostGW {
	t.Helper()
	h := &hostGW{t: t, state: state, logf: filepath.Join(t.TempDir(), "host.log")}
	h.cmd = exec.Command(gatewayBin, append([]string{"host", "--state-dir", state, "--host", "127.0.0.1", "--port", "0", "--log-level", "debug"}, extra...)...)
	logf, err := os.Create(h.logf)
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stop)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := hostReady.FindStringSubmatch(h.log()); m != nil {
			h.url = m[1]
			return h
		}
		if h.cmd.ProcessState != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the host did not become ready:\n%s", h.log())
	return nil
}

func (h *hostGW) log() string {
	b, _ := os.ReadFile(h.logf)
	return string(b)
}

// stop sends SIGTERM and checks that no server process outlives the daemon.
func (h *hostGW) stop() {
	if h.cmd == nil || h.cmd.Process == nil || h.cmd.ProcessState != nil {
		return
	}
	g := &gw{t: h.t, pid: h.cmd.Process.Pid}
	g.stop()
	_ = h.cmd.Wait()
}

// cli runs an administration command against the host's state directory.
func (h *hostGW) cli(stdin string, args ...string) (stdout, stderr string, code int) {
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(os.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// mustCLI runs a command that must succeed and returns its standard output.
func (h *hostGW) mustCLI(stdin string, args ...string) string {
	h.t.Helper()
	out, errOut, code := h.cli(stdin, args...)
	if code != 0 {
		h.t.Fatalf("mcp-gateway %s: exit %d\n%s%s\nhost log:\n%s", strings.Join(args, " "), code, out, errOut, h.log())
	}
	return out
}

// failCLI runs a command that must fail with a message containing want.
func (h *hostGW) failCLI(want string, stdin string, args ...string) {
	h.t.Helper()
	out, errOut, code := h.cli(stdin, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		h.t.Errorf("mcp-gateway %s: exit %d, stderr %q, stdout %q; want a failure saying %q", strings.Join(args, " "), code, errOut, out, want)
	}
}

// createSandbox makes a sandbox and returns a client handle with its token.
func (h *hostGW) createSandbox(name string, extra ...string) *gw {
	h.t.Helper()
	out := h.mustCLI("", append([]string{"sandbox", "create", name, "--json"}, extra...)...)
	var res struct{ Token, URL, Mode string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Token) != 64 || res.URL != h.url {
		h.t.Fatalf("sandbox create %s printed %s (%v)", name, out, err)
	}
	return h.client(res.Token)
}

// client is a handle for connecting to the host with a token.
func (h *hostGW) client(token string) *gw {
	dir := h.t.TempDir()
	// gw.log() reads dir/log/mcp-gateway.log: point it at the host's log.
	_ = os.MkdirAll(filepath.Join(dir, "log"), 0o755)
	_ = os.Symlink(h.logf, filepath.Join(dir, "log", "mcp-gateway.log"))
	return &gw{t: h.t, dir: dir, token: token, url: h.url}
}

func callText(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	return text(res), res.IsError
}

func waitListChanged(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", what)
	}
}

// Host mode end to end, as the issue asks it proven: registrations of a
// remote server with a secret header and local servers, a static and a
// dynamic sandbox, an agent finding, adding and calling a server, a live
// load reaching the connected client, isolation between sandboxes, a
// restart keeping everything, no secret in sight, sandbox rm revoking.
func TestHostMode(t *testing.T) {
	const apiKey = "s3cret-everything-key-81b2"
	const securedToken = "s3cret-secured-token-4c0d"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	everything := startEverythingHTTP(t, "streamableHttp") + "/mcp"
	secured := startHeaderServer(t, "Bearer "+securedToken)
	data := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	exe, _ := os.Executable()

	h := startHost(t, state)
	out := h.mustCLI("", "server", "add", "everything", "--url", everything, "--header", "Authorization: Bearer ${api-key}",
		"--description", "Exercises every MCP feature: echo, sums, sampling")
	if !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "loopback") {
		t.Errorf("registering a loopback URL should warn: %s", out)
	}
	h.mustCLI("", "server", "add", "secured", "--url", secured.url, "--header", "Authorization: Bearer ${token}")
	out = h.mustCLI("", "server", "add", "memory", "--description", "Remembers facts as a knowledge graph",
		"--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl", "--property", "MEMORY_FILE_PATH")
	if !strings.Contains(out, `registered mcp server "memory" (9 tools)`) {
		t.Errorf("server add memory: %s", out)
	}
	h.mustCLI("", "server", "add", "tester", "--command", exe, "--env", testServerEnv+"=1")
	out = h.mustCLI(apiKey+"\n", "secret", "set", "mcp:everything:api-key")
	if !strings.Contains(out, "secret mcp:everything:api-key stored") {
		t.Errorf("secret set: %s", out)
	}
	h.mustCLI(securedToken, "secret", "set", "mcp:secured:token")

	out = h.mustCLI("", "server", "inspect", "everything")
	if !strings.Contains(out, `"Authorization": "Bearer ${api-key}"`) || !strings.Contains(out, `"name": "mcp:everything:api-key",`) || !strings.Contains(out, `"status": "set"`) {
		t.Errorf("server inspect everything:\n%s", out)
	}
	out = h.mustCLI("", "server", "ls")
	for _, want := range []string{"everything  remote", "memory      local   9", "secured", "tester"} {
		if !strings.Contains(out, want) {
			t.Errorf("server ls lacks %q:\n%s", want, out)
		}
	}

	st := h.createSandbox("st", "--static", "everything,memory,tester")
	dyn := h.createSandbox("dyn")

	// The static sandbox: its servers pre-loaded, no discovery tools.
	stc := st.connectEra(ctx, "2025-11-25")
	names := toolNames(ctx, t, stc)
	for _, want := range []string{"echo", "get-sum", "create_entities", "pid", "mcp-exec"} {
		if !slices.Contains(names, want) {
			t.Errorf("static sandbox: %q missing from %v", want, names)
		}
	}
	for _, banned := range []string{"mcp-find", "mcp-add", "mcp-config-set", "whoami"} {
		if slices.Contains(names, banned) {
			t.Errorf("static sandbox offers %q: %v", banned, names)
		}
	}
	if got, _ := callText(ctx, t, stc, "echo", map[string]any{"message": "hello"}); got != "Echo: hello" {
		t.Errorf("echo through the static sandbox: %q", got)
	}
	if got, _ := callText(ctx, t, stc, "mcp-exec", map[string]any{"name": "echo", "arguments": map[string]any{"message": "via exec"}}); got != "Echo: via exec" {
		t.Errorf("mcp-exec: %q", got)
	}
	stPid, _ := callText(ctx, t, stc, "pid", nil)

	// The dynamic sandbox: an agent finds, adds, configures and calls a server.
	dync, changed := dyn.connectListChanged(ctx)
	if got := toolNames(ctx, t, dync); !slices.Equal(got, []string{"mcp-find", "mcp-add", "mcp-config-set", "mcp-exec", "code-mode"}) {
		t.Errorf("a new dynamic sandbox offers %v, want only the built-in tools", got)
	}
	res, err := dync.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-find", Arguments: map[string]any{"query": "knowledge graph", "limit": 2}})
	if err != nil || res.IsError {
		t.Fatalf("mcp-find: %v %v", res, err)
	}
	found, _ := json.Marshal(res.StructuredContent)
	var findResult struct {
		Servers []struct {
			Name     string
			Attached bool
		}
	}
	_ = json.Unmarshal(found, &findResult)
	if len(findResult.Servers) == 0 || findResult.Servers[0].Name != "memory" || len(findResult.Servers) > 2 || findResult.Servers[0].Attached {
		t.Errorf("mcp-find \"knowledge graph\" found %s, want memory first (not attached yet), at most 2", found)
	}
	addRes, err := dync.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-add", Arguments: map[string]any{"name": "memory"}})
	if err != nil {
		t.Fatalf("mcp-add memory: %v", err)
	}
	got := text(addRes)
	if addRes.IsError || !strings.Contains(got, `Added mcp server "memory" with 9 tools`) || !strings.Contains(got, "\n- create_entities: Create multiple new entities") || strings.Contains(got, `"inputSchema"`) || len(got) > 2000 {
		t.Errorf("mcp-add memory: its text should name the tools with one-line descriptions, without their definitions (%d bytes): %s", len(got), got)
	}
	if sc, _ := json.Marshal(addRes.StructuredContent); !strings.Contains(string(sc), `"name":"create_entities"`) || !strings.Contains(string(sc), `"inputSchema"`) {
		t.Errorf("mcp-add memory: structuredContent lacks the definitions: %s", sc)
	}
	waitListChanged(t, changed, "mcp-add")
	if got, _ := callText(ctx, t, dync, "mcp-find", map[string]any{"query": "knowledge graph"}); !strings.Contains(got, "1. memory (already added)") {
		t.Errorf("mcp-find after mcp-add: %s", got)
	}
	if names := toolNames(ctx, t, dync); !slices.Contains(names, "create_entities") {
		t.Errorf("after mcp-add: %v", names)
	}
	got, isErr := callText(ctx, t, dync, "mcp-config-set", map[string]any{"server": "memory", "config": map[string]any{"memory_file_path": filepath.Join(data, "dyn.jsonl")}})
	if isErr || !strings.Contains(got, "restarted") {
		t.Errorf("mcp-config-set: %s", got)
	}
	got, isErr = callText(ctx, t, dync, "mcp-config-set", map[string]any{"server": "memory", "config": map[string]any{"colour": "blue"}})
	if !isErr || !strings.Contains(got, `has no property "colour" (it declares: memory_file_path)`) {
		t.Errorf("mcp-config-set with an undeclared property: %s", got)
	}
	got, isErr = callText(ctx, t, dync, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}}})
	if isErr || !strings.Contains(got, "Ada") {
		t.Errorf("create_entities: %s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "dyn.jsonl")); !strings.Contains(string(b), "Ada") {
		t.Errorf("the dynamic sandbox's memory file lacks the entity: %q", b)
	}
	if got, _ := callText(ctx, t, stc, "read_graph", nil); strings.Contains(got, "Ada") {
		t.Errorf("the static sandbox's memory sees the dynamic one's entity: %s", got)
	}
	// Without configuration, each sandbox's memory keeps its graph in its own directory.
	if got, isErr := callText(ctx, t, stc, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Grace", "entityType": "person", "observations": []string{"static"}}}}); isErr {
		t.Errorf("create_entities in the static sandbox: %s", got)
	}
	stGraph := filepath.Join(state, "sandboxes", "st", "memory", "graph.jsonl")
	if b, _ := os.ReadFile(stGraph); !strings.Contains(string(b), "Grace") {
		t.Errorf("the static sandbox's graph %s lacks its entity: %q", stGraph, b)
	}
	if got, _ := callText(ctx, t, dync, "read_graph", nil); strings.Contains(got, "Grace") {
		t.Errorf("the dynamic sandbox's memory sees the static one's entity: %s", got)
	}
	h.failCLI("${sandbox} is reserved", "x", "secret", "set", "mcp:memory:sandbox")

	// A live load from the command line reaches the connected client.
	out = h.mustCLI("", "load", "secured", "--sandbox", "dyn")
	if !strings.Contains(out, `loaded "secured" into sandbox "dyn" (1 tools)`) {
		t.Errorf("load: %s", out)
	}
	waitListChanged(t, changed, "load")
	if got, _ := callText(ctx, t, dync, "whoami", nil); got != "authorized" {
		t.Errorf("whoami after load: %q", got)
	}
	h.mustCLI("", "load", "tester", "--sandbox", "dyn")
	waitListChanged(t, changed, "load tester")
	if dynPid, _ := callText(ctx, t, dync, "pid", nil); dynPid == stPid || dynPid == "" {
		t.Errorf("both sandboxes reach the same tester process (pid %s): a local server runs once per sandbox", dynPid)
	}

	h.mustCLI("", "unload", "tester", "--sandbox", "dyn")
	waitListChanged(t, changed, "unload tester")
	if names := toolNames(ctx, t, dync); slices.Contains(names, "pid") {
		t.Errorf("after unload, the dynamic sandbox still offers the tester's tools: %v", names)
	}
	h.mustCLI("", "load", "tester", "--sandbox", "dyn")
	waitListChanged(t, changed, "load tester again")

	// /health, with a sandbox's token, gives every sandbox's servers and
	// their states, no error text.
	var health struct {
		Status    string
		Sandboxes map[string]struct {
			Mode      string
			Servers   []string
			Tools     int
			Upstreams map[string]map[string]any
		}
	}
	healthReq, _ := http.NewRequest("GET", strings.TrimSuffix(h.url, "/mcp")+"/health", nil)
	healthReq.Header.Set("Authorization", "Bearer "+st.token)
	resp, err := http.DefaultClient.Do(healthReq)
	if err != nil {
		t.Fatal(err)
	}
	healthBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(healthBody, &health); err != nil {
		t.Fatalf("/health: %v: %s", err, healthBody)
	}
	stH, dynH := health.Sandboxes["st"], health.Sandboxes["dyn"]
	if health.Status != "ok" || stH.Mode != "static" || !slices.Equal(stH.Servers, []string{"everything", "memory", "tester"}) ||
		stH.Upstreams["memory"]["state"] != "ready" || stH.Upstreams["memory"]["tools"] != float64(9) || stH.Tools < 9 ||
		dynH.Mode != "dynamic" || dynH.Upstreams["secured"]["state"] != "ready" {
		t.Errorf("/health: %s", healthBody)
	}
	if strings.Contains(string(healthBody), "lastError") {
		t.Errorf("/health shows error text: %s", healthBody)
	}

	// One sandbox's token never reaches another's servers.
	if _, err := stc.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"}); err == nil || !strings.Contains(err.Error(), "Unknown tool: whoami") {
		t.Errorf("the static sandbox calling the dynamic one's whoami: %v", err)
	}
	if got, isErr := callText(ctx, t, stc, "mcp-exec", map[string]any{"name": "whoami"}); !isErr || !strings.Contains(got, "Unknown tool: whoami") {
		t.Errorf("mcp-exec of another sandbox's tool: %s", got)
	}

	// Bad input, each with a clear message and nothing lost.
	h.failCLI(`server name "bad/name": use only letters, digits`, "", "server", "add", "bad/name", "--command", "true")
	h.failCLI(`mcp server "memory" is already registered`, "", "server", "add", "memory", "--command", "true")
	h.failCLI("header Authorization carries a credential", "", "server", "add", "plain", "--url", everything, "--header", "Authorization: Bearer abc")
	h.failCLI(`secret mcp:nope:key: mcp server "nope" is not registered`, "x", "secret", "set", "mcp:nope:key")
	h.failCLI(`mcp server "nope" is not registered`, "", "load", "nope", "--sandbox", "dyn")
	h.failCLI(`sandbox "nope" does not exist`, "", "load", "memory", "--sandbox", "nope")
	h.mustCLI("", "server", "add", "nokey", "--url", everything, "--header", "X-Api-Key: ${missing}")
	h.failCLI("${missing}", "", "load", "nokey", "--sandbox", "dyn")
	if h.mustCLI("", "sandbox", "ls") == "" {
		t.Error("sandbox ls printed nothing")
	}
	// Commands at once are serialized: none is lost.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { h.mustCLI("", "sandbox", "create", fmt.Sprintf("par%d", i)) })
	}
	wg.Wait()
	out = h.mustCLI("", "sandbox", "ls")
	for i := range 8 {
		if !strings.Contains(out, fmt.Sprintf("par%d ", i)) {
			t.Errorf("sandbox par%d is missing after concurrent creates:\n%s", i, out)
		}
	}

	// The secrets appear nowhere in clear.
	places := map[string]string{"the host log": h.log(), "server inspect": h.mustCLI("", "server", "inspect", "secured") + h.mustCLI("", "secret", "ls")}
	_ = filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			places[path] = string(b)
		}
		return nil
	})
	for _, pid := range append([]int{h.cmd.Process.Pid}, descendants(h.cmd.Process.Pid)...) {
		for _, f := range []string{"cmdline", "environ"} {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			places[fmt.Sprintf("/proc/%d/%s", pid, f)] = string(b)
		}
	}
	for where, content := range places {
		for _, secret := range []string{apiKey, securedToken} {
			if strings.Contains(content, secret) {
				t.Errorf("a secret appears in clear in %s", where)
			}
		}
	}
	secured.mu.Lock()
	seen := slices.Clone(secured.seen)
	secured.mu.Unlock()
	if len(seen) == 0 || slices.ContainsFunc(seen, func(s string) bool { return s != "Bearer "+securedToken }) {
		t.Errorf("the secured server got Authorization headers %q", seen)
	}

	// A restart keeps every registration, attachment and secret.
	h.stop()
	h = startHost(t, state)
	out = h.mustCLI("", "server", "ls")
	for _, want := range []string{"everything", "memory", "secured", "tester", "nokey"} {
		if !strings.Contains(out, want) {
			t.Errorf("after the restart, server ls lacks %q:\n%s", want, out)
		}
	}
	if out := h.mustCLI("", "secret", "ls"); !strings.Contains(out, "mcp:everything:api-key") || !strings.Contains(out, "mcp:secured:token") {
		t.Errorf("after the restart, secret ls:\n%s", out)
	}
	dyn.url, st.url = h.url, h.url
	dync2 := dyn.connectEra(ctx, "")
	names = toolNames(ctx, t, dync2)
	for _, want := range []string{"create_entities", "whoami", "pid", "mcp-find"} {
		if !slices.Contains(names, want) {
			t.Errorf("after the restart, the dynamic sandbox lacks %q: %v", want, names)
		}
	}
	if got, _ := callText(ctx, t, dync2, "whoami", nil); got != "authorized" {
		t.Errorf("whoami after the restart (the secret must survive it): %q", got)
	}
	// A rotated secret is used at once.
	out = h.mustCLI("wrong-value", "secret", "set", "mcp:secured:token")
	if !strings.Contains(out, `warning: sandbox "dyn"`) {
		t.Errorf("setting a secret the server refuses should warn that its instance did not restart: %s", out)
	}
	h.mustCLI(securedToken, "secret", "set", "mcp:secured:token")
	if got, _ := callText(ctx, t, dync2, "whoami", nil); got != "authorized" {
		t.Errorf("whoami after the secret was set back: %q", got)
	}
	if got, _ := callText(ctx, t, dync2, "read_graph", nil); !strings.Contains(got, "Ada") {
		t.Errorf("after the restart the dynamic sandbox's memory configuration is lost: %s", got)
	}

	// sandbox rm revokes the token at once.
	stc2 := st.connectEra(ctx, "2025-11-25")
	h.mustCLI("", "sandbox", "rm", "st")
	if _, err := stc2.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); err == nil {
		t.Error("a call with a removed sandbox's session succeeded")
	}
	if _, err := os.Stat(filepath.Join(state, "sandboxes", "st")); !os.IsNotExist(err) {
		t.Errorf("the removed sandbox's directory is still there: %v", err)
	}
	if code := postStatus(t, h.url, st.token); code != http.StatusUnauthorized {
		t.Errorf("initialize with a removed sandbox's token: %d, want 401", code)
	}
	if code := postStatus(t, h.url, dyn.token); code != http.StatusOK {
		t.Errorf("initialize with a live sandbox's token: %d, want 200", code)
	}

	// server rm says which secrets it leaves behind.
	out = h.mustCLI("", "server", "rm", "secured")
	if !strings.Contains(out, "detached from sandboxes: dyn") || !strings.Contains(out, "mcp-gateway secret rm mcp:secured:token") {
		t.Errorf("server rm secured:\n%s", out)
	}
}

// postStatus sends an initialize with a token and returns the status code.
func postStatus(t *testing.T, url, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A corrupted state file stops the daemon with a clear message and is left
// as it was; a second daemon on the same directory is refused; the CLI
// says when no daemon runs.
func TestHostStateProblems(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	h := &hostGW{t: t, state: state}
	h.failCLI("mcp-gateway host is not running", "", "server", "ls")

	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := []byte(`{"version":1,"servers":{"a":`)
	path := filepath.Join(state, "state.json")
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gatewayBin, "host", "--state-dir", state, "--port", "0").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "state.json: not valid JSON") || !strings.Contains(string(out), "left untouched") {
		t.Errorf("host on a corrupted state file: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(path); string(b) != string(garbage) {
		t.Errorf("the corrupted state file was changed to %q", b)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	startHost(t, state)
	out, err = exec.Command(gatewayBin, "host", "--state-dir", state, "--port", "0").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "another mcp-gateway host (pid ") {
		t.Errorf("a second host on the same state directory: exit %d\n%s", code, out)
	}
	fi, err := os.Stat(filepath.Join(state, "control.sock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket: %v %v, want mode 0600", fi, err)
	}
}

// A second daemon on the same port, with its own state directory, names
// the one running; one on the same port and directory is told about the
// directory (the lock is taken before the port). --log-file keeps the
// daemon's log off its standard error.
func TestHostSecondDaemon(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	first := startHost(t, state)
	u, err := url.Parse(first.url)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	out, err := exec.Command(gatewayBin, "host", "--state-dir", filepath.Join(t.TempDir(), "other"), "--port", port).CombinedOutput()
	want := fmt.Sprintf("another mcp-gateway host (pid %d) listens on port %s", first.cmd.Process.Pid, port)
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), want) {
		t.Errorf("a second host on the same port: exit %d\n%s\nwant %q", code, out, want)
	}
	out, err = exec.Command(gatewayBin, "host", "--state-dir", state, "--port", port).CombinedOutput()
	want = fmt.Sprintf("another mcp-gateway host (pid %d) uses %s", first.cmd.Process.Pid, state)
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), want) {
		t.Errorf("a second host on the same port and state directory: exit %d\n%s\nwant %q", code, out, want)
	}

	logFile := filepath.Join(t.TempDir(), "host.log")
	cmd := exec.Command(gatewayBin, "host", "--state-dir", filepath.Join(t.TempDir(), "third"), "--port", "0", "--log-file", logFile)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gw{t: t, pid: cmd.Process.Pid}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "mcp-gateway host is ready") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.stop()
	_ = cmd.Wait()
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "mcp-gateway host is ready") || !strings.Contains(string(b), "shutting down") {
		t.Errorf("--log-file holds %q", b)
	}
	if stderr.Len() != 0 {
		t.Errorf("with --log-file the daemon wrote to its stdout/stderr: %q", stderr.String())
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// A server registered from an MCP registry entry runs its npm package
// through npx, with its declared variables as configuration properties.
func TestHostMetadataRegistration(t *testing.T) {
	entry := `{"server":{"name":"io.github.modelcontextprotocol/server-memory","description":"Knowledge graph memory",
		"version":"2026.8.31","packages":[{"registryType":"npm","identifier":"@modelcontextprotocol/server-memory","version":"2026.8.31",
		"transport":{"type":"stdio"},"environmentVariables":[{"name":"MEMORY_FILE_PATH","description":"Where the graph is kept"}]}]},"_meta":{}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, entry)
	}))
	defer ts.Close()
	standInLog := filepath.Join(t.TempDir(), "standin.log")
	t.Setenv("STANDIN_LOG", standInLog)
	h := startHost(t, filepath.Join(t.TempDir(), "state"), "--server-env", "STANDIN_LOG") // for the npx stand-in the daemon runs
	out := h.mustCLI("", "server", "add", "mem", "--metadata", ts.URL+"/v0/servers/x")
	if !strings.Contains(out, `registered mcp server "mem" (9 tools)`) {
		t.Errorf("server add --metadata: %s", out)
	}
	out = h.mustCLI("", "server", "inspect", "mem")
	for _, want := range []string{`"command": "npx"`, `"-y"`, `"@modelcontextprotocol/server-memory@2026.8.31"`, `"package": "npm @modelcontextprotocol/server-memory@2026.8.31"`, `"env": "MEMORY_FILE_PATH"`, `"description": "Knowledge graph memory"`} {
		if !strings.Contains(out, want) {
			t.Errorf("server inspect mem lacks %s:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(standInLog); !strings.Contains(string(b), "npx -y @modelcontextprotocol/server-memory@2026.8.31") {
		t.Errorf("npx was run as %q", b)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"name":"x/remote-only","remotes":[{"type":"streamable-http","url":"https://example.com/mcp"}]}`)
	}))
	defer bad.Close()
	h.failCLI("register its remote with --url instead", "", "server", "add", "remote-only", "--metadata", bad.URL)

	// The same entry as a server.yaml.
	yamlEntry := "server:\n  name: io.github.modelcontextprotocol/server-memory\n  description: Knowledge graph memory (YAML)\n  version: 2026.8.31\n" +
		"  packages:\n    - registryType: npm\n      identifier: \"@modelcontextprotocol/server-memory\"\n      version: 2026.8.31\n      transport: {type: stdio}\n"
	ys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		fmt.Fprint(w, yamlEntry)
	}))
	defer ys.Close()
	out = h.mustCLI("", "server", "add", "memyaml", "--metadata", ys.URL+"/server.yaml", "--allow-private-address")
	if !strings.Contains(out, `registered mcp server "memyaml" (9 tools)`) {
		t.Errorf("server add --metadata server.yaml: %s", out)
	}
	if out = h.mustCLI("", "server", "inspect", "memyaml"); !strings.Contains(out, `"description": "Knowledge graph memory (YAML)"`) || !strings.Contains(out, `"allowPrivateAddress": true`) {
		t.Errorf("server inspect memyaml:\n%s", out)
	}
	// The metadata URL is checked like a server's: a cloud-metadata address is never fetched.
	h.failCLI("169.254.169.254 is a cloud metadata address", "", "server", "add", "imds", "--metadata", "http://169.254.169.254/latest/server.json")
	// A loopback server URL: a warning by default, none with the server's own override.
	if out = h.mustCLI("", "server", "add", "loop", "--url", ys.URL+"/mcp"); !strings.Contains(out, "loopback address") {
		t.Errorf("a loopback URL registered without a warning: %s", out)
	}
	if out = h.mustCLI("", "server", "add", "loop2", "--url", ys.URL+"/mcp", "--allow-private-address"); strings.Contains(out, "loopback") {
		t.Errorf("a loopback URL registered with --allow-private-address still warns: %s", out)
	}
}
