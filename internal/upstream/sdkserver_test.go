package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runSDKServer is the fake server's "sdk" mode: a server built with the
// official Go SDK, the reference implementation, on stdio.
func runSDKServer() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-fake", Version: "1.0.0"}, nil)
	anyObject := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: anyObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		meta, err := json.Marshal(req.Params.Meta)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments) + " " + string(meta)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: anyObject}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "sdk slow started")
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "sdk slow cancelled")
		return nil, ctx.Err()
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "sdk server:", err)
		return 1
	}
	return 0
}

func TestGoSDKServer(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "sdk", nil)
	if err := fx.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if init := string(fx.s.InitializeResult()); !strings.Contains(init, `"sdk-fake"`) {
		t.Errorf("InitializeResult = %s", init)
	}

	args := `{"b":[1, 2],"a":"caf\u00e9"}`
	resp, err := fx.s.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":`+args+`,"_meta":{"trace":"t-1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil || len(result.Content) != 1 {
		t.Fatalf("result %s: %v", resp.Result, err)
	}
	if got, want := result.Content[0].Text, args+` {"trace":"t-1"}`; got != want {
		t.Errorf("the SDK server received %s, want %s", got, want)
	}

	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := callTool(callCtx, fx.s, "slow", `{}`)
		done <- err
	}()
	fx.stderr.waitFor(t, ctx, "sdk slow started")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	fx.stderr.waitFor(t, ctx, "sdk slow cancelled") // the handler's ctx was cancelled
}
