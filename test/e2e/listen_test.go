package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/test/nginx"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernRemote is a remote MCP server of the Go SDK, over HTTP in the
// SDK's stateless mode (the conformance fixture's; stateful: its session
// mode, which keeps a session-era client's initialize): a 2026-07-28
// server, and a session-era one too unless modernOnly. It records the
// method of every POST it gets, in order.
type modernRemote struct {
	server *mcp.Server
	url    string
	mu     sync.Mutex
	posts  []string
}

func startModernRemote(t *testing.T, modernOnly bool, stateful ...bool) *modernRemote {
	t.Helper()
	opts := &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	if modernOnly {
		opts.SupportedProtocolVersions = []string{modernEra}
	}
	m := &modernRemote{server: mcp.NewServer(&mcp.Implementation{Name: "modern-remote", Version: "1"}, opts)}
	mcp.AddTool(m.server, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(m.server, &mcp.Tool{Name: "seen_caps", Description: "Returns the client capabilities the server saw for this call."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			caps := req.Params.Meta["io.modelcontextprotocol/clientCapabilities"] // a 2026-07-28 request's
			if ip := req.Session.InitializeParams(); caps == nil && ip != nil {
				caps = ip.Capabilities // a session's
			}
			b, _ := json.Marshal(caps)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	m.server.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://doc", Text: "doc"}}}, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, &mcp.StreamableHTTPOptions{Stateless: len(stateful) == 0 || !stateful[0]})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			m.mu.Lock()
			m.posts = append(m.posts, r.Header.Get("Mcp-Method"))
			m.mu.Unlock()
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m.url = srv.URL + "/mcp"
	return m
}

func (m *modernRemote) methods() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.posts)
}

// addTool makes the server's tool list grow by one tool answering its name.
func (m *modernRemote) addTool(name string) {
	mcp.AddTool(m.server, &mcp.Tool{Name: name, Description: "Added while the gateway runs."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " answers"}}}, nil, nil
		})
}

// TestListenRemoteStateless: a remote server that speaks only 2026-07-28
// grows its tool list and updates a resource; the gateway hears both on its
// subscriptions/listen stream to the server and tells its clients of both
// eras, which then list and call the new tool.
func TestListenRemoteStateless(t *testing.T) {
	remote := startModernRemote(t, true)
	g := startServe(t, fmt.Sprintf(`{"modern": {"url": %q}}`, remote.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	session, sessionChanged := g.connectNamed(ctx, sessionEra, "Sam")
	stateless, statelessChanged := g.connectNamed(ctx, "", "Sky")
	for who, cs := range map[string]*mcp.ClientSession{"the 2025-11-25 client": session, "the 2026-07-28 client": stateless} {
		if got := callAs(ctx, t, who, cs, "echo", map[string]any{"text": "hi"}); got != "hi" {
			t.Fatalf("%s: echo answered %q", who, got)
		}
	}
	if !slices.Contains(remote.methods(), "subscriptions/listen") {
		t.Fatalf("the gateway opened no subscriptions/listen stream to the server; it got %v\nlog:\n%s", remote.methods(), g.serveLog())
	}

	drain(sessionChanged)
	drain(statelessChanged)
	remote.addTool("grown")
	waitListed(ctx, t, session, sessionChanged, "grown")
	waitListed(ctx, t, stateless, statelessChanged, "grown")
	for who, cs := range map[string]*mcp.ClientSession{"the 2025-11-25 client": session, "the 2026-07-28 client": stateless} {
		if got := callAs(ctx, t, who, cs, "grown", nil); got != "grown answers" {
			t.Errorf("%s: the added tool answered %q", who, got)
		}
	}

	// A resource update reaches a subscribed session-era client.
	updated := make(chan string, 4)
	rclient := mcp.NewClient(&mcp.Implementation{Name: "e2e-sub", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	sub, err := rclient.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: sessionEra})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := sub.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
		t.Fatalf("resources/subscribe through the gateway: %v\nlog:\n%s", err, g.serveLog())
	}
	if err := remote.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "test://doc" {
			t.Errorf("update of %q, want test://doc", uri)
		}
	case <-ctx.Done():
		t.Fatalf("the resource update never reached the subscribed client\nlog:\n%s", g.serveLog())
	}
}

// TestListenDiscoverFirstDefault: a remote server that speaks both eras is
// spoken to in 2026-07-28 by default (its first request is server/discover,
// no initialize), so its list changes reach the gateway's clients on the
// gateway's subscriptions/listen stream; with "discoverFirst": false it is
// spoken to in the session era (where this server, in the SDK's stateless
// mode, offers no stream between calls, so only calls are checked).
func TestListenDiscoverFirstDefault(t *testing.T) {
	for _, c := range []struct {
		name, prop string
		first      string
	}{
		{"default", "", "server/discover"},
		{"discoverFirst false", `, "discoverFirst": false`, "initialize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			remote := startModernRemote(t, false)
			g := startServe(t, fmt.Sprintf(`{"dual": {"url": %q%s}}`, remote.url, c.prop))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cs, changed := g.connectNamed(ctx, sessionEra, "Sam")
			if got := callAs(ctx, t, "the client", cs, "echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Fatalf("echo answered %q", got)
			}
			methods := remote.methods()
			if len(methods) == 0 || methods[0] != c.first {
				t.Fatalf("the server's first request was not %s: %v", c.first, methods)
			}
			if c.first == "server/discover" && slices.Contains(methods, "initialize") {
				t.Errorf("the gateway initialized a session with a server of the 2026-07-28 era: %v", methods)
			}
			if c.first == "initialize" {
				return
			}
			drain(changed)
			remote.addTool("grown")
			waitListed(ctx, t, cs, changed, "grown")
		})
	}
}

type failListsArgs struct {
	Count int `json:"count"`
}

// addFailLists gives the state server fail_lists: its next count tools/list
// requests fail, as those of a server too busy to answer in time would.
func addFailLists(s *mcp.Server) {
	var failing atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "fail_lists", Description: "Fails the next count tools/list requests."},
		func(_ context.Context, _ *mcp.CallToolRequest, a failListsArgs) (*mcp.CallToolResult, any, error) {
			failing.Store(int64(a.Count))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("failing %d", a.Count)}}}, nil, nil
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && failing.Add(-1) >= 0 {
				return nil, errors.New("too busy to list tools")
			}
			return next(ctx, method, req)
		}
	})
}

// TestListenLongRunning: on a gateway that has been running a while (many
// clients of both eras have come, listed, called and gone, the server's
// list has been re-fetched, and once failed to be), a 2026-07-28 client's
// subscriptions/listen stream, and a session-era client's GET stream, still
// get the tools/list_changed of a dual-era stdio server's tools changing,
// each time: a re-listing that fails is tried again, not given up until the
// server's next change.
func TestListenLongRunning(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	stateless, statelessChanged := g.connectNamed(ctx, "", "Listener")
	session, sessionChanged := g.connectNamed(ctx, sessionEra, "Sessioner")

	for round := range 3 {
		for i := range 12 {
			era := sessionEra
			if i%2 == 0 {
				era = ""
			}
			cs, changed := g.connectNamed(ctx, era, fmt.Sprintf("passer-%d-%d", round, i))
			toolNames(ctx, t, cs)
			callAs(ctx, t, "a passing client", cs, "pid", nil)
			if i%4 == 0 {
				// A passing client grows the list, and hears it.
				name := fmt.Sprintf("passing_%d_%d", round, i)
				callAs(ctx, t, "a passing client", cs, "grow", map[string]any{"name": name})
				waitListed(ctx, t, cs, changed, name)
			}
			cs.Close()
		}
		name := fmt.Sprintf("late_%d", round)
		drain(statelessChanged)
		drain(sessionChanged)
		if round > 0 {
			callAs(ctx, t, "the session-era client", session, "fail_lists", map[string]any{"count": round})
		}
		callAs(ctx, t, "the session-era client", session, "grow", map[string]any{"name": name})
		for who, c := range map[string]struct {
			cs      *mcp.ClientSession
			changed <-chan struct{}
		}{"the 2026-07-28 client": {stateless, statelessChanged}, "the 2025-11-25 client": {session, sessionChanged}} {
			select {
			case <-c.changed:
			case <-ctx.Done():
				t.Fatalf("round %d: %s got no tools/list_changed for %s\nlog:\n%s", round, who, name, g.serveLog())
			}
			waitListed(ctx, t, c.cs, c.changed, name)
		}
	}
}

// TestListenRemoteExtensions: the extensions a client declares, known to
// the gateway or not, reach a remote server unchanged: on each 2026-07-28
// request to a server of that era, in the session a session-era client gets
// of it, in the session-era client's own session of a server spoken to in
// the session era, and in the session made for a 2026-07-28 client's
// declared capabilities of that server.
func TestListenRemoteExtensions(t *testing.T) {
	const exts = `{"io.example/client-ext":{"version":2},"io.unknown/x":{"deep":[1,{"a":null}],"s":"caf\u00e9"}}`
	var declared map[string]any
	if err := json.Unmarshal([]byte(exts), &declared); err != nil {
		t.Fatal(err)
	}
	modern := startModernRemote(t, true)
	dual := startModernRemote(t, false, true)
	g := startServe(t, fmt.Sprintf(`{"modern": {"url": %q}, "dual": {"url": %q, "discoverFirst": false}}`, modern.url, dual.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wantIn := func(who, seen string) {
		t.Helper()
		var caps struct {
			Extensions json.RawMessage `json:"extensions"`
		}
		if err := json.Unmarshal([]byte(seen), &caps); err != nil {
			t.Fatalf("%s: the server saw capabilities %q: %v", who, seen, err)
		}
		var got any
		_ = json.Unmarshal(caps.Extensions, &got)
		if g, _ := json.Marshal(got); string(g) != mustJSON(declared) {
			t.Errorf("%s: the server saw extensions %s, want %s", who, caps.Extensions, mustJSON(declared))
		}
	}

	// A 2026-07-28 client, to the 2026-07-28 server.
	status, out := postModernAs(ctx, t, g.gw, map[string]any{"extensions": declared}, "tools/call", "modern_seen_caps", 1, map[string]any{"name": "modern_seen_caps", "arguments": map[string]any{}})
	if status != http.StatusOK || out["result"] == nil {
		t.Fatalf("2026-07-28 seen_caps: status %d: %v\nlog:\n%s", status, out, g.serveLog())
	}
	wantIn("a 2026-07-28 client's request", resultText(t, out["result"]))
	status, out = postModernAs(ctx, t, g.gw, map[string]any{"extensions": declared}, "tools/call", "seen_caps", 2, map[string]any{"name": "seen_caps", "arguments": map[string]any{}})
	if status != http.StatusOK || out["result"] == nil {
		t.Fatalf("2026-07-28 seen_caps of the session-era server: status %d: %v\nlog:\n%s", status, out, g.serveLog())
	}
	wantIn("a 2026-07-28 client's call to the session-era server", resultText(t, out["result"]))

	// A session-era client, to both servers (each has its own seen_caps:
	// dual's keeps the name, sorted first; modern's is prefixed).
	c := newTaskClient(t, g.gw, `{"extensions":`+exts+`}`, func(m string, _ json.RawMessage) (any, error) { return map[string]any{}, nil })
	for who, tool := range map[string]string{"the 2026-07-28 server, for a session-era client": "modern_seen_caps", "the session-era server's session of the client": "seen_caps"} {
		wantIn(who, resultText(t, c.ok("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// resultText is the text content of a raw tools/call result.
func resultText(t *testing.T, result any) string {
	t.Helper()
	m, _ := result.(map[string]any)
	content, _ := m["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if cm, ok := c.(map[string]any); ok {
			s, _ := cm["text"].(string)
			b.WriteString(s)
		}
	}
	if b.Len() == 0 {
		t.Fatalf("no text in the result %v", result)
	}
	return b.String()
}

// TestListenBehindProxyReadTimeout: behind nginx with a read timeout
// shorter than the clients' idle time (platforms keep nginx's 60 s
// default), a 2026-07-28 client's subscriptions/listen stream and a
// session-era client's GET stream stay open, kept alive by the gateway's
// comments (--stream-keepalive), and carry the tools/list_changed that
// comes after a long silence.
func TestListenBehindProxyReadTimeout(t *testing.T) {
	const readTimeout = 2 * time.Second
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()), "--stream-keepalive", (readTimeout / 4).String())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := nginx.Start(ctx, nginx.Config{
		Upstream: g.port,
		Location: append(slices.DeleteFunc(slices.Clone(nginx.Streaming), func(d string) bool { return strings.HasPrefix(d, "proxy_read_timeout") }),
			"proxy_read_timeout "+readTimeout.String()),
		AsRoot: os.Geteuid() == 0,
		Dir:    t.TempDir(),
		Bin:    nginxBinary(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	proxied := *g.gw
	proxied.t = t
	proxied.url = p.URL + "/mcp"
	stateless, statelessChanged := proxied.connectNamed(ctx, "", "Listener")
	session, sessionChanged := proxied.connectNamed(ctx, sessionEra, "Sessioner")
	toolNames(ctx, t, stateless)
	toolNames(ctx, t, session)

	// Idle for three of the proxy's read timeouts: what the scenario is
	// about, not a wait for something to happen.
	time.Sleep(3 * readTimeout)
	direct, _ := g.connectNamed(ctx, sessionEra, "Grower")
	callAs(ctx, t, "the growing client", direct, "grow", map[string]any{"name": "after_silence"})
	for who, c := range map[string]struct {
		cs      *mcp.ClientSession
		changed <-chan struct{}
	}{"the 2026-07-28 client": {stateless, statelessChanged}, "the 2025-11-25 client": {session, sessionChanged}} {
		select {
		case <-c.changed:
		case <-ctx.Done():
			t.Fatalf("%s, behind nginx, got no tools/list_changed after %s of silence\nnginx:\n%s\nlog:\n%s", who, 3*readTimeout, p.Output(), g.serveLog())
		}
		waitListed(ctx, t, c.cs, c.changed, "after_silence")
	}
}
