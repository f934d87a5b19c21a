package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerEnv makes the test binary a stdio MCP server (built with the
// official Go SDK) whose tools show the environment it was given.
const testServerEnv = "ATTACH_TEST_SERVER"

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(testServerEnv); ok {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Print(err)
		}
		return
	}
	os.Exit(m.Run())
}

type nameArgs struct {
	Name string `json:"name"`
}

func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "attach-test-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns an environment variable."},
		func(ctx context.Context, req *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(a.Name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v:%s", ok, v)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its name."},
		func(ctx context.Context, req *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Name}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "args", Description: "Returns the arguments."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Args[1:], " ")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
		})
	return s
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func testOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ServerLog: io.Discard, Guard: &netguard.Policy{AllowAll: true}}
}

// newGateway adds one server to a new gateway, starts it, and returns a
// client session of it.
func newGateway(t *testing.T, s mcpconfig.Server, lookup func(string) (string, bool), o Options) (*gateway.Gateway, error) {
	t.Helper()
	gw := gateway.New(gateway.NewRouter(gateway.RouterOptions{Logger: o.Logger, RetryMin: time.Hour, RetryMax: time.Hour}), gateway.Info{Name: "t", Version: "1"})
	t.Cleanup(func() { gw.Close(); gw.Router.Close() })
	Add(gw, s, lookup, o)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return gw, gw.Router.StartServer(ctx, s.Name)
}

type nopStream struct{}

func (nopStream) Send([]byte) error { return nil }

// callTool calls a tool through a new session of gw and returns its text.
func callTool(t *testing.T, gw *gateway.Gateway, name string, args any) string {
	t.Helper()
	sess, _, werr := gw.Initialize(json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`))
	if werr != nil {
		t.Fatal(werr)
	}
	defer sess.Close()
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := sess.Handle(ctx, &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: params}, nopStream{})
	if r.Error != nil {
		t.Fatalf("%s: %s", name, r.Error)
	}
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("%s: %s", name, r.Result)
	}
	return res.Content[0].Text
}

// A local server's process gets the base environment overlaid with its own
// env, and its arguments as given, with or without a shell in between.
func TestAddLocal(t *testing.T) {
	exe := testExe(t)
	o := testOptions()
	o.Env = []string{"BASE=1", "OVERRIDE=base"}
	tests := []struct {
		name    string
		command []string
		env     map[string]string
	}{
		{"direct", []string{exe, "a", "b c"}, nil},
		{"through sh -c, run directly", []string{"/bin/sh", "-c", "exec " + exe + " a 'b c'"}, nil},
		{"through sh -c, expanded by the shell", []string{"/bin/sh", "-c", `exec "$EXE" a 'b c'`}, map[string]string{"EXE": exe}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{testServerEnv: "1", "OVERRIDE": "server"}
			for k, v := range tt.env {
				env[k] = v
			}
			gw, err := newGateway(t, mcpconfig.Server{Name: "loc", Kind: mcpconfig.KindLocal, Command: tt.command, Env: env}, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"BASE": "true:1", "OVERRIDE": "true:server", "HOME": "false:"} {
				if got := callTool(t, gw, "env", nameArgs{name}); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if got := callTool(t, gw, "args", struct{}{}); got != "a b c" {
				t.Errorf("args %q", got)
			}
		})
	}
}

// A local server that speaks both eras (a Go SDK server) is one process for
// the clients of both: a 2026-07-28 client's call reaches the process a
// session-era client's call does.
func TestAddLocalOneProcessForBothEras(t *testing.T) {
	gw, err := newGateway(t, mcpconfig.Server{Name: "dual", Kind: mcpconfig.KindLocal, Command: []string{testExe(t)}, Env: map[string]string{testServerEnv: "1"}}, nil, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	session := callTool(t, gw, "pid", struct{}{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	params := `{"name":"pid","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`
	r := gw.HandleStateless(ctx, &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}, nopStream{})
	if r.Error != nil {
		t.Fatalf("the 2026-07-28 call: %s", r.Error)
	}
	var res struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("the 2026-07-28 call: %s", r.Result)
	}
	if res.Content[0].Text != session {
		t.Errorf("a 2026-07-28 call reached pid %s, a session-era call pid %s: want one process", res.Content[0].Text, session)
	}
}

// A per-client server's process has a directory of its own, in its
// environment and in place of ${MCP_GATEWAY_CLIENT_DIR}; it is removed
// with the process. Before it starts, a call says the server is not running.
func TestClientStdio(t *testing.T) {
	s := mcpconfig.Server{Name: "pc", Kind: mcpconfig.KindLocal, Command: []string{testExe(t)}, Share: mcpconfig.SharePerClient,
		Env: map[string]string{testServerEnv: "1", "DATA": "${MCP_GATEWAY_CLIENT_DIR}/graph.jsonl"}}
	ctx := context.Background()
	u := newClientStdio(s, testOptions(), gateway.Hooks{}, SharedClientCapabilities)
	if u.Name() != "pc" || u.InitializeResult() != nil || u.Generation() != 0 {
		t.Errorf("before start: %q %s %d", u.Name(), u.InitializeResult(), u.Generation())
	}
	_, err := u.Call(ctx, "tools/list", nil)
	if !errors.Is(err, upstream.ErrNotRunning) || err.Error() != `mcp server "pc": mcp server is not running` {
		t.Errorf("call before start: %v", err)
	}
	if err := u.Start(ctx); err != nil {
		t.Fatal(err)
	}
	dir := u.(*clientStdio).dir
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("the client's directory %q: %v", dir, err)
	}
	resp, err := u.Call(ctx, "tools/call", json.RawMessage(`{"name":"env","arguments":{"name":"DATA"}}`))
	if err != nil || !strings.Contains(string(resp.Result), `"true:`+dir+`/graph.jsonl"`) {
		t.Errorf("DATA in the process: %s %v", resp.Result, err)
	}
	if u.InitializeResult() == nil || u.Generation() == 0 {
		t.Error("a started process has no initialize result or generation")
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the client's directory after Close: %v", err)
	}
}

// Through the router, each session of a per-client server gets its own
// process and directory, removed when the session ends.
func TestAddPerClient(t *testing.T) {
	s := mcpconfig.Server{Name: "pc", Kind: mcpconfig.KindLocal, Command: []string{testExe(t)}, Share: mcpconfig.SharePerClient,
		Env: map[string]string{testServerEnv: "1"}}
	gw, err := newGateway(t, s, nil, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	a, b := callTool(t, gw, "env", nameArgs{ClientDirEnv}), callTool(t, gw, "env", nameArgs{ClientDirEnv})
	if !strings.HasPrefix(a, "true:") || !strings.HasPrefix(b, "true:") || a == b {
		t.Errorf("two clients' directories: %q and %q", a, b)
	}
	// callTool's session has ended: its process was closed, and its
	// directory removed with it.
	for _, dir := range []string{strings.TrimPrefix(a, "true:"), strings.TrimPrefix(b, "true:")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the directory %q of an ended session: %v, want it removed", dir, err)
		}
	}
}

// A remote server's headers are resolved by lookup when it connects; a
// missing one fails that server, naming the placeholder and not a value.
func TestAddRemote(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// Its streams end before it closes (the gateways close after it).
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	spec := mcpconfig.Server{Name: "rem", Kind: mcpconfig.KindRemote, URL: srv.URL + "/mcp", Transport: "http", Headers: map[string]string{"Authorization": "Bearer ${token}"}}
	secrets := map[string]string{"token": "s3cret"}
	lookup := func(k string) (string, bool) { v, ok := secrets[k]; return v, ok }

	gw, err := newGateway(t, spec, lookup, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := callTool(t, gw, "echo", nameArgs{"through the header"}); got != "through the header" {
		t.Errorf("a call through the remote server: %q", got)
	}

	delete(secrets, "token")
	_, err = newGateway(t, spec, lookup, testOptions())
	if err == nil || !strings.Contains(err.Error(), `mcp server "rem": header "Authorization" needs ${token}, which is not set`) {
		t.Errorf("without the secret: %v", err)
	}
	secrets["token"] = "wrong"
	_, err = newGateway(t, spec, lookup, testOptions())
	if err == nil || !strings.Contains(err.Error(), `mcp server "rem" refused the credentials (HTTP 401); check its headers`) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("with a refused secret: %v", err)
	}
}

// A remote upstream before its start, and after Close.
func TestRemoteUpstreamStates(t *testing.T) {
	u := &remoteUpstream{swappable: swappable{name: "rem"}, spec: mcpconfig.Server{Name: "rem", URL: "http://127.0.0.1:1/mcp"}}
	ctx := context.Background()
	if _, err := u.Call(ctx, "tools/list", nil); err == nil || err.Error() != `mcp server "rem": mcp server is not running` {
		t.Errorf("call before start: %v", err)
	}
	if err := u.Notify(ctx, "notifications/x", nil); err == nil || err.Error() != `mcp server "rem": mcp server is not running` {
		t.Errorf("notify before start: %v", err)
	}
	if u.InitializeResult() != nil || u.Generation() != 0 || u.Name() != "rem" {
		t.Errorf("before start: %s %d %q", u.InitializeResult(), u.Generation(), u.Name())
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if err := u.Start(ctx); !errors.Is(err, upstream.ErrClosed) || err.Error() != `mcp server "rem": upstream closed` {
		t.Errorf("start after close: %v", err)
	}
}

func TestMergeEnv(t *testing.T) {
	tests := []struct {
		base  []string
		extra map[string]string
		want  []string
	}{
		{[]string{"A=1"}, nil, []string{"A=1"}},
		{nil, map[string]string{"B": "2", "A": "1"}, []string{"A=1", "B=2"}},
		{[]string{"PATH=/bin", "A=base", "C=3"}, map[string]string{"A": "server", "B": ""}, []string{"PATH=/bin", "C=3", "A=server", "B="}},
	}
	for _, tt := range tests {
		if got := MergeEnv(tt.base, tt.extra); !slices.Equal(got, tt.want) {
			t.Errorf("MergeEnv(%q, %v) = %q, want %q", tt.base, tt.extra, got, tt.want)
		}
	}
}
