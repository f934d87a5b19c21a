// Command mcp-gateway puts many MCP servers behind one authenticated MCP
// endpoint. See README.md and docs/reference.md, or run mcp-gateway --help.
package main

import (
	"os"

	"github.com/mcp-gateway/mcp-gateway/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
