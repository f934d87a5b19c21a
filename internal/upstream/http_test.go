package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The remote upstream against the official Go SDK's own servers, in
// process: streamable HTTP answering with event streams (the SDK's default)
// or with plain JSON, and the legacy HTTP+SSE transport.

const (
	modeStream = "streamable"      // streamable HTTP, responses as event streams
	modeJSON   = "streamable-json" // streamable HTTP, responses as application/json
	modeSSE    = "sse"             // the legacy HTTP+SSE transport
)

var allModes = []string{modeStream, modeJSON, modeSSE}

// seenRequest is one HTTP request the test server received.
type seenRequest struct {
	method string
	header http.Header
}

// sdkServer is an MCP server built with the Go SDK behind httptest, with a
// middleware that records every request and can refuse them.
type sdkServer struct {
	server *mcp.Server
	url    string

	refuse    atomic.Int32  // when set, answer every request with this status
	cancelled chan string   // the slow tool's handler reports its ctx ending
	started   chan struct{} // the slow tool has started
	quit      chan struct{} // closed when the test ends: the slow tool returns

	mu   sync.Mutex
	seen []seenRequest
}

func (s *sdkServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

func (s *sdkServer) closeSessions() {
	for ss := range s.server.Sessions() {
		ss.Close()
	}
}

func anyObject() map[string]any { return map[string]any{"type": "object"} }

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func newSDKServer(t *testing.T, mode string) *sdkServer {
	t.Helper()
	s := &sdkServer{cancelled: make(chan string, 1), started: make(chan struct{}, 1), quit: make(chan struct{})}
	s.server = mcp.NewServer(&mcp.Implementation{Name: "sdk-remote", Version: "1.0.0"}, nil)
	s.server.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	s.server.AddTool(&mcp.Tool{Name: "big", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Bytes int }
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		return textResult(strings.Repeat("b", args.Bytes)), nil
	})
	s.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.started <- struct{}{}
		select {
		case <-ctx.Done():
			s.cancelled <- context.Cause(ctx).Error()
			return nil, ctx.Err()
		case <-s.quit:
			return textResult("not cancelled"), nil
		}
	})
	s.server.AddTool(&mcp.Tool{Name: "stuck", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.started <- struct{}{}
		<-s.quit // deaf to cancellation
		return textResult("too late"), nil
	})
	s.server.AddTool(&mcp.Tool{Name: "ask", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message:         "Who are you?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			return nil, err
		}
		return textResult(fmt.Sprintf("%s %v", res.Action, res.Content["name"])), nil
	})
	s.server.AddTool(&mcp.Tool{Name: "poll", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// SEP-1699: close the response stream; the client resumes it with
		// GET and Last-Event-ID and gets the result there.
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		time.Sleep(100 * time.Millisecond)
		return textResult("polled"), nil
	})

	var handler http.Handler
	switch mode {
	case modeStream:
		handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server },
			&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	case modeJSON:
		handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server },
			&mcp.StreamableHTTPOptions{JSONResponse: true})
	case modeSSE:
		handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s.server }, nil)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{method: r.Method, header: r.Header.Clone()})
		s.mu.Unlock()
		if code := s.refuse.Load(); code != 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="remote", error="invalid_token"`)
			http.Error(w, "no", int(code))
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(s.quit)
		s.closeSessions()
		srv.CloseClientConnections()
		srv.Close()
	})
	s.url = srv.URL
	return s
}

type remoteFixture struct {
	up            *upstream.HTTP
	logs          *syncBuffer
	notifications chan string // "method params"
}

// newRemote returns an upstream for url; edit adjusts its options. The
// upstream is closed when the test ends.
func newRemote(t *testing.T, url string, edit func(*upstream.HTTPOptions)) *remoteFixture {
	t.Helper()
	fx := &remoteFixture{logs: &syncBuffer{}, notifications: make(chan string, 100)}
	logger := slog.New(slog.NewTextHandler(fx.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := upstream.HTTPOptions{
		Name:    "remote",
		URL:     url,
		Logger:  logger,
		Guard:   &netguard.Policy{Logger: logger},
		Timeout: 5 * time.Second,
		OnNotification: func(method string, params json.RawMessage) {
			select {
			case fx.notifications <- method + " " + string(params):
			default:
			}
		},
	}
	if edit != nil {
		edit(&opts)
	}
	fx.up = upstream.NewHTTP(opts)
	t.Cleanup(func() { fx.up.Close() })
	return fx
}

// startCall calls tool on up with callCtx on a goroutine and returns once
// the server's tool has started, with the channel the call's error will
// come on; ctx bounds the wait.
func startCall(t *testing.T, ctx, callCtx context.Context, srv *sdkServer, up *upstream.HTTP, tool string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := up.Call(callCtx, "tools/call", toolParams(tool, `{}`))
		done <- err
	}()
	select {
	case <-srv.started:
	case <-ctx.Done():
		t.Fatalf("the %s tool never started", tool)
	}
	return done
}

func transportFor(mode string) string {
	if mode == modeSSE {
		return upstream.TransportSSE
	}
	return upstream.TransportStreamable
}

func remoteCall(t *testing.T, ctx context.Context, up *upstream.HTTP, tool, args string) string {
	t.Helper()
	resp, err := up.Call(ctx, "tools/call", toolParams(tool, args))
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if resp.Error != nil {
		t.Fatalf("call %s: error %s", tool, resp.Error)
	}
	var result struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil || len(result.Content) != 1 {
		t.Fatalf("call %s: result %s: %v", tool, resp.Result, err)
	}
	if result.IsError {
		t.Fatalf("call %s: tool error %s", tool, result.Content[0].Text)
	}
	return result.Content[0].Text
}

func TestRemoteCallsAndHeaders(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			url := srv.url
			if mode == modeSSE {
				url += "/sse"
			}
			fx := newRemote(t, url, func(o *upstream.HTTPOptions) {
				o.Transport = transportFor(mode)
				o.Headers = map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k-123"}
			})
			if err := fx.up.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if init := string(fx.up.InitializeResult()); !strings.Contains(init, `"sdk-remote"`) || !strings.Contains(init, `"protocolVersion":"2025-11-25"`) {
				t.Errorf("InitializeResult = %s", init)
			}
			if fx.up.Generation() != 1 || fx.up.Transport() != transportFor(mode) {
				t.Errorf("Generation, Transport = %d, %q", fx.up.Generation(), fx.up.Transport())
			}
			// Params go out and results come back byte for byte.
			args := `{"b":[1, 2],"a":"caf\u00e9"}`
			if got := remoteCall(t, ctx, fx.up, "echo", args); got != args {
				t.Errorf("echo = %s, want %s", got, args)
			}
			// A JSON-RPC error is the server's answer, passed through.
			resp, err := fx.up.Call(ctx, "tools/call", toolParams("nope", `{}`))
			if err != nil || resp.Error == nil || !strings.Contains(string(resp.Error), `unknown tool \"nope\"`) {
				t.Errorf("unknown tool = %+v, %v; want the server's JSON-RPC error", resp, err)
			}
			// The SDK refuses an unknown method with HTTP 400 before JSON-RPC.
			want := `mcp server "remote" answered no/such/method with HTTP 400 Bad Request: JSON RPC not handled: "no/such/method" unsupported`
			if _, err = fx.up.Call(ctx, "no/such/method", nil); err == nil || err.Error() != want {
				t.Errorf("unknown method: %v\nwant %s", err, want)
			}

			// Every request carried the configured headers; every request
			// after initialize carried the session and the protocol version.
			reqs := srv.requests()
			if len(reqs) < 4 {
				t.Fatalf("the server saw %d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.header.Get("Authorization") != "Bearer s3cret" || r.header.Get("X-Api-Key") != "k-123" {
					t.Errorf("request %d (%s) lacks the configured headers: %v", i, r.method, r.header)
				}
				if mode == modeSSE || i == 0 {
					continue
				}
				if r.header.Get("Mcp-Session-Id") == "" || r.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
					t.Errorf("request %d (%s): Mcp-Session-Id %q, MCP-Protocol-Version %q", i, r.method, r.header.Get("Mcp-Session-Id"), r.header.Get("Mcp-Protocol-Version"))
				}
			}
			if strings.Contains(fx.logs.String(), "s3cret") || strings.Contains(fx.logs.String(), "k-123") {
				t.Errorf("a header value reached the log:\n%s", fx.logs)
			}
		})
	}
}

func TestRemoteDetectsTheTransport(t *testing.T) {
	for _, mode := range []string{modeStream, modeSSE} {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, nil) // Transport "": detect
			if got := remoteCall(t, ctx, fx.up, "echo", `{"x":1}`); got != `{"x":1}` {
				t.Errorf("echo = %s", got)
			}
			if fx.up.Transport() != transportFor(mode) {
				t.Errorf("Transport() = %q, want %q", fx.up.Transport(), transportFor(mode))
			}
		})
	}
}

func TestRemoteSessionExpiry(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Transport = transportFor(mode) })
			remoteCall(t, ctx, fx.up, "echo", `{}`)
			srv.closeSessions() // the server forgets the session
			// The next call is sent again on a new session, transparently.
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := fx.up.Call(ctx, "tools/call", toolParams("echo", `{"after":"expiry"}`))
				if err == nil && resp.Error == nil {
					break
				}
				// On the legacy transport the stream may end first: the
				// call in flight then fails, and the next one reconnects.
				if mode != modeSSE || !errors.Is(err, upstream.ErrSessionEnded) || time.Now().After(deadline) {
					t.Fatalf("call after expiry: %+v, %v", resp, err)
				}
			}
			if got := fx.up.Generation(); got != 2 {
				t.Errorf("Generation = %d, want 2", got)
			}
			inits := 0
			for _, r := range srv.requests() {
				if r.method == http.MethodGet && mode == modeSSE {
					inits++
				}
				if r.method == http.MethodPost && r.header.Get("Mcp-Session-Id") == "" && mode != modeSSE {
					inits++
				}
			}
			if inits != 2 {
				t.Errorf("%d sessions opened, want 2", inits)
			}
		})
	}
}

func TestRemoteRefusedCredentials(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) {
				o.Name = "notion"
				o.Transport = transportFor(mode)
				o.Headers = map[string]string{"Authorization": "Bearer wrong"}
			})
			want := `mcp server "notion" refused the credentials (HTTP 401); check its headers (it asks for: Bearer realm="remote", error="invalid_token")`
			srv.refuse.Store(http.StatusUnauthorized)
			err := fx.up.Start(ctx)
			if !errors.Is(err, wire.ErrCredentials) || err.Error() != want {
				t.Fatalf("Start = %v\nwant %s", err, want)
			}
			// Credentials revoked while the session runs: 403 on a call.
			srv.refuse.Store(0)
			remoteCall(t, ctx, fx.up, "echo", `{}`)
			srv.refuse.Store(http.StatusForbidden)
			_, err = fx.up.Call(ctx, "tools/call", toolParams("echo", `{}`))
			if !errors.Is(err, wire.ErrCredentials) || !strings.HasPrefix(err.Error(), `mcp server "notion" refused the credentials (HTTP 403); check its headers`) {
				t.Fatalf("call = %v, want the credentials refused", err)
			}
		})
	}
}

func TestRemoteResponseCap(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) {
				o.Transport = transportFor(mode)
				o.MaxResponseBytes = 64 << 10
			})
			if got := remoteCall(t, ctx, fx.up, "big", `{"bytes":1000}`); len(got) != 1000 {
				t.Errorf("small result: %d bytes", len(got))
			}
			_, err := fx.up.Call(ctx, "tools/call", toolParams("big", `{"bytes":100000}`))
			want := `mcp server "remote" answered tools/call with more than 65536 bytes, the gateway's limit for one response; the call failed`
			if !errors.Is(err, upstream.ErrResponseTooLarge) || err.Error() != want {
				t.Fatalf("big call = %v\nwant %s", err, want)
			}
			// The session survives it.
			if got := remoteCall(t, ctx, fx.up, "echo", `{"still":"here"}`); got != `{"still":"here"}` {
				t.Errorf("echo after the big one = %s", got)
			}
			if fx.up.Generation() != 1 {
				t.Errorf("Generation = %d, want 1", fx.up.Generation())
			}
		})
	}
}

func TestRemoteCancellationReachesServer(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Transport = transportFor(mode) })
			if err := fx.up.Start(ctx); err != nil {
				t.Fatal(err)
			}
			callCtx, cancel := context.WithCancel(ctx)
			done := startCall(t, ctx, callCtx, srv, fx.up, "slow")
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `mcp server "remote": tools/call abandoned before the server answered`) {
					t.Errorf("cancelled call: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("the cancelled call did not return")
			}
			select {
			case <-srv.cancelled: // notifications/cancelled ended the handler
			case <-ctx.Done():
				t.Fatal("the server's handler was never cancelled")
			}
			if got := remoteCall(t, ctx, fx.up, "echo", `{}`); got != `{}` {
				t.Errorf("echo after the cancellation = %s", got)
			}
		})
	}
}

func TestRemoteServerToClientRequest(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			var asked atomic.Value
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) {
				o.Transport = transportFor(mode)
				o.Capabilities = json.RawMessage(`{"elicitation":{}}`)
				o.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
					asked.Store(method + " " + string(params))
					if method != "elicitation/create" {
						return nil, wire.Errorf(wire.CodeMethodNotFound, "no %s", method)
					}
					return json.RawMessage(`{"action":"accept","content":{"name":"gateway"}}`), nil
				}
			})
			if got := remoteCall(t, ctx, fx.up, "ask", `{}`); got != "accept gateway" {
				t.Errorf("ask = %q, want the client's answer", got)
			}
			if got, _ := asked.Load().(string); !strings.HasPrefix(got, "elicitation/create ") || !strings.Contains(got, `"message":"Who are you?"`) {
				t.Errorf("OnRequest got %q", got)
			}
		})
	}
}

func TestRemoteNotificationsBetweenCalls(t *testing.T) {
	for _, mode := range []string{modeStream, modeSSE} {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Transport = transportFor(mode) })
			// Listing the tools opens the GET stream: the caller wants to
			// hear that they changed.
			if resp, err := fx.up.Call(ctx, "tools/list", nil); err != nil || resp.Error != nil {
				t.Fatalf("tools/list: %+v, %v", resp, err)
			}
			// The GET stream (or the legacy stream) may be registered a
			// moment later: keep changing the tools until a notification
			// arrives.
			for i := 0; ; i++ {
				srv.server.AddTool(&mcp.Tool{Name: fmt.Sprintf("new-%d", i), InputSchema: anyObject()}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return textResult("new"), nil
				})
				select {
				case n := <-fx.notifications:
					if !strings.HasPrefix(n, "notifications/tools/list_changed") {
						t.Fatalf("notification %q", n)
					}
					return
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal("no list_changed notification arrived")
				}
			}
		})
	}
}

// TestRemoteGETStreamOnDemand: a session opens its GET stream when the
// server may write to it between calls, and not for calls alone.
func TestRemoteGETStreamOnDemand(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		edit    func(*upstream.HTTPOptions)
		method  string // sent after Start; "" for none
		atStart bool   // GET requested by Start
		after   bool   // GET requested once method was sent
	}{
		{name: "calls only", mode: modeStream, method: "tools/call"},
		{name: "tools/list", mode: modeStream, method: "tools/list", after: true},
		{name: "resources/subscribe", mode: modeStream, method: "resources/subscribe", after: true},
		{name: "logging/setLevel", mode: modeStream, method: "logging/setLevel", after: true},
		{name: "roots changed", mode: modeStream, method: "notifications/roots/list_changed", after: true},
		{name: "ListenAtStart", mode: modeStream, edit: func(o *upstream.HTTPOptions) { o.ListenAtStart = true }, atStart: true},
		{name: "roots declared", mode: modeStream, edit: func(o *upstream.HTTPOptions) { o.Capabilities = json.RawMessage(`{"roots":{}}`) }, atStart: true},
		{name: "JSON answers", mode: modeJSON, method: "tools/call", atStart: true},
		{name: "NoListen", mode: modeStream, edit: func(o *upstream.HTTPOptions) { o.NoListen = true }, method: "tools/list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, tc.mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) {
				o.Transport = upstream.TransportStreamable
				if tc.edit != nil {
					tc.edit(o)
				}
			})
			gets := func() int {
				n := 0
				for _, r := range srv.requests() {
					if r.method == http.MethodGet {
						n++
					}
				}
				return n
			}
			if err := fx.up.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if got := gets() > 0; got != tc.atStart {
				t.Errorf("GET at Start: %v, want %v", got, tc.atStart)
			}
			switch {
			case tc.method == "notifications/roots/list_changed":
				if err := fx.up.Notify(ctx, tc.method, nil); err != nil {
					t.Fatal(err)
				}
			case tc.method == "tools/call":
				remoteCall(t, ctx, fx.up, "echo", `{}`)
			case tc.method != "":
				params := map[string]json.RawMessage{
					"resources/subscribe": json.RawMessage(`{"uri":"file:///x"}`),
					"logging/setLevel":    json.RawMessage(`{"level":"info"}`),
				}[tc.method]
				if _, err := fx.up.Call(ctx, tc.method, params); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := gets() > 0, tc.atStart || tc.after; got != want {
				t.Errorf("GET after %s: %v, want %v", tc.method, got, want)
			}
		})
	}
}

func TestRemoteResumesAClosedResponseStream(t *testing.T) {
	ctx := testContext(t)
	srv := newSDKServer(t, modeStream)
	fx := newRemote(t, srv.url, nil)
	if got := remoteCall(t, ctx, fx.up, "poll", `{}`); got != "polled" {
		t.Errorf("poll = %q", got)
	}
	var resumed bool
	for _, r := range srv.requests() {
		if r.method == http.MethodGet && r.header.Get("Last-Event-ID") != "" {
			resumed = true
		}
	}
	if !resumed {
		t.Error("no GET with Last-Event-ID: the stream was not resumed")
	}
}

func TestRemoteCloseDeletesTheSession(t *testing.T) {
	ctx := testContext(t)
	srv := newSDKServer(t, modeStream)
	fx := newRemote(t, srv.url, nil)
	remoteCall(t, ctx, fx.up, "echo", `{}`)
	if n := countSessions(srv); n != 1 {
		t.Fatalf("%d sessions on the server, want 1", n)
	}
	if err := fx.up.Close(); err != nil {
		t.Fatal(err)
	}
	var deleted bool
	for _, r := range srv.requests() {
		deleted = deleted || r.method == http.MethodDelete && r.header.Get("Mcp-Session-Id") != ""
	}
	if !deleted || countSessions(srv) != 0 {
		t.Errorf("DELETE sent: %v; sessions left: %d", deleted, countSessions(srv))
	}
	_, err := fx.up.Call(ctx, "tools/call", toolParams("echo", `{}`))
	if !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
	if err := fx.up.Notify(ctx, "notifications/roots/list_changed", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("notify after Close: %v, want ErrClosed", err)
	}
}

func countSessions(s *sdkServer) int {
	n := 0
	for range s.server.Sessions() {
		n++
	}
	return n
}

func TestRemoteCloseDuringCall(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Transport = transportFor(mode) })
			done := startCall(t, ctx, ctx, srv, fx.up, "slow")
			fx.up.Close()
			wantClosed(t, ctx, done)
			// Close told the server that the call was abandoned.
			select {
			case <-srv.cancelled:
			case <-ctx.Done():
				t.Fatal("the server's handler was never cancelled")
			}
		})
	}
}

func TestRemoteNotify(t *testing.T) {
	ctx := testContext(t)
	srv := newSDKServer(t, modeStream)
	fx := newRemote(t, srv.url, nil)
	if err := fx.up.Notify(ctx, "notifications/roots/list_changed", nil); !errors.Is(err, upstream.ErrNotRunning) {
		t.Errorf("Notify before Start: %v, want ErrNotRunning", err)
	}
	if err := fx.up.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fx.up.Notify(ctx, "notifications/roots/list_changed", nil); err != nil {
		t.Errorf("Notify: %v", err)
	}
}

func TestRemoteStartFailures(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	redirect := httptest.NewServer(http.RedirectHandler("https://elsewhere.example/mcp?key=x", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>hello</html>")
	}))
	t.Cleanup(html.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name, url, transport string
		kind                 error
		want                 string // the error's text, with URL for the server's
	}{
		{"neither transport", notFound.URL + "/mcp", "", upstream.ErrRemoteProtocol,
			`mcp server "remote" at URL/mcp answered initialize with HTTP 404 Not Found: 404 page not found, and is no HTTP+SSE server either (answered the GET of its event stream with HTTP 404 Not Found: 404 page not found); check its url and transport`},
		{"redirect", redirect.URL + "/mcp", "http", upstream.ErrRemoteProtocol,
			`mcp server "remote" redirects to https://elsewhere.example/mcp (HTTP 307 Temporary Redirect); set its url to the address it redirects to`},
		{"not MCP", html.URL, "http", upstream.ErrRemoteProtocol,
			`mcp server "remote" answered initialize with Content-Type "text/html"; want application/json or text/event-stream`},
		{"not SSE", html.URL, "sse", upstream.ErrRemoteProtocol,
			`mcp server "remote" answered the GET of its event stream with Content-Type "text/html"; want text/event-stream`},
		{"unreachable", closedURL + "/mcp?key=secret", "", nil,
			`mcp server "remote": initialize: cannot reach URL/mcp: dial tcp ADDR: connect: connection refused`},
		{"bad url", "ftp://example.com/mcp", "", nil,
			`mcp server "remote": its url must start with http:// or https://; check its configuration`},
		{"bad transport", "http://example.com/mcp", "websocket", nil,
			`mcp server "remote": unknown transport "websocket"; use "http", "sse" or "" to detect it; check its configuration`},
		{"metadata address", "http://169.254.169.254/mcp", "", netguard.ErrRefused,
			`mcp server "remote": initialize: the gateway refuses to connect to http://169.254.169.254/mcp: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newRemote(t, tc.url, func(o *upstream.HTTPOptions) { o.Transport = tc.transport })
			err := fx.up.Start(testContext(t))
			if err == nil {
				t.Fatal("Start succeeded")
			}
			base := tc.url[:strings.Index(tc.url[8:], "/")+8]
			want := strings.ReplaceAll(tc.want, "URL", base)
			want = strings.ReplaceAll(want, "ADDR", strings.TrimPrefix(base, "http://"))
			if err.Error() != want {
				t.Errorf("Start =\n  %v\nwant\n  %s", err, want)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("errors.Is(err, %v) = false", tc.kind)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the url's query")
			}
		})
	}
}

func TestRemoteConcurrentCalls(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			srv := newSDKServer(t, mode)
			fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Transport = transportFor(mode) })
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					args := fmt.Sprintf(`{"i":%d}`, i)
					resp, err := fx.up.Call(ctx, "tools/call", toolParams("echo", args))
					if err != nil || !strings.Contains(string(resp.Result), strings.ReplaceAll(args, `"`, `\"`)) {
						t.Errorf("call %d: %+v, %v", i, resp, err)
					}
				})
			}
			wg.Wait()
			if fx.up.Generation() != 1 {
				t.Errorf("Generation = %d, want 1 (one shared start)", fx.up.Generation())
			}
		})
	}
}

func TestRemoteStatelessServer(t *testing.T) {
	ctx := testContext(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "stateless", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	var mu sync.Mutex
	var methods []string
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method+" "+r.Header.Get("Mcp-Session-Id"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	fx := newRemote(t, srv.URL, nil)
	if got := remoteCall(t, ctx, fx.up, "echo", `{"s":1}`); got != `{"s":1}` {
		t.Errorf("echo = %s", got)
	}
	fx.up.Close()
	mu.Lock()
	defer mu.Unlock()
	// initialize, initialized, the call; no GET (the session never needed
	// one), no DELETE.
	if want := []string{"POST ", "POST ", "POST "}; !slices.Equal(methods, want) {
		t.Errorf("requests %q, want %q", methods, want)
	}
}

// fakeStreamable is a hand-written streamable HTTP server for what the SDK's
// servers never do: answer runs the JSON-RPC request and returns the HTTP
// status, content type and body.
func fakeStreamable(t *testing.T, answer func(id json.RawMessage, method string, session string) (int, string, string)) string {
	t.Helper()
	var sessions atomic.Int64 // the n-th session is "s-<n>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if msg.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s-%d", sessions.Add(1)))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}`, msg.ID)
			return
		}
		code, ct, body := answer(msg.ID, msg.Method, r.Header.Get("Mcp-Session-Id"))
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRemoteUnusualAnswers(t *testing.T) {
	tsExpired := `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`
	tests := []struct {
		name   string
		answer func(id json.RawMessage, session string) (int, string, string)
		result string // the call's result or error object
		err    string // or the call's error
		gen    uint64
	}{
		{"JSON-RPC error in a 400 body is the answer", func(id json.RawMessage, _ string) (int, string, string) {
			return 400, "application/json", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad arguments"}}`, id)
		}, `{"code":-32602,"message":"bad arguments"}`, "", 1},
		{"400 for an unknown session, as the TypeScript examples answer, re-initializes", func(id json.RawMessage, session string) (int, string, string) {
			if session == "s-1" {
				return 400, "application/json", tsExpired
			}
			return 200, "application/json", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`, id)
		}, `{"ok":true}`, "", 2},
		{"a server that forgets every session", func(json.RawMessage, string) (int, string, string) {
			return 404, "text/plain", "no such session"
		}, "", `mcp server "remote" forgot a new session at once (HTTP 404 to tools/call); check its url`, 2},
		{"500", func(json.RawMessage, string) (int, string, string) {
			return 500, "text/plain", "boom\nat line 3"
		}, "", `mcp server "remote" answered tools/call with HTTP 500 Internal Server Error: boom at line 3`, 1},
		{"a JSON body that answers another request", func(json.RawMessage, string) (int, string, string) {
			return 200, "application/json", `{"jsonrpc":"2.0","id":999,"result":{}}`
		}, "", `mcp server "remote" answered tools/call with a JSON body that is not its response: {"jsonrpc":"2.0","id":999,"result":{}}`, 1},
		{"not JSON-RPC", func(json.RawMessage, string) (int, string, string) {
			return 200, "application/json", `[1,2]`
		}, "", `mcp server "remote" answered tools/call with JSON that is not a JSON-RPC message (JSON-RPC batches are not supported): [1,2]`, 1},
		{"202 to a request", func(json.RawMessage, string) (int, string, string) {
			return 202, "", ""
		}, "", `mcp server "remote" answered the request tools/call with 202 Accepted and no response`, 1},
		{"stream closed before the answer", func(json.RawMessage, string) (int, string, string) {
			return 200, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
		}, "", `mcp server "remote" closed the response stream of tools/call before answering (end of stream)`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			url := fakeStreamable(t, func(id json.RawMessage, method, session string) (int, string, string) { return tc.answer(id, session) })
			fx := newRemote(t, url, func(o *upstream.HTTPOptions) { o.NoListen = true })
			resp, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`))
			switch {
			case tc.err != "":
				if err == nil || err.Error() != tc.err {
					t.Errorf("call = %+v, %v\nwant error %s", resp, err, tc.err)
				}
			case err != nil:
				t.Errorf("call: %v", err)
			case string(resp.Result) != tc.result && string(resp.Error) != tc.result:
				t.Errorf("call = result %s, error %s; want %s", resp.Result, resp.Error, tc.result)
			}
			if got := fx.up.Generation(); got != tc.gen {
				t.Errorf("Generation = %d, want %d", got, tc.gen)
			}
		})
	}
}

func TestRemoteCloseDuringStart(t *testing.T) {
	ctx := testContext(t)
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // read, so that the server notices the client going away
		arrived <- struct{}{}
		<-r.Context().Done() // never answers initialize
	}))
	t.Cleanup(srv.Close)
	fx := newRemote(t, srv.URL, func(o *upstream.HTTPOptions) { o.Transport = upstream.TransportStreamable })
	started := make(chan error, 1)
	go func() { started <- fx.up.Start(ctx) }()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("initialize never arrived")
	}
	fx.up.Close()
	select {
	case err := <-started:
		if !errors.Is(err, upstream.ErrClosed) {
			t.Errorf("Start = %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Start did not return after Close")
	}
}

func TestRemoteStartTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // read, so that the server notices the client going away
		<-r.Context().Done()        // never answers initialize
	}))
	t.Cleanup(srv.Close)
	fx := newRemote(t, srv.URL+"/mcp", func(o *upstream.HTTPOptions) { o.Transport = upstream.TransportStreamable })
	ctx, cancel := context.WithTimeout(testContext(t), 100*time.Millisecond)
	defer cancel()
	err := fx.up.Start(ctx)
	want := fmt.Sprintf(`mcp server "remote" did not answer initialize at %s/mcp: context deadline exceeded`, srv.URL)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
		t.Errorf("Start = %v\nwant %s", err, want)
	}
}

func BenchmarkRemoteCall(b *testing.B) {
	for _, mode := range allModes {
		b.Run(mode, func(b *testing.B) {
			srv := newSDKServerB(b, mode)
			up := upstream.NewHTTP(upstream.HTTPOptions{Name: "bench", URL: srv, Transport: transportFor(mode), Guard: &netguard.Policy{AllowAll: true}})
			defer up.Close()
			ctx := context.Background()
			if err := up.Start(ctx); err != nil {
				b.Fatal(err)
			}
			params := toolParams("echo", `{"a":1}`)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := up.Call(ctx, "tools/call", params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRemoteSession measures what one more session costs: what a
// gateway pays per downstream client.
func BenchmarkRemoteSession(b *testing.B) {
	srv := newSDKServerB(b, modeStream)
	client := upstream.NewHTTPClient("bench", &netguard.Policy{AllowAll: true})
	defer client.CloseIdleConnections()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		up := upstream.NewHTTP(upstream.HTTPOptions{Name: "bench", URL: srv, Transport: upstream.TransportStreamable, Client: client})
		if err := up.Start(ctx); err != nil {
			b.Fatal(err)
		}
		up.Close()
	}
}

func newSDKServerB(b *testing.B, mode string) string {
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	var handler http.Handler
	switch mode {
	case modeStream:
		handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	case modeJSON:
		handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	case modeSSE:
		handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
	}
	srv := httptest.NewServer(handler)
	b.Cleanup(func() {
		for ss := range server.Sessions() {
			ss.Close()
		}
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// TestRemoteURLUserinfo: credentials in the server's url reach it as Basic
// authorization on every request, as http.Client sends them (requests with
// a plain url skip http.Client).
func TestRemoteURLUserinfo(t *testing.T) {
	ctx := testContext(t)
	srv := newSDKServer(t, modeStream)
	fx := newRemote(t, strings.Replace(srv.url, "http://", "http://ann:pa55@", 1), nil)
	if got := remoteCall(t, ctx, fx.up, "echo", `{"x":1}`); got != `{"x":1}` {
		t.Errorf("echo = %s", got)
	}
	reqs := srv.requests()
	if len(reqs) < 2 {
		t.Fatalf("the server saw %d requests", len(reqs))
	}
	for i, r := range reqs {
		if user, pass, ok := (&http.Request{Header: r.header}).BasicAuth(); !ok || user != "ann" || pass != "pa55" {
			t.Errorf("request %d (%s): Authorization %q, want Basic for ann:pa55", i, r.method, r.header.Get("Authorization"))
		}
	}
}

// TestRemoteCloseDuringStuckCall: Close ends a call in flight at once even
// when the server's tool ignores the cancellation and never answers: the
// call's own request is cut, not only the server told.
func TestRemoteCloseDuringStuckCall(t *testing.T) {
	ctx := testContext(t)
	srv := newSDKServer(t, modeStream)
	fx := newRemote(t, srv.url, func(o *upstream.HTTPOptions) { o.Timeout = 200 * time.Millisecond })
	done := startCall(t, ctx, ctx, srv, fx.up, "stuck")
	go fx.up.Close()
	wantClosed(t, ctx, done)
}

// wantClosed waits for the error of a call in flight when its upstream was
// closed: ErrClosed, before ctx ends.
func wantClosed(t *testing.T, ctx context.Context, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, upstream.ErrClosed) {
			t.Errorf("call in flight: %v, want ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("the call in flight did not return after Close")
	}
}

// A priming event (an id, a retry and empty data, which servers and the
// gateway itself send before a long answer) is skipped without a warning:
// one WARN per event flooded the host's log.
func TestRemotePrimingEventIsNotWarnedAbout(t *testing.T) {
	ctx := testContext(t)
	url := fakeStreamable(t, func(id json.RawMessage, _, _ string) (int, string, string) {
		return 200, "text/event-stream", fmt.Sprintf("id: 1\nretry: 1000\ndata: \n\nid: 2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"ok\":true}}\n\n", id)
	})
	fx := newRemote(t, url, func(o *upstream.HTTPOptions) { o.NoListen = true })
	resp, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`))
	if err != nil || string(resp.Result) != `{"ok":true}` {
		t.Fatalf("call = %+v, %v; want the result after the priming event", resp, err)
	}
	if logs := fx.logs.String(); strings.Contains(logs, "not a JSON-RPC message") {
		t.Errorf("the priming event was warned about:\n%s", logs)
	}
}

// A call's response stream gives its connection back to the client's pool:
// at once when the stream's end came with the response (here a body with a
// Content-Length), so the next call goes out on the same connection; and,
// when the server ends the stream a moment later, once the rest is read in
// the background.
func TestRemoteResponseStreamReusesItsConnection(t *testing.T) {
	for _, endApart := range []bool{false, true} {
		t.Run(fmt.Sprintf("end apart %v", endApart), func(t *testing.T) {
			ctx := testContext(t)
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.NewDecoder(r.Body).Decode(&msg) //nolint:errcheck // the test's own client
				switch {
				case msg.ID == nil:
					w.WriteHeader(http.StatusAccepted)
					return
				case msg.Method == "initialize":
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"f","version":"1"}}}`, msg.ID)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				event := fmt.Sprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", msg.ID)
				if !endApart {
					w.Header().Set("Content-Length", fmt.Sprint(len(event)))
				}
				io.WriteString(w, event) //nolint:errcheck // the test's own client
				if endApart {
					w.(http.Flusher).Flush()
					time.Sleep(5 * time.Millisecond)
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
				if state == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			fx := newRemote(t, srv.URL, func(o *upstream.HTTPOptions) { o.NoListen = true; o.Transport = upstream.TransportStreamable })
			for range 5 {
				if _, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`)); err != nil {
					t.Fatal(err)
				}
				if endApart {
					time.Sleep(50 * time.Millisecond) // the rest is read meanwhile
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("%d connections for 5 calls, want 1", n)
			}
		})
	}
}
