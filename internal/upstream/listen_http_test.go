package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenServer is the Go SDK's server in its 2026-07-28 mode (the mode of
// the conformance fixture), counting the subscriptions/listen requests it
// gets; drop closes every connection to it, ending the listen stream.
type listenServer struct {
	server *mcp.Server
	srv    *httptest.Server
	mu     sync.Mutex
	opened int
	active map[*http.Request]struct{}
}

func newListenServer(t *testing.T) *listenServer {
	ls := &listenServer{active: map[*http.Request]struct{}{}}
	ls.server = mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			if req.Params.URI != "test://r" {
				return errors.New("no such resource")
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	ls.server.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	ls.server.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "r"}}}, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ls.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	ls.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "subscriptions/listen" {
			handler.ServeHTTP(w, r)
			return
		}
		ls.mu.Lock()
		ls.opened++
		ls.active[r] = struct{}{}
		ls.mu.Unlock()
		handler.ServeHTTP(w, r)
		ls.mu.Lock()
		delete(ls.active, r)
		ls.mu.Unlock()
	}))
	t.Cleanup(ls.srv.Close)
	return ls
}

func (ls *listenServer) counts() (opened, active int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.opened, len(ls.active)
}

func (ls *listenServer) drop() { ls.srv.CloseClientConnections() }

// nextNotification waits for a notification whose text starts with prefix,
// skipping others.
func nextNotification(t *testing.T, ctx context.Context, fx *remoteFixture, prefix string) string {
	t.Helper()
	for {
		select {
		case n := <-fx.notifications:
			if strings.HasPrefix(n, prefix) {
				return n
			}
		case <-ctx.Done():
			t.Fatalf("no %s notification: %v\nlog:\n%s", prefix, ctx.Err(), fx.logs.String())
		}
	}
}

// A 2026-07-28 remote server's list changes and resource updates reach the
// gateway on a subscriptions/listen stream, which is reopened when it ends
// (logged once each way), reopened with a new filter when a resource is
// subscribed to, and closed, with every goroutine of it, by Close.
func TestRemoteStatelessListen(t *testing.T) {
	ctx := testContext(t)
	ls := newListenServer(t)
	fx := newRemote(t, ls.srv.URL, func(o *upstream.HTTPOptions) { o.DiscoverFirst = true })
	resp, err := fx.up.Call(ctx, "tools/list", nil)
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list: %+v, %v", resp, err)
	}
	if !fx.up.Stateless() {
		t.Fatal("the SDK's server in its 2026-07-28 mode was not spoken to in that era")
	}
	if opened, active := ls.counts(); opened != 1 || active != 1 {
		t.Fatalf("after tools/list: %d subscriptions/listen opened, %d open; want 1, 1", opened, active)
	}

	ls.server.AddTool(&mcp.Tool{Name: "added", InputSchema: anyObject()}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("added"), nil
	})
	n := nextNotification(t, ctx, fx, "notifications/tools/list_changed")
	if strings.Contains(n, "subscriptionId") {
		t.Errorf("the upstream's subscription id reached the gateway: %s", n)
	}

	// resources/subscribe is no request of the era: the stream is reopened
	// with the resource in its filter, and its updates come on it.
	resp, err = fx.up.Call(ctx, "resources/subscribe", json.RawMessage(`{"uri":"test://r"}`))
	if err != nil || resp.Error != nil || string(resp.Result) != `{}` {
		t.Fatalf("resources/subscribe: %+v, %v", resp, err)
	}
	if opened, _ := ls.counts(); opened != 2 {
		t.Errorf("after resources/subscribe: %d subscriptions/listen opened, want 2", opened)
	}
	if err := ls.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r"}); err != nil {
		t.Fatal(err)
	}
	if n := nextNotification(t, ctx, fx, "notifications/resources/updated"); !strings.Contains(n, `"uri":"test://r"`) {
		t.Errorf("update: %s", n)
	}
	resp, err = fx.up.Call(ctx, "resources/subscribe", json.RawMessage(`{"uri":"test://unknown"}`))
	if err != nil || resp.Error == nil || !strings.Contains(string(resp.Error), `mcp server \"remote\": cannot subscribe to test://unknown: its subscriptions/listen stream is not open (it refused subscriptions/listen: `) {
		t.Errorf("resources/subscribe of an unknown resource: %+v, %v", resp, err)
	}

	// The server ends the stream: it is reopened, and changes come again.
	// Once open again (the refusal above closed it), the server ends the
	// stream three times: it is reopened each time.
	const reopened = "its subscriptions/listen stream is open again"
	waitLogged := func(what string, n int) {
		for strings.Count(fx.logs.String(), what) < n {
			time.Sleep(10 * time.Millisecond) // polling the log, no timing decides
			if ctx.Err() != nil {
				t.Fatalf("%q was not logged %d times\nlog:\n%s", what, n, fx.logs.String())
			}
		}
	}
	waitLogged(reopened, 1)
	for i := range 3 {
		ls.drop()
		waitLogged(reopened, 2+i)
	}
	ls.server.RemoveTools("added")
	nextNotification(t, ctx, fx, "notifications/tools/list_changed")

	logs := fx.logs.String()
	for what, want := range map[string]int{"its subscriptions/listen stream ended": 3, "cannot open its subscriptions/listen stream": 1, reopened: 4} {
		if got := strings.Count(logs, what); got != want {
			t.Errorf("%q logged %d times, want %d (once per change of state)\nlog:\n%s", what, got, want, logs)
		}
	}

	fx.up.Close()
	if _, active := ls.counts(); active != 0 {
		// Close waited for the stream's reader; the server sees its
		// request end once the connection is closed, which Close does.
		t.Logf("server still holds %d listen requests right after Close", active)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range []string{"listenStateless", "markReady", "startStatelessListen", "openStream"} {
		if strings.Contains(stacks, "upstream.(*session)."+f) {
			t.Errorf("a goroutine of the listen stream outlived Close (%s):\n%s", f, stacks)
		}
	}
}
