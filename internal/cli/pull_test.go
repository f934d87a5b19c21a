package cli

import (
	"slices"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// pull fills npx's cache with the whole package tree of each catalog
// server run with npx (the catalog's own `npm cache add` caches the
// package alone): the command, for the built-in entries and for the
// shapes an override may write.
func TestNpxCacheFill(t *testing.T) {
	cat, err := mcpconfig.LoadCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	fill := func(pkgs ...string) []string {
		argv := []string{"npm", "exec", "--yes"}
		for _, p := range pkgs {
			argv = append(argv, "--package="+p)
		}
		return append(argv, "--", "true")
	}
	for name, want := range map[string][]string{
		"memory":             fill("@modelcontextprotocol/server-memory"),
		"filesystem":         fill("@modelcontextprotocol/server-filesystem"),
		"sequentialthinking": fill("@modelcontextprotocol/server-sequential-thinking"),
		"time":               nil,
		"arxiv":              nil,
	} {
		e, ok := cat.Lookup(name)
		if !ok {
			t.Fatalf("no catalog entry %q", name)
		}
		if got := npxCacheFill(e); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, tt := range []struct {
		command [][]string
		want    []string
	}{
		{[][]string{{"npx"}, {"--yes"}, {"pkg@1.2.3"}, {"--flag", "{{p}}"}}, fill("pkg@1.2.3")},
		{[][]string{{"npx", "-y", "-p", "a", "--package=b", "run-it", "arg"}}, fill("a", "b")},
		{[][]string{{"/usr/bin/npx", "-y", "pkg"}}, fill("pkg")},
		{[][]string{{"npx", "-y", "{{pkg}}"}}, nil},
		{[][]string{{"npx", "-y", "-p", "{{pkg}}", "x"}}, nil},
		{[][]string{{"npx", "--registry", "https://r.example", "pkg"}}, nil},
		{[][]string{{"npx", "-y"}}, nil},
		{[][]string{{"node", "server.js"}}, nil},
	} {
		if got := npxCacheFill(&mcpconfig.Entry{Command: tt.command}); !slices.Equal(got, tt.want) {
			t.Errorf("command %q: %q, want %q", tt.command, got, tt.want)
		}
	}
}
