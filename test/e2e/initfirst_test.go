package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOnlyRemote is a remote server of the session era only
// (2025-11-25, stateful), recording the method of every request posted
// to it, whoever sent it.
type sessionOnlyRemote struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func startSessionOnlyRemote(t *testing.T) *sessionOnlyRemote {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "session-only", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	r := &sessionOnlyRemote{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct{ Method string }
			_ = json.Unmarshal(body, &msg)
			r.mu.Lock()
			r.seen = append(r.seen, msg.Method)
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	r.url = srv.URL + "/mcp"
	return r
}

// methods returns the methods posted since the last call, and forgets them.
func (r *sessionOnlyRemote) methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := slices.Clone(r.seen)
	r.seen = nil
	return m
}

// TestHostInitializeFirst: host mode's opt-out of asking server/discover
// first. A session-era-only remote server registered with `server add
// --url URL --initialize-first` is shown so by `server inspect`, and a
// static sandbox's client reaches it with initialize as the gateway's first
// request to it, server/discover never asked; the same server registered
// without the flag is asked server/discover first (the default).
func TestHostInitializeFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := startHost(t, filepath.Join(t.TempDir(), "state"))
	for _, c := range []struct {
		name  string
		flags []string
		first string
	}{
		{"plain", nil, "server/discover"},
		{"old", []string{"--initialize-first"}, "initialize"},
	} {
		remote := startSessionOnlyRemote(t)
		h.mustCLI("", append([]string{"server", "add", c.name, "--url", remote.url, "--allow-private-address"}, c.flags...)...)
		registering := remote.methods()
		out := h.mustCLI("", "server", "inspect", c.name)
		if hasFlag := strings.Contains(out, `"initializeFirst": true`); hasFlag != (c.flags != nil) {
			t.Errorf("server inspect %s (registered with %v) shows initializeFirst %v:\n%s", c.name, c.flags, hasFlag, out)
		}

		sb := h.createSandbox("sb-"+c.name, "--static", c.name)
		cs := sb.connectEra(ctx, "2025-11-25")
		if got, isErr := callText(ctx, t, cs, "echo", map[string]any{"text": "hi " + c.name}); got != "hi "+c.name || isErr {
			t.Fatalf("echo through sandbox sb-%s answered %q (error %v)", c.name, got, isErr)
		}
		m := remote.methods()
		if len(m) == 0 || m[0] != c.first {
			t.Errorf("server %s (registered with %v): the sandbox's first request to it was not %s: %v", c.name, c.flags, c.first, m)
		}
		if c.flags != nil && slices.Contains(append(registering, m...), "server/discover") {
			t.Errorf("server %s, registered with --initialize-first, was asked server/discover: registering %v, then %v", c.name, registering, m)
		}
	}
}
