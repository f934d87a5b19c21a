package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkSanityCheck connects with the official SDK's client (never used for
// load: its own cost would swamp the figures) and checks that it sees the echo
// tool and gets its text back, so the lean client is not measuring something
// a real client would not accept.
func sdkSanityCheck(ep endpoint) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := &http.Client{Transport: bearer{token: ep.token, next: http.DefaultTransport}}
	defer hc.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-gateway-bench-sanity", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: "http://" + ep.addr + ep.path, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "echo" }) {
		return fmt.Errorf("tools/list has no echo tool: %d tools", len(tools.Tools))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sanity"}})
	if err != nil {
		return fmt.Errorf("tools/call: %w", err)
	}
	if len(res.Content) != 1 || res.IsError {
		return fmt.Errorf("tools/call echo: %d content items, isError %v", len(res.Content), res.IsError)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "sanity" {
		return fmt.Errorf("tools/call echo: content %#v, want the text %q", res.Content[0], "sanity")
	}
	return nil
}

// bearer adds the gateway's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}
