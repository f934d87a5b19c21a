package mcpconfig_test

import (
	"errors"
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

func ExampleParse_remote() {
	config := []byte(`{
		"notion": {
			"url": "https://mcp.notion.com/mcp",
			"headers": {"Authorization": "Bearer ${NOTION_TOKEN}"},
			"envs": {"NOTION_TOKEN": "ntn_123"}
		},
		"legacy": {"url": "https://old.example.com/sse", "transport": "sse"}
	}`)
	servers, _, err := mcpconfig.Parse(config, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range servers {
		fmt.Printf("%s (%s): %s transport=%q headers=%v\n", s.Name, s.Kind, s.URL, s.Transport, s.Headers)
	}
	// Output:
	// legacy (remote): https://old.example.com/sse transport="sse" headers=map[]
	// notion (remote): https://mcp.notion.com/mcp transport="" headers=map[Authorization:Bearer ${NOTION_TOKEN}]
}

func ExampleServer_ResolveHeaders() {
	servers, _, _ := mcpconfig.Parse([]byte(`{"notion": {
		"url": "https://mcp.notion.com/mcp",
		"headers": {"Authorization": "Bearer ${NOTION_TOKEN}", "Notion-Version": "2022-06-28"},
		"envs": {"NOTION_TOKEN": "ntn_123"}
	}}`), nil)
	notion := servers[0]

	// In a sandbox, placeholders come from the server's own envs.
	headers, err := notion.ResolveHeaders(nil)
	fmt.Println(headers, err)

	// Elsewhere, from any source (os.LookupEnv, a secrets store): here one
	// that lacks the token.
	store := map[string]string{"GITHUB_TOKEN": "ghp_x"}
	_, err = notion.ResolveHeaders(func(name string) (string, bool) { v, ok := store[name]; return v, ok })
	fmt.Println(err)
	var e *mcpconfig.Error
	if errors.As(err, &e) && errors.Is(err, mcpconfig.ErrMissingSecret) {
		fmt.Printf("server %q, header %q, placeholder %q\n", e.Server, e.Header, e.Env)
	}
	// Output:
	// map[Authorization:Bearer ntn_123 Notion-Version:2022-06-28] <nil>
	// mcp server "notion": header "Authorization" needs ${NOTION_TOKEN}, which is not set
	// server "notion", header "Authorization", placeholder "NOTION_TOKEN"
}

func ExampleParse_mcpServers() {
	// The configuration file of Claude Desktop, Cursor or Windsurf, as it is.
	config := []byte(`{"mcpServers": {
		"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"files": {"command": "/opt/fs/server", "args": ["/home/user"], "env": {"LOG": "debug"}, "cwd": "/opt/fs"},
		"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
		           "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "env": {"GITHUB_TOKEN": "ghp_x"}},
		"old": {"disabled": true, "command": "old-server"}
	}}`)
	servers, warnings, err := mcpconfig.Parse(config, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range servers {
		if s.Kind == mcpconfig.KindRemote {
			fmt.Printf("%s (%s): %s transport=%q\n", s.Name, s.Kind, s.URL, s.Transport)
			continue
		}
		fmt.Printf("%s (%s): %q dir=%q env=%v\n", s.Name, s.Kind, s.Command, s.Dir, s.Env)
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// files (local): ["/opt/fs/server" "/home/user"] dir="/opt/fs" env=map[LOG:debug]
	// github (remote): https://api.githubcopilot.com/mcp/ transport="http"
	// memory (local): ["npx" "-y" "@modelcontextprotocol/server-memory"] dir="" env=map[]
	// warning: mcp server "old": "disabled" is true; the server is skipped
}
