// Command echo is the benchmark's MCP server: the official Go SDK's server with
// one tool, echo, that returns its text argument. It speaks stdio by default
// (so the gateway can front it as a local server) or streamable HTTP with
// -http, the direct target the gateway is compared with.
//
//	echo                          stdio
//	echo -http 127.0.0.1:0        streamable HTTP at /mcp, stateful (sessions)
//	echo -http ... -stateless     sessionless, for the 2026-07-28 era
//	echo -tools 100               echo plus 99 more tools (echo_1 ... echo_99), for list scale
//	echo -progress                also the tool progress: {"count": N, "message": M} sends N
//	                              progress notifications with an M-byte message, as fast
//	                              as it can, then answers "done"
//
// In HTTP mode it prints "listening on http://ADDR/mcp" on standard output
// once it accepts connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

type progressArgs struct {
	Count   int `json:"count" jsonschema:"how many progress notifications to send"`
	Message int `json:"message,omitempty" jsonschema:"the length of each notification's message"`
}

// progress sends count progress notifications for the call's progress token
// (none without one), then answers "done".
func progress(ctx context.Context, req *mcp.CallToolRequest, in progressArgs) (*mcp.CallToolResult, any, error) {
	if token := req.Params.GetProgressToken(); token != nil {
		msg := strings.Repeat("p", in.Message)
		for i := range in.Count {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(in.Count), Message: msg})
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
}

func main() {
	httpAddr := flag.String("http", "", "serve streamable HTTP on this `address` (127.0.0.1:0 picks a port) instead of stdio")
	stateless := flag.Bool("stateless", false, "HTTP: serve without sessions (the 2026-07-28 era)")
	jsonResponse := flag.Bool("json", false, "HTTP: answer with application/json instead of an SSE stream")
	tools := flag.Int("tools", 1, "number of tools: echo, then echo_1 ... echo_N-1")
	withProgress := flag.Bool("progress", false, "also serve the tool progress, which sends many progress notifications")
	flag.Parse()
	log.SetPrefix("echo: ")
	log.SetFlags(0)

	server := mcp.NewServer(&mcp.Implementation{Name: "bench-echo", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text argument."}, echo)
	for i := 1; i < *tools; i++ {
		mcp.AddTool(server, &mcp.Tool{
			Name:        fmt.Sprintf("echo_%d", i),
			Description: fmt.Sprintf("Returns its text argument (copy %d of the echo tool, for list benchmarks).", i),
		}, echo)
	}

	if *withProgress {
		mcp.AddTool(server, &mcp.Tool{Name: "progress", Description: "Sends count progress notifications, then answers done."}, progress)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *httpAddr == "" {
		if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			log.Fatal(err)
		}
		return
	}

	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		log.Fatal(err)
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: *stateless, JSONResponse: *jsonResponse})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stdout, "listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
