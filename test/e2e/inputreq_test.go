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
	"slices"
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
	mcp.AddTool(s, &mcp.Tool{Name: "ask_three", Description: "Asks for a name, a greeting and the roots in one round of input requests."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			in := req.Params.InputResponses
			name, _ := in["user_name"].(*mcp.ElicitResult)
			var greeting *mcp.TextContent // on a session the SDK asks with tools, and answers that way
			switch r := in["greeting"].(type) {
			case *mcp.CreateMessageResult:
				greeting, _ = r.Content.(*mcp.TextContent)
			case *mcp.CreateMessageWithToolsResult:
				if len(r.Content) == 1 {
					greeting, _ = r.Content[0].(*mcp.TextContent)
				}
			}
			roots, _ := in["client_roots"].(*mcp.ListRootsResult)
			if name != nil && greeting != nil && roots != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v says %s with %d roots", name.Content["name"], greeting.Text, len(roots.Roots))}}}, nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
				"user_name":    &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
				"greeting":     &mcp.CreateMessageParams{MaxTokens: 50, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Generate a greeting"}}}},
				"client_roots": &mcp.ListRootsParams{},
			}}, nil, nil
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

// TestStatelessClientGetsInputRequestsTogether: a dual-era server spoken to
// in the session era asks three questions of one round (the Go SDK sends
// them as three concurrent requests on the session); a 2026-07-28 client
// gets them in one input-required result, as it would directly, and its
// retry answering all three completes the call with each answer where the
// server expects it.
func TestStatelessClientGetsInputRequestsTogether(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"state": {"runCmd": %q}}`, stateServerEnv+"=1 "+testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}, "roots": map[string]any{}}

	status, first := postModernAs(ctx, t, g.gw, caps, "tools/call", "ask_three", 1, map[string]any{"name": "ask_three", "arguments": map[string]any{}})
	res, _ := first["result"].(map[string]any)
	requests, _ := res["inputRequests"].(map[string]any)
	state, _ := res["requestState"].(string)
	var methods []string
	for _, r := range requests {
		m, _ := r.(map[string]any)["method"].(string)
		methods = append(methods, m)
	}
	slices.Sort(methods)
	if status != http.StatusOK || res["resultType"] != "input_required" || state == "" ||
		!slices.Equal(methods, []string{"elicitation/create", "roots/list", "sampling/createMessage"}) {
		t.Fatalf("first call: status %d, %v; want one input_required result asking all three (elicitation, roots, sampling)\nlog:\n%s", status, first, g.log())
	}

	answers := map[string]any{}
	for key, r := range requests {
		switch r.(map[string]any)["method"] {
		case "elicitation/create":
			answers[key] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		case "sampling/createMessage":
			answers[key] = map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "hello"}}
		case "roots/list":
			answers[key] = map[string]any{"roots": []any{map[string]any{"uri": "file:///a"}, map[string]any{"uri": "file:///b"}}}
		}
	}
	status, second := postModernAs(ctx, t, g.gw, caps, "tools/call", "ask_three", 2, map[string]any{"name": "ask_three", "arguments": map[string]any{}, "inputResponses": answers, "requestState": state})
	res, _ = second["result"].(map[string]any)
	content, _ := res["content"].([]any)
	var text string
	if len(content) == 1 {
		text, _ = content[0].(map[string]any)["text"].(string)
	}
	if status != http.StatusOK || text != "Ada says hello with 2 roots" {
		t.Errorf("the retry with the three answers: status %d, %v; want the text %q", status, second, "Ada says hello with 2 roots")
	}
}
