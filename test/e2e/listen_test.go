package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernRemote is a remote MCP server of the Go SDK, over HTTP in the
// SDK's stateless mode (the conformance fixture's): a 2026-07-28 server,
// and a session-era one too unless modernOnly. It records the method of
// every POST it gets, in order.
type modernRemote struct {
	server *mcp.Server
	url    string
	mu     sync.Mutex
	posts  []string
}

func startModernRemote(t *testing.T, modernOnly bool) *modernRemote {
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
	m.server.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://doc", Text: "doc"}}}, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.server }, &mcp.StreamableHTTPOptions{Stateless: true})
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
