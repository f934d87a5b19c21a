package host

// The host's unit tests run real servers: the test binary re-executes itself
// as a stdio MCP server built with the official Go SDK (testServerEnv set),
// so a sandbox's instance is a real process speaking MCP, with tools that
// show what the host configured (its environment, arguments, directory).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerEnv makes the test binary a stdio MCP server. Its value is the
// mode: "ok" serves the tools below; "fail" writes to stderr and exits 3.
const testServerEnv = "HOST_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(testServerEnv); ok {
		runTestServer(mode)
		return
	}
	os.Exit(m.Run())
}

type textArgs struct {
	Text string `json:"text"`
}

type nameArgs struct {
	Name string `json:"name"`
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// testServer is the MCP server of the test binary's server mode; the same
// server is served over streamable HTTP by remoteServer.
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "host-test-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text.\nSecond line."},
		func(ctx context.Context, req *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return textResult(a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns an environment variable of the server process."},
		func(ctx context.Context, req *mcp.CallToolRequest, a nameArgs) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(a.Name)
			return textResult(fmt.Sprintf("%v:%s", ok, v)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "args", Description: "Returns the server's arguments and working directory."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return textResult(strings.Join(os.Args[1:], " ") + "|" + wd), nil, nil
		})
	return s
}

func runTestServer(mode string) {
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "fatal: cannot open the database")
		os.Exit(3)
	}
	if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}

// testTools are the test server's tools, in the order tools/list gives them.
var testTools = []string{"args", "echo", "env"}

// localServer is a registration of the test server as a local one.
func localServer(t *testing.T, name string, env ...string) ServerRequest {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerRequest{Name: name, Command: exe, Env: append([]string{testServerEnv + "=ok"}, env...)}
}

// remoteServer serves the test server over streamable HTTP on loopback,
// answering 401 unless the request carries wantAuth (when not "").
func remoteServer(t *testing.T, wantAuth string) string {
	t.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return testServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantAuth != "" && r.Header.Get("Authorization") != wantAuth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// Its streams end before it closes (a host still open holds some).
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/mcp"
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openHost opens a host on dir (its state directory); it is closed at the
// end of the test unless the test closes it first (closeHost).
func openHost(t *testing.T, dir string) *Host {
	t.Helper()
	h, err := Open(context.Background(), Options{
		Dir:          dir,
		URL:          "http://127.0.0.1:8811/mcp",
		Attach:       attach.Options{Logger: quietLogger(), ServerLog: io.Discard, Guard: &netguard.Policy{AllowAll: true}},
		Info:         gateway.Info{Name: "mcp-gateway", Version: "test"},
		StartTimeout: 20 * time.Second,
		Router:       gateway.RouterOptions{RetryMin: time.Hour, RetryMax: time.Hour},
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// closeHost closes a host in the middle of a test, and checks that closing
// it again (as the cleanup does) answers the same.
func closeHost(t *testing.T, h *Host) {
	t.Helper()
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

func mustAdd(t *testing.T, h *Host, req ServerRequest) *AddResult {
	t.Helper()
	res, err := h.AddServer(context.Background(), req)
	if err != nil {
		t.Fatalf("AddServer %s: %v", req.Name, err)
	}
	return res
}

func mustSandbox(t *testing.T, h *Host, name string, static ...string) *SandboxCreated {
	t.Helper()
	res, err := h.CreateSandbox(context.Background(), SandboxRequest{Name: name, Static: static})
	if err != nil {
		t.Fatalf("CreateSandbox %s: %v", name, err)
	}
	return res
}

// client is one MCP client session of a sandbox, reached by its token as
// the front reaches it.
type client struct {
	t    *testing.T
	sess *gateway.Session
	id   int
}

type nopStream struct{}

func (nopStream) Send([]byte) error { return nil }

func connect(t *testing.T, h *Host, token string) *client {
	t.Helper()
	gw := h.tenant(token)
	if gw == nil {
		t.Fatalf("token %.8s… reaches no sandbox", token)
	}
	sess, _, werr := gw.Initialize(json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`))
	if werr != nil {
		t.Fatalf("initialize: %v", werr)
	}
	t.Cleanup(sess.Close)
	return &client{t: t, sess: sess}
}

func (c *client) request(method string, params any) gateway.Reply {
	c.t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	c.id++
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.sess.Handle(ctx, &wire.Message{ID: json.RawMessage(fmt.Sprint(c.id)), Method: method, Params: raw}, nopStream{})
}

// tools is the session's tools/list, names only, in order.
func (c *client) tools() []string {
	c.t.Helper()
	r := c.request("tools/list", map[string]any{})
	if r.Error != nil {
		c.t.Fatalf("tools/list: %s", r.Error)
	}
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names
}

// toolResult is a CallToolResult as the tests read it.
type toolResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// call calls a tool and returns its result (a JSON-RPC error fails the test).
func (c *client) call(name string, args any) toolResult {
	c.t.Helper()
	r := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	if r.Error != nil {
		c.t.Fatalf("tools/call %s: JSON-RPC error %s", name, r.Error)
	}
	var res toolResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		c.t.Fatalf("tools/call %s: %v: %s", name, err, r.Result)
	}
	return res
}

// callOK calls a tool that must succeed and returns its text.
func (c *client) callOK(name string, args any) string {
	c.t.Helper()
	res := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("tools/call %s %v: tool error %q", name, args, res.text())
	}
	return res.text()
}

// callErr calls a tool that must fail and returns its error text.
func (c *client) callErr(name string, args any) string {
	c.t.Helper()
	res := c.call(name, args)
	if !res.IsError {
		c.t.Fatalf("tools/call %s %v succeeded with %q, want a tool error", name, args, res.text())
	}
	return res.text()
}

func sameList(got, want []string) bool {
	return slices.Equal(got, want) || len(got) == 0 && len(want) == 0
}

// wantErr checks an error's exact message.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %q", what, want)
		return
	}
	if err.Error() != want {
		t.Errorf("%s:\n got  %q\n want %q", what, err.Error(), want)
	}
}
