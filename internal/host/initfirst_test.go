package host

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionRemote is a remote server of the session era only (2025-11-25,
// stateful), recording the method of every request posted to it.
type sessionRemote struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func startSessionRemote(t *testing.T) *sessionRemote {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "session-only", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return textResult(a.Text), nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	r := &sessionRemote{}
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
func (r *sessionRemote) methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := slices.Clone(r.seen)
	r.seen = nil
	return m
}

// A remote server registered with InitializeFirst (--initialize-first) is
// asked initialize first, by a sandbox's instance as by the listing at
// registration, never server/discover; the choice is kept with the
// registration (inspect, a reopened host). Without it the gateway asks
// server/discover first (the default), then falls back to initialize.
func TestRemoteInitializeFirst(t *testing.T) {
	for _, c := range []struct {
		name    string
		initFst bool
		first   string
	}{
		{"default", false, "server/discover"},
		{"initialize first", true, "initialize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := openHost(t, dir)
			remote := startSessionRemote(t)
			mustAdd(t, h, ServerRequest{Name: "old", URL: remote.url, InitializeFirst: c.initFst})
			listed := remote.methods()
			if c.initFst && slices.Contains(listed, "server/discover") {
				t.Errorf("registering asked server/discover: %v", listed)
			}
			if !c.initFst && !slices.Contains(listed, "server/discover") {
				t.Errorf("registering without InitializeFirst never asked server/discover: %v", listed)
			}
			info, err := h.InspectServer("old")
			if err != nil || info.InitializeFirst != c.initFst {
				t.Fatalf("inspect: InitializeFirst %v (%v), want %v", info != nil && info.InitializeFirst, err, c.initFst)
			}
			closeHost(t, h)

			h = openHost(t, dir) // the registration as stored
			sb := mustSandbox(t, h, "sb", "old")
			if got := connect(t, h, sb.Token).callOK("echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Fatalf("echo answered %q", got)
			}
			m := remote.methods()
			if len(m) == 0 || m[0] != c.first {
				t.Fatalf("the sandbox's first request to the server was not %s: %v", c.first, m)
			}
			if c.initFst && slices.Contains(m, "server/discover") {
				t.Errorf("a server registered with InitializeFirst was asked server/discover: %v", m)
			}
		})
	}
}
