package mcpconfig_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

func ExampleParse() {
	config := []byte(`{
		"memory": null,
		"filesystem": {"paths": ["/home/user", "/tmp"], "envs": {"DEBUG": "1"}},
		"github/owner/repo": {"installCmd": "npm ci", "runCmd": "node dist/index.js"},
		"my-tool": {"run_cmd": "python3 server.py", "colour": "blue"}
	}`)
	servers, warnings, err := mcpconfig.Parse(config, mcpconfig.Builtin())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range servers {
		fmt.Printf("%s (%s): %q dir=%q env=%v\n", s.Name, s.Kind, s.Command, s.Dir, s.Env)
		if s.GitHub != nil {
			fmt.Printf("  clone %s, install %q\n", s.GitHub.CloneURL(""), s.GitHub.InstallCmd)
		}
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// filesystem (catalog): ["npx" "-y" "@modelcontextprotocol/server-filesystem" "/home/user" "/tmp"] dir="" env=map[DEBUG:1]
	// github/owner/repo (github): ["/bin/sh" "-c" "node dist/index.js"] dir="" env=map[]
	//   clone https://github.com/owner/repo.git, install "npm ci"
	// memory (catalog): ["npx" "-y" "@modelcontextprotocol/server-memory"] dir="" env=map[]
	// my-tool (local): ["/bin/sh" "-c" "python3 server.py"] dir="/" env=map[]
	// warning: mcp server "my-tool": unknown property "colour" ignored
}

func ExampleParse_errors() {
	_, _, err := mcpconfig.Parse([]byte(`{"filesystem": {}, "arxiv": {"storagePath": 5}}`), nil)
	fmt.Println(err)

	var e *mcpconfig.Error
	if errors.As(err, &e) {
		fmt.Printf("first: server %q, property %q\n", e.Server, e.Property)
	}
	// Output:
	// mcp server "arxiv": property "storagePath" must be a string
	// mcp server "filesystem": property "paths" is required
	// first: server "arxiv", property "storagePath"
}

func ExampleCheck() {
	for _, mcp := range []string{
		`{"brave": {"apiKey": "k"}}`,            // unknown to this gateway: the gateway decides
		`{"filesystem": {}}`,                    // a missing property: the gateway decides
		`{"github/owner": {"runCmd": "x"}}`,     // malformed: HTTP 400
		`{"my-tool": {"runCmd": "   "}}`,        // blank runCmd: HTTP 400
		`{"memory": {"envs": {"API-KEY": ""}}}`, // bad env name: HTTP 400
	} {
		if err := mcpconfig.Check([]byte(mcp)); err != nil {
			fmt.Println("400:", err)
			continue
		}
		fmt.Println("ok")
	}
	// Output:
	// ok
	// ok
	// 400: mcp server "github/owner": a GitHub server is named github/<owner>/<repo>, owner and repo made of letters, digits, "_", "." and "-" (and not "." or "..")
	// 400: mcp server "my-tool": property "runCmd" must be a non-blank string
	// 400: mcp server "memory": env "API-KEY" is not a valid name; use letters, digits and "_", not starting with a digit
}

func ExampleLoadCatalog() {
	// The gateway passes mcpconfig.DefaultCatalogPath; a missing file is fine.
	cat, err := mcpconfig.LoadCatalog("testdata/override.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range cat.Names() {
		en, _ := cat.Lookup(name)
		fmt.Printf("%-18s %s\n", name, en.Description)
	}

	en, _ := cat.Lookup("everything")
	fmt.Println(en.Command, en.Properties["transport"].Default)
	for _, argv := range en.Install {
		fmt.Println("pull runs:", strings.Join(argv, " "))
	}
	// Output:
	// arxiv              arXiv through the template's own wrapper
	// duckduckgo         Search the web with DuckDuckGo and fetch the pages found
	// everything         The MCP reference server that exercises every feature
	// fetch              Fetch a web page and convert it to markdown
	// filesystem         Read, write, move and search files inside the given directories
	// memory             A persistent knowledge graph of entities, relations and observations
	// sequentialthinking Work through a problem step by step, revising and branching thoughts
	// time               Current time and conversion between time zones
	// [[npx -y @modelcontextprotocol/server-everything] [{{transport}}]] stdio
	// pull runs: npm cache add @modelcontextprotocol/server-everything
}

func ExampleLoadCatalog_broken() {
	_, err := mcpconfig.LoadCatalog("testdata/bad-placeholder.json")
	fmt.Println(err)

	var ce *mcpconfig.CatalogError
	if errors.As(err, &ce) {
		fmt.Printf("file %q, entry %q, property %q\n", ce.File, ce.Entry, ce.Property)
	}
	// Output:
	// catalog testdata/bad-placeholder.json: entry "arxiv": field "command": group 2: {{storagePth}} names no declared property; declare it under "properties"
	// file "testdata/bad-placeholder.json", entry "arxiv", property "storagePth"
}

func ExamplePlaceholderNames() {
	names, err := mcpconfig.PlaceholderNames("Bearer ${api-key} for ${TEAM}")
	fmt.Println(names, err)
	value, err := mcpconfig.Expand("Bearer ${api-key}", func(name string) (string, bool) { return "s3cr3t", name == "api-key" })
	fmt.Println(value, err)
	_, err = mcpconfig.Expand("Bearer ${other}", func(string) (string, bool) { return "", false })
	fmt.Println(err)
	// Output:
	// [api-key TEAM] <nil>
	// Bearer s3cr3t <nil>
	// ${other} is not set
}
