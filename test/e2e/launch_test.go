package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The main scenario: the catalog's memory and filesystem servers, the
// everything server as a local command, and our test server twice (so its
// tools collide), launched as the sandbox SDKs launch the gateway.
func TestLaunchAggregatesRealServers(t *testing.T) {
	g := newGW(t)
	files := t.TempDir()
	if err := os.WriteFile(filepath.Join(files, "hello.txt"), []byte("hello from the sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`{
		"memory": {"envs": {"MEMORY_FILE_PATH": %q}},
		"filesystem": {"paths": [%q]},
		"everything": {"runCmd": %q},
		"alpha": {"runCmd": %q, "envs": {"ONLY_ALPHA": "a-value"}},
		"beta": {"runCmd": %q}
	}`, filepath.Join(t.TempDir(), "memory.jsonl"), files, filepath.Join(npmBin, "mcp-server-everything"), testServerCmd(), testServerCmd())
	g.mustLaunch(config)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every check runs for a client of each era.
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) { checkAggregate(ctx, t, g, g.connectEra(ctx, era), files) })
	}
	cs := g.connect(ctx)

	t.Run("health", func(t *testing.T) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", g.port))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h struct {
			Servers []string `json:"servers"`
			Status  string   `json:"status"`
			Tools   int      `json:"tools"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		wantServers := []string{"alpha", "beta", "everything", "filesystem", "memory"}
		if !slices.Equal(h.Servers, wantServers) || h.Status != "ok" || h.Tools != len(toolNames(ctx, t, cs)) {
			t.Errorf("health = %+v, want servers %v, status ok, tools = the listed count", h, wantServers)
		}
	})

	t.Run("token file", func(t *testing.T) {
		b, err := os.ReadFile(g.tokenFile())
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != g.token {
			t.Errorf("token file holds %q, want exactly the token (no newline)", b)
		}
		for path, want := range map[string]os.FileMode{g.tokenFile(): 0o600, filepath.Dir(g.tokenFile()): 0o700} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s mode %o, want %o", path, fi.Mode().Perm(), want)
			}
		}
	})

	t.Run("the token is in no process's environment or argv", func(t *testing.T) {
		procs := g.children()
		procs[g.pid] = "gateway"
		if len(procs) < 6 {
			t.Fatalf("found %d processes under the gateway, want it and its 5 servers: %v", len(procs), procs)
		}
		for pid, what := range procs {
			for _, f := range []string{"environ", "cmdline"} {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
				if err != nil {
					continue // exited meanwhile
				}
				if strings.Contains(string(b), g.token) {
					t.Errorf("the token is in /proc/%d/%s (%s)", pid, f, what)
				}
			}
		}
		if strings.Contains(g.log(), g.token) {
			t.Error("the token is in the log file")
		}
	})

	t.Run("server stderr is in the log, prefixed", func(t *testing.T) {
		if !strings.Contains(g.log(), "[filesystem] ") {
			t.Errorf("the log has no [filesystem] line:\n%s", g.log())
		}
	})

	t.Run("a killed server restarts on the next call", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_pid"})
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		fmt.Sscan(text(res), &pid)
		if pid == 0 {
			t.Fatalf("beta_pid = %q", text(res))
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Wait until the gateway has seen it go: its log says so once the
		// server is marked down. (The process's /proc entry going away is not
		// that signal: a shell between the gateway and the server reaps it,
		// and a call sent meanwhile reaches a server about to be found dead.)
		exited := func(log string) bool { // quoted by the log's text handler, or not
			return strings.Contains(log, `mcp server \"beta\" exited`) || strings.Contains(log, `mcp server "beta" exited`)
		}
		for !exited(g.log()) {
			if ctx.Err() != nil {
				t.Fatalf("the gateway never logged beta's exit:\n%s", g.log())
			}
			time.Sleep(10 * time.Millisecond)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_pid"})
		if err != nil {
			t.Fatalf("the call after a kill: %v", err)
		}
		var pid2 int
		fmt.Sscan(text(res), &pid2)
		if pid2 == 0 || pid2 == pid {
			t.Errorf("after the kill, beta_pid = %q, want a new process", text(res))
		}
		// The other servers were not disturbed.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
		if err != nil || text(res) != "still here" {
			t.Errorf("alpha after beta's kill: %v %v", res, err)
		}
	})
}

// checkAggregate runs the checks of TestLaunchAggregatesRealServers that
// depend on the client's protocol era.
func checkAggregate(ctx context.Context, t *testing.T, g *gw, cs *mcp.ClientSession, files string) {
	t.Run("tools are listed under the naming rule", func(t *testing.T) {
		names := toolNames(ctx, t, cs)
		for _, want := range []string{
			"echo", "env", "crash", "pid", // alpha, first in sorted order, keeps its names
			"beta_echo", "beta_env", "beta_pid", // beta's collide
			"everything_echo",                  // everything's echo collides with alpha's
			"get-sum",                          // everything's own
			"read_text_file", "list_directory", // filesystem
			"create_entities", "read_graph", "search_nodes", // memory
		} {
			if !slices.Contains(names, want) {
				t.Errorf("tool %q missing from %v", want, names)
			}
		}
		if slices.Contains(names, "alpha_echo") {
			t.Errorf("alpha_echo exposed: the first server in sorted order keeps the plain name")
		}
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("tool %q listed twice", n)
			}
			seen[n] = true
		}
	})

	t.Run("filesystem read returns the file's text", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(files, "hello.txt")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "hello from the sandbox\n" || res.IsError {
			t.Errorf("read_text_file = %q (isError %v)", got, res.IsError)
		}
	})

	t.Run("memory write is read back", func(t *testing.T) {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
			"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"wrote the first program"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_nodes", Arguments: map[string]any{"query": "Ada"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); !strings.Contains(got, "wrote the first program") {
			t.Errorf("search_nodes = %q, want the observation written before", got)
		}
	})

	t.Run("renamed tool reaches its own server", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything_echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "Echo: hi" {
			t.Errorf("everything_echo = %q, want the everything server's answer", got)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "beta_echo", Arguments: map[string]any{"text": "to beta"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "to beta" {
			t.Errorf("beta_echo = %q", got)
		}
	})

	t.Run("envs reach only their server", func(t *testing.T) {
		for tool, want := range map[string]string{"env": "true:a-value", "beta_env": "false:"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"name": "ONLY_ALPHA"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); got != want {
				t.Errorf("%s(ONLY_ALPHA) = %q, want %q", tool, got, want)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "GATEWAY_ACCESS_TOKEN"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "false:" {
			t.Errorf("a server sees GATEWAY_ACCESS_TOKEN: %q", got)
		}
	})

	t.Run("a tool error stays a tool result", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
		if err != nil {
			t.Fatalf("a tool error became a protocol error: %v", err)
		}
		if !res.IsError || text(res) != "it failed as asked" {
			t.Errorf("fail = %q isError=%v", text(res), res.IsError)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
		if err == nil || !strings.Contains(err.Error(), "Unknown tool: no_such_tool") {
			t.Errorf("calling an unknown tool: %v", err)
		}
	})

}

// The launch itself: exit codes, files, and refusing a second launch.
func TestLaunchContract(t *testing.T) {
	t.Run("invalid config writes nothing", func(t *testing.T) {
		for name, config := range map[string]string{
			"malformed JSON":   `{"memory": `,
			"unknown server":   `{"nosuch": {}}`,
			"missing property": `{"filesystem": {}}`,
			"bad env name":     `{"x": {"runCmd": "true", "envs": {"1BAD": "v"}}}`,
			"bad github key":   `{"github/only-owner": {"runCmd": "true"}}`,
		} {
			g := newGW(t)
			g.launch(config)
			if g.exit != 2 {
				t.Errorf("%s: exit %d, want 2; stderr %q", name, g.exit, g.stderr)
			}
			if !strings.Contains(g.stderr, "invalid configuration") {
				t.Errorf("%s: stderr %q does not say the configuration is invalid", name, g.stderr)
			}
			for _, f := range []string{g.tokenFile(), g.logFile(), g.pidFile()} {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("%s: %s was written", name, f)
				}
			}
		}
	})

	t.Run("a server that fails to start fails the launch with its name and stderr", func(t *testing.T) {
		g := newGW(t)
		g.launch(fmt.Sprintf(`{"good": {"runCmd": %q}, "broken": {"runCmd": %q}}`, testServerCmd(), "E2E_SERVER_MODE=stderr-then-exit "+testServerCmd()))
		if g.exit == 0 {
			g.stop()
			t.Fatal("launch succeeded with a broken server")
		}
		for _, want := range []string{`"broken"`, "fatal: cannot open the database"} {
			if !strings.Contains(g.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, g.stderr)
			}
		}
		for _, f := range []string{g.tokenFile(), g.pidFile()} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s left behind after a failed launch", f)
			}
		}
	})

	t.Run("a second launch is refused while one runs", func(t *testing.T) {
		g := newGW(t)
		config := fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd())
		g.mustLaunch(config)
		second := *g
		second.t = t
		second.pid = 0
		second.launch(config)
		if second.exit == 0 {
			t.Fatal("a second launch succeeded")
		}
		if want := fmt.Sprintf("already running (pid %d)", g.pid); !strings.Contains(second.stderr, want) {
			t.Errorf("stderr %q lacks %q", second.stderr, want)
		}
		pid, _ := os.ReadFile(g.pidFile())
		if strings.TrimSpace(string(pid)) != fmt.Sprint(g.pid) {
			t.Errorf("pid file holds %q, want %d", pid, g.pid)
		}
	})
}

// The catalog's uvx servers run the exact command of the contract.
func TestCatalogUVXCommands(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(`{"arxiv": {"storagePath": "/data/papers"}, "time": null, "fetch": {}, "duckduckgo": {}}`)
	lines := readLines(t, g.standIn)
	slices.Sort(lines)
	want := []string{
		"uvx arxiv-mcp-server --storage-path /data/papers",
		"uvx duckduckgo-mcp-server",
		"uvx mcp-server-fetch",
		"uvx mcp-server-time",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("uvx was run as\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// Authentication, the body limit and protocol-era answers, on raw HTTP.
func TestHTTPFront(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()))
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

	post := func(body string, header map[string]string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}

	for name, auth := range map[string]string{"missing": "", "wrong": "Bearer nope", "scheme-less": g.token, "basic": "Basic " + g.token} {
		h := map[string]string{}
		if auth != "" {
			h["Authorization"] = auth
		}
		resp, _ := post(initBody, h)
		want := `Bearer realm="mcp-gateway"`
		if name == "wrong" { // a bearer token presented, but not this gateway's
			want += `, error="invalid_token", error_description="the bearer token is not valid for this gateway"`
		}
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("%s token: status %d, WWW-Authenticate %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	auth := map[string]string{"Authorization": "Bearer " + g.token}
	resp, body := post(initBody, auth)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %d %q session %q", resp.StatusCode, body, sid)
	}
	withSession := map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}

	t.Run("notification is 202", func(t *testing.T) {
		resp, _ := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, withSession)
		if resp.StatusCode != 202 {
			t.Errorf("status %d, want 202", resp.StatusCode)
		}
	})
	t.Run("tools/list answers plain JSON", func(t *testing.T) {
		resp, body := post(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`, withSession)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"name":"echo"`) || !strings.HasPrefix(body, `{"jsonrpc":"2.0","id":"x","result":{"tools":[`) {
			t.Errorf("tools/list: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	})
	t.Run("unknown session is 404", func(t *testing.T) {
		h := map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Session-Id": "nope"}
		if resp, _ := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, h); resp.StatusCode != 404 {
			t.Errorf("status %d, want 404", resp.StatusCode)
		}
	})
	t.Run("no session is 400", func(t *testing.T) {
		if resp, _ := post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, auth); resp.StatusCode != 400 {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("a 2026-07-28 request is served without a session", func(t *testing.T) {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		h := map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
		resp, body := post(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{`+meta+`}}`, h)
		var msg struct {
			Result struct {
				ResultType        string          `json:"resultType"`
				SupportedVersions []string        `json:"supportedVersions"`
				Capabilities      json.RawMessage `json:"capabilities"`
				TTL               *int            `json:"ttlMs"`
				CacheScope        string          `json:"cacheScope"`
			} `json:"result"`
		}
		json.Unmarshal([]byte(body), &msg)
		if resp.StatusCode != 200 || msg.Result.ResultType != "complete" || msg.Result.TTL == nil || msg.Result.CacheScope != "private" ||
			!slices.Equal(msg.Result.SupportedVersions, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
			t.Errorf("server/discover: %d %s", resp.StatusCode, body)
		}
		h = map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
		resp, body = post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"modern"},`+meta+`}}`, h)
		if resp.StatusCode != 200 || !strings.Contains(body, `"text":"modern"`) || !strings.Contains(body, `"resultType":"complete"`) {
			t.Errorf("modern tools/call: %d %s", resp.StatusCode, body)
		}
		h["Mcp-Name"] = "other"
		resp, body = post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"modern"},`+meta+`}}`, h)
		if resp.StatusCode != 400 || !strings.Contains(body, "-32020") {
			t.Errorf("Mcp-Name not matching the body: %d %s, want 400 with -32020", resp.StatusCode, body)
		}
		h = map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}
		resp, body = post(`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}}}`, h)
		if resp.StatusCode != 400 || !strings.Contains(body, "-32022") || !strings.Contains(body, `"supported":["2026-07-28"`) {
			t.Errorf("unknown future version: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("unsupported version header is 400", func(t *testing.T) {
		h := map[string]string{"Authorization": "Bearer " + g.token, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "1999-01-01"}
		if resp, _ := post(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, h); resp.StatusCode != 400 {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	})
	t.Run("malformed body is 400 with a parse error", func(t *testing.T) {
		resp, body := post(`{"jsonrpc":`, withSession)
		if resp.StatusCode != 400 || !strings.Contains(body, "-32700") {
			t.Errorf("status %d body %s", resp.StatusCode, body)
		}
	})
	// Calls with a Content-Length, a chunked call, GET /health and calls
	// after them: one keep-alive connection carries all of them, pipelined,
	// and every answer is right.
	t.Run("one connection: calls, a chunked call, health, calls", func(t *testing.T) {
		c, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(g.url, "/mcp"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		host := strings.TrimPrefix(strings.TrimSuffix(g.url, "/mcp"), "http://")
		call := func(id int, text string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`, id, text)
		}
		head := "Host: " + host + "\r\nAuthorization: Bearer " + g.token + "\r\nMcp-Session-Id: " + sid +
			"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
		plain := func(id int, text string) string {
			b := call(id, text)
			return fmt.Sprintf("POST /mcp HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s", head, len(b), b)
		}
		chunked := func(id int, text string) string {
			b := call(id, text)
			return fmt.Sprintf("POST /mcp HTTP/1.1\r\n%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", head, len(b), b)
		}
		reqs := plain(11, "first") + plain(12, "second") + chunked(13, "chunked") +
			"GET /health HTTP/1.1\r\nHost: " + host + "\r\n\r\n" + plain(14, "after")
		if _, err := io.WriteString(c, reqs); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for _, want := range []string{`"id":11,"result":{"content":[{"type":"text","text":"first"}]`, `"text":"second"`, `"text":"chunked"`, `"status":"ok"`, `"text":"after"`} {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("waiting for the answer with %s: %v", want, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
				t.Errorf("status %d, body %s; want 200 with %s", resp.StatusCode, b, want)
			}
		}
	})
	t.Run("body over the limit is 413", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 9<<20) + `"}}}`
		if resp, _ := post(big, withSession); resp.StatusCode != 413 {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	})
	t.Run("DNS rebinding: a foreign Host on the loopback listener is 403", func(t *testing.T) {
		req, _ := http.NewRequest("POST", g.url, strings.NewReader(initBody))
		req.Host = "evil.example"
		req.Header.Set("Authorization", "Bearer "+g.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("status %d, want 403", resp.StatusCode)
		}
	})
	t.Run("DELETE ends the session", func(t *testing.T) {
		req, _ := http.NewRequest("DELETE", g.url, nil)
		for k, v := range withSession {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("DELETE status %d", resp.StatusCode)
		}
		if resp, _ := post(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, withSession); resp.StatusCode != 404 {
			t.Errorf("after DELETE: status %d, want 404", resp.StatusCode)
		}
	})
}
