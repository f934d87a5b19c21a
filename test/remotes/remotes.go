// Package remotes holds remote MCP servers for tests of several packages
// (the host's unit tests and the end-to-end tests): real Go SDK servers
// over streamable HTTP, in the test's process.
package remotes

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

// SessionOnly is a remote server of the session era only (2025-11-25,
// stateful) with one tool, echo, recording the method of every request
// posted to it, whoever sent it.
type SessionOnly struct {
	URL  string // its endpoint
	mu   sync.Mutex
	seen []string
}

type echoArgs struct {
	Text string `json:"text"`
}

// StartSessionOnly starts a SessionOnly server for the test's duration.
func StartSessionOnly(t testing.TB) *SessionOnly {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "session-only", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	r := &SessionOnly{}
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
	r.URL = srv.URL + "/mcp"
	return r
}

// Methods returns the methods posted since the last call, and forgets them.
func (r *SessionOnly) Methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := slices.Clone(r.seen)
	r.seen = nil
	return m
}
