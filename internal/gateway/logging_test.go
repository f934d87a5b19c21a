package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// sdkLoggingServer is a remote MCP server built with the Go SDK whose tool
// "work" logs at debug level, which the SDK sends only to a session that
// asked for debug messages with logging/setLevel.
func sdkLoggingServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "work", Data: "working hard"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// addRemoteServer registers url as a remote server the way the command
// line does: the gateway's own session, and one per session-era client.
func addRemoteServer(g *Gateway, name, url string) {
	mk := func(caps json.RawMessage, h Hooks) Upstream {
		return upstream.NewHTTP(upstream.HTTPOptions{Name: name, URL: url, Capabilities: caps,
			OnNotification: h.OnNotification, OnRequest: h.OnRequest})
	}
	h := g.UpstreamHooks(name)
	g.Router.AddPerClient(mk(json.RawMessage(`{}`), h), h, mk)
}

// streamRecorder is a Stream safe for an upstream's reader goroutine.
type streamRecorder struct{ ch chan string }

func (r streamRecorder) Send(msg []byte) error { r.ch <- string(msg); return nil }

// TestSetLevelReachesTheClientsOwnRemoteSession: a client's logging/setLevel
// reaches its own session of a remote server, whether that session exists
// already or is started by a later call, so the server's debug messages
// come to the client.
func TestSetLevelReachesTheClientsOwnRemoteSession(t *testing.T) {
	for _, tt := range []struct {
		name       string
		callBefore bool // the client's own upstream session exists before setLevel
	}{
		{"session started before setLevel", true},
		{"session started after setLevel", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := sdkLoggingServer(t)
			r := NewRouter(RouterOptions{})
			g := New(r, Info{})
			addRemoteServer(g, "remote", url)
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close(); _ = r.Close() })
			s := newSession(t, g)
			call := func(id string) []string {
				rec := streamRecorder{ch: make(chan string, 16)}
				reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(id), Method: "tools/call", Params: json.RawMessage(`{"name":"work"}`)}, rec)
				if reply.Error != nil {
					t.Fatalf("tools/call: %s", reply.Error)
				}
				var got []string
				for {
					select {
					case m := <-rec.ch:
						got = append(got, m)
					default:
						return got
					}
				}
			}
			if tt.callBefore {
				if got := call("1"); len(got) != 0 {
					t.Fatalf("before setLevel the client got %v: the server should send nothing", got)
				}
			}
			if reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`2`), Method: "logging/setLevel", Params: json.RawMessage(`{"level":"debug"}`)}, nil); reply.Error != nil {
				t.Fatalf("setLevel: %s", reply.Error)
			}
			got := call("3")
			// The SDK sends the message before the result, on the call's stream.
			if len(got) != 1 || !strings.Contains(got[0], `"method":"notifications/message"`) || !strings.Contains(got[0], `"data":"working hard"`) {
				t.Errorf("after setLevel debug the call's stream carried %v, want the server's debug message", got)
			}
			select {
			case m := <-s.Outbox():
				t.Errorf("the GET stream got %s too", m)
			default:
			}
		})
	}
}
