// Command mcp-gateway-codemode is the code-mode runner of mcp-gateway: the
// gateway starts it (found beside its own executable, else on PATH, else
// at --code-mode-runner) and hands it one JavaScript program at a time
// over its stdin and stdout (internal/codemode/proto), so that the
// JavaScript engine, and the memory a program uses, live in this process
// and not in the gateway's. It is not meant to be run by hand.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/engine"
)

func main() {
	idle := flag.Duration("idle", 0, "exit after this long without a run (0: when stdin ends)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "mcp-gateway-codemode runs mcp-gateway's code-mode programs; mcp-gateway starts it (docs/code-mode.md), it is not run by hand.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := engine.Serve(os.Stdin, os.Stdout, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-gateway-codemode:", err)
		os.Exit(1)
	}
}
