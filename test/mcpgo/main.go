// Command mcpgo is an MCP server built on github.com/mark3labs/mcp-go, for
// the end-to-end tests: a server whose decoder matches member names to
// struct fields regardless of case (Go's encoding/json), as many real
// servers do. It speaks stdio.
//
// Its tool read_file returns the path it was asked to read (it reads
// nothing), read_any the same without declaring its properties; its resources note://public and note://secret return their
// URIs. So a test sees exactly which member the server took for the path
// or the URI.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type readFileArgs struct {
	Path string `json:"path"`
}

func main() {
	s := server.NewMCPServer("mcpgo-e2e", "1", server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false))
	s.AddTool(mcp.NewTool("read_file", mcp.WithDescription("Says which path it would read."),
		mcp.WithString("path", mcp.Required(), mcp.Description("The file to read."))),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a readFileArgs) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("read " + a.Path), nil
		}))
	// read_any reads the same struct but declares no properties: the
	// gateway cannot know which names it reads.
	s.AddTool(mcp.NewTool("read_any", mcp.WithDescription("Says which path it would read; declares no properties.")),
		mcp.NewTypedToolHandler(func(ctx context.Context, req mcp.CallToolRequest, a readFileArgs) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("read " + a.Path), nil
		}))
	for _, uri := range []string{"note://public", "note://secret"} {
		s.AddResource(mcp.NewResource(uri, uri, mcp.WithMIMEType("text/plain")),
			func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "note " + req.Params.URI}}, nil
			})
	}
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgo:", err)
		os.Exit(1)
	}
}
