package e2e

// A 2026-07-28 client's capabilities reach a dual-era server spoken to in
// the session era (one process for both eras): the server reads them per
// request, as it would directly, rather than the capabilities the gateway
// offered the shared process for all its clients (issue 23).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addCapsTools adds to the state server needs_sampling, which, like the
// conformance fixture's test_missing_capability, runs only for a client
// that declared sampling and answers -32021 to one that did not, deciding
// on the capabilities of the request (ServerRequest.ClientCapabilities: the
// request's _meta, else the session's).
func addCapsTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "needs_sampling", Description: "Runs only for a client that declared sampling."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the client declared sampling"}}}, nil, nil
			}
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			return nil, nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling capability required but not declared by client", Data: data}
		})
}

// TestStatelessClientCapabilitiesReachSharedServer: through one process of
// a dual-era server (spoken to in the session era), a 2026-07-28 client that
// declares no sampling gets the server's -32021, as directly; one that
// declares it gets the tool's result.
func TestStatelessClientCapabilitiesReachSharedServer(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	without, _ := g.connectNamed(ctx, "", "Sky") // elicitation and roots, no sampling
	_, err := without.CallTool(ctx, &mcp.CallToolParams{Name: "needs_sampling", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != mcp.CodeMissingRequiredClientCapabilities || werr.Message != "sampling capability required but not declared by client" {
		t.Fatalf("a 2026-07-28 client without sampling calling needs_sampling: err %v, want the server's -32021 "+
			"(the server saw the gateway's capabilities, not the client's?)\nlog:\n%s", err, g.log())
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
		},
	})
	with, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connecting a 2026-07-28 client with sampling: %v", err)
	}
	defer with.Close()
	if got := callAs(ctx, t, "a 2026-07-28 client with sampling", with, "needs_sampling", map[string]any{}); got != "the client declared sampling" {
		t.Errorf("needs_sampling answered %q", got)
	}
}
