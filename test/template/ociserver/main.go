// Command ociserver is the tiny MCP server (official Go SDK, stdio) that the
// template tests put in an OCI image to run as host mode runs OCI packages
// (docker run -i --rm ...). Its tool report says what the container sees:
// its arguments, the variables GREETING and API_KEY, its network
// interfaces, its capabilities, no_new_privs and its memory and process
// limits, so a test sees the isolation docker was asked for.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "ociserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "report", Description: "Says what the container sees."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: report()}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "args=%s\n", strings.Join(os.Args[1:], " "))
	for _, name := range []string{"GREETING", "API_KEY", "GATEWAY_ACCESS_TOKEN"} {
		v, ok := os.LookupEnv(name)
		fmt.Fprintf(&b, "%s=%s set=%v\n", name, v, ok)
	}
	ifaces, _ := net.Interfaces()
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	fmt.Fprintf(&b, "interfaces=%s\n", strings.Join(names, ","))
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "CapEff:") || strings.HasPrefix(line, "NoNewPrivs:") {
				fmt.Fprintln(&b, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	fmt.Fprintf(&b, "memory.max=%s\n", first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	fmt.Fprintf(&b, "pids.max=%s\n", first("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"))
	return b.String()
}

// first returns the trimmed content of the first readable file.
func first(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return "unknown"
}
