package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

// serveControl serves a host's control API on its socket, as the daemon
// does, and returns a client of it.
func serveControl(t *testing.T, h *Host) *Client {
	t.Helper()
	ln, err := ListenControl(h.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.ControlHandler(), ConnContext: ControlConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return NewClient(h.opts.Dir)
}

// The CLI's commands through the control socket: each answers what the
// host's method returns, and a refusal comes back as an error carrying the
// host's message.
func TestControlAPI(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	c := serveControl(t, h)
	ctx := context.Background()

	if fi, err := os.Stat(filepath.Join(dir, SocketFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("control socket: %v %v", fi.Mode(), err)
	}
	var added AddResult
	if err := c.Do(ctx, "POST", "/v1/servers", localServer(t, "mem"), &added); err != nil {
		t.Fatal(err)
	}
	if added.Server.Name != "mem" || len(added.Server.Tools) != 3 {
		t.Errorf("server add: %+v", added.Server)
	}
	var servers []ServerSummary
	if err := c.Do(ctx, "GET", "/v1/servers", nil, &servers); err != nil || len(servers) != 1 || servers[0].Name != "mem" || servers[0].Tools != 3 {
		t.Errorf("server ls: %+v %v", servers, err)
	}
	var info ServerInfo
	if err := c.Do(ctx, "GET", "/v1/servers/mem", nil, &info); err != nil || info.Kind != "local" || info.Server == nil || info.Server.Name != "mem" {
		t.Errorf("server inspect: %+v %v", info, err)
	}
	var created SandboxCreated
	if err := c.Do(ctx, "POST", "/v1/sandboxes", SandboxRequest{Name: "s"}, &created); err != nil || created.Mode != "dynamic" || h.tenant(created.Token) == nil {
		t.Errorf("sandbox create: %+v %v", created, err)
	}
	var loaded LoadResult
	if err := c.Do(ctx, "POST", "/v1/sandboxes/s/servers/mem", nil, &loaded); err != nil || loaded.Server != "mem" || len(loaded.Tools) != 3 {
		t.Errorf("load: %+v %v", loaded, err)
	}
	var sandboxes []SandboxSummary
	if err := c.Do(ctx, "GET", "/v1/sandboxes", nil, &sandboxes); err != nil || len(sandboxes) != 1 || !slices.Equal(sandboxes[0].Servers, []string{"mem"}) {
		t.Errorf("sandbox ls: %+v %v", sandboxes, err)
	}
	var warned struct{ Warnings []string }
	if err := c.Do(ctx, "PUT", "/v1/secrets/mcp:mem:unused", map[string]string{"value": "v"}, &warned); err != nil || len(warned.Warnings) != 1 {
		t.Errorf("secret set: %+v %v", warned, err)
	}
	var entries []map[string]any
	if err := c.Do(ctx, "GET", "/v1/secrets", nil, &entries); err != nil || len(entries) != 1 || entries[0]["Name"] != "mcp:mem:unused" {
		t.Errorf("secret ls: %+v %v", entries, err)
	}
	if _, ok := entries[0]["Value"]; ok {
		t.Errorf("secret ls shows a value: %+v", entries[0])
	}

	for _, tt := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/v1/servers", localServer(t, "mem"), `mcp server "mem" is already registered (` + localServer(t, "mem").Command + `); remove it first, or pass --replace`},
		{"POST", "/v1/servers", map[string]any{"name": "x", "bogus": 1}, `malformed request: json: unknown field "bogus"`},
		{"POST", "/v1/sandboxes", SandboxRequest{Name: "s"}, "sandbox \"s\" already exists; remove it first with `mcp-gateway sandbox rm s`"},
		{"POST", "/v1/sandboxes/s/servers/mem", nil, `mcp server "mem" is already loaded in sandbox "s"`},
		{"DELETE", "/v1/sandboxes/s/servers/nope", nil, `mcp server "nope" is not loaded in sandbox "s" (it has: mem)`},
		{"DELETE", "/v1/sandboxes/nope", nil, `sandbox "nope" does not exist (sandboxes: s)`},
		{"DELETE", "/v1/servers/nope", nil, `mcp server "nope" is not registered (registered: mem)`},
		{"GET", "/v1/servers/nope", nil, `mcp server "nope" is not registered (registered: mem)`},
		{"DELETE", "/v1/secrets/mcp:mem:nope", nil, `secret mcp:mem:nope: not set`},
		{"GET", "/v1/nothing", nil, `the host answered 404 Not Found`},
	} {
		err := c.Do(ctx, tt.method, tt.path, tt.body, nil)
		wantErr(t, tt.method+" "+tt.path, err, tt.want)
	}

	for _, step := range []struct{ method, path string }{
		{"DELETE", "/v1/sandboxes/s/servers/mem"},
		{"DELETE", "/v1/secrets/mcp:mem:unused"},
		{"DELETE", "/v1/sandboxes/s"},
	} {
		if err := c.Do(ctx, step.method, step.path, nil, nil); err != nil {
			t.Errorf("%s %s: %v", step.method, step.path, err)
		}
	}
	var removed RemoveResult
	if err := c.Do(ctx, "DELETE", "/v1/servers/mem", nil, &removed); err != nil || len(removed.DetachedFrom) != 0 {
		t.Errorf("server rm: %+v %v", removed, err)
	}
	if st := loadState(t, h); len(st.Servers) != 0 || len(st.Sandboxes) != 0 {
		t.Errorf("state after removing everything: %+v", st)
	}
}

// A second daemon on the same directory cannot take the control socket; a
// stale socket file (a crash) is replaced.
func TestListenControl(t *testing.T) {
	dir := t.TempDir()
	ln, err := ListenControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	go func(ln net.Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}(ln)
	path := filepath.Join(dir, SocketFile)
	_, err = ListenControl(dir)
	wantErr(t, "second listener", err, "control socket "+path+" is in use: another mcp-gateway host is running")
	ln.Close()

	if err := os.WriteFile(path, nil, 0o600); err != nil { // a stale file in its place
		t.Fatal(err)
	}
	ln, err = ListenControl(dir)
	if err != nil {
		t.Fatalf("over a stale socket file: %v", err)
	}
	ln.Close()
}

// A command with no host running says so, naming the socket and what to do.
func TestClientNotRunning(t *testing.T) {
	dir := t.TempDir()
	err := NewClient(dir).Do(context.Background(), "GET", "/v1/servers", nil, nil)
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("got %v, want ErrNotRunning", err)
	}
	want := "mcp-gateway host is not running (no control socket answers at " + filepath.Join(dir, SocketFile) + "): start it with `mcp-gateway host`, or pass the --state-dir it uses"
	if err.Error() != want {
		t.Errorf("\n got  %q\n want %q", err.Error(), want)
	}
}

// While a daemon holds the state directory's lock but has not opened its
// socket yet (its servers are starting), a command waits for it, and says
// so when it gives up.
func TestClientWaitsForAStartingHost(t *testing.T) {
	dir := t.TempDir()
	store, err := registry.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = NewClient(dir).Do(ctx, "GET", "/v1/servers", nil, nil)
	want := fmt.Sprintf("mcp-gateway host (pid %d) holds %s but its control socket did not open: context deadline exceeded", os.Getpid(), dir)
	if err == nil || err.Error() != want {
		t.Errorf("\n got  %v\n want %q", err, want)
	}
}

// The host's HTTP handler: a sandbox's token reaches its gateway, any other
// is refused with 401; /health lists the sandboxes without error text.
func TestHandler(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	sb := mustSandbox(t, h, "s", "mem")
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	post := func(token string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(sb.Token); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize with the sandbox's token: %s, session %q", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize with a wrong token: %s", resp.Status)
	}
	health := func(token string) string {
		req, _ := http.NewRequest("GET", srv.URL+"/health", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	// Without a sandbox's token, /health says only that the host is up.
	for _, token := range []string{"", "wrong"} {
		if got := strings.TrimSpace(health(token)); got != `{"status":"ok"}` {
			t.Errorf("/health with token %q: %s; want only {\"status\":\"ok\"}", token, got)
		}
	}
	var doc struct {
		Status    string
		Sandboxes map[string]SandboxHealth
	}
	if err := json.Unmarshal([]byte(health(sb.Token)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Status != "ok" || doc.Sandboxes["s"].Upstreams["mem"] != (ServerHealth{State: "ready", Tools: 3}) || doc.Sandboxes["s"].Tools != 4 {
		t.Errorf("/health with the sandbox's token: %+v", doc)
	}
}
