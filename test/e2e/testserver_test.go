package e2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testServerEnv makes the test binary run as a stdio MCP server of our own:
// one that misbehaves on request, for the failure cases the npm servers do
// not offer.
const testServerEnv = "MCP_GATEWAY_E2E_SERVER"

// testServerCmd is a runCmd starting that server.
func testServerCmd() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return testServerEnv + "=1 exec " + exe
}

type echoArgs struct {
	Text string `json:"text"`
}

type envArgs struct {
	Name string `json:"name"`
}

func runTestServer() {
	if os.Getenv(stateServerEnv) != "" {
		runStateServer()
		return
	}
	if os.Getenv(apps2ServerEnv) != "" { // apps2_test.go
		runApps2Server()
		return
	}
	var opts *mcp.ServerOptions
	if os.Getenv("E2E_SERVER_MODERN_ONLY") != "" {
		opts = &mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}}
	}
	if ext := os.Getenv("E2E_SERVER_EXTENSIONS"); ext != "" {
		opts = withExtensions(opts, ext)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-test-server", Version: "1"}, opts)
	if os.Getenv("E2E_SERVER_EXTENSIONS") != "" {
		addClientCapsTool(s)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask_name", Description: "Asks the user's name (a 2026-07-28 input request), then greets."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && r != nil && r.Action == "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Hello, %v!", r.Content["name"])}}}, nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Returns an environment variable of the server process."},
		func(ctx context.Context, req *mcp.CallToolRequest, a envArgs) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(a.Name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v:%s", ok, v)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the server's pid."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits mid-call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "about to crash on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage", Description: "Writes a line that is not JSON-RPC to stdout."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stdout, "this is not JSON-RPC")
			select {} // the gateway must give up on this process
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Blocks until the call is cancelled, then says so on stderr."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "slow: the call was cancelled")
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Returns a tool error."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed as asked"}}}, nil, nil
		})
	if f := os.Getenv("E2E_SERVER_REQUIRES"); f != "" {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(os.Stderr, "fatal: %s is missing\n", f)
			os.Exit(5)
		}
	}
	if strings.Contains(os.Getenv("E2E_SERVER_MODE"), "stderr-then-exit") {
		fmt.Fprintln(os.Stderr, "fatal: cannot open the database")
		os.Exit(4)
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
