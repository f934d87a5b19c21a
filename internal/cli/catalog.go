package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

func runCatalog(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("catalog", "mcp-gateway catalog [--catalog-file FILE]",
		"List the catalog's servers, name and description, sorted by name: the built-in\nentries merged with the override file.", stderr)
	catalogFile := fs.String("catalog-file", defaultCatalogFile, "catalog override `file` (a missing file is fine)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	cat, err := mcpconfig.LoadCatalog(*catalogFile)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway catalog: %v\n", err)
		return exitUsage
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, name := range cat.Names() {
		e, _ := cat.Lookup(name)
		fmt.Fprintf(tw, "%s\t%s\n", name, e.Description)
	}
	tw.Flush()
	return exitOK
}

func runPull(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("pull", "mcp-gateway pull [--catalog-file FILE] <server>...",
		"Install catalog servers ahead of time, so a sandbox starts them without a download\n(template builds run this).", stderr)
	catalogFile := fs.String("catalog-file", defaultCatalogFile, "catalog override `file` (a missing file is fine)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	cat, err := mcpconfig.LoadCatalog(*catalogFile)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway pull: %v\n", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "mcp-gateway pull: name the servers to install; the catalog has: %s\n", strings.Join(cat.Names(), ", "))
		return exitUsage
	}
	var entries []*mcpconfig.Entry
	for _, name := range fs.Args() {
		e, ok := cat.Lookup(name)
		if !ok {
			fmt.Fprintf(stderr, "mcp-gateway pull: unknown server %q; the catalog has: %s\n", name, strings.Join(cat.Names(), ", "))
			return exitUsage
		}
		entries = append(entries, e)
	}
	for _, e := range entries {
		for _, argv := range e.Install {
			fmt.Fprintf(stdout, "%s: %s\n", e.Name, strings.Join(argv, " "))
			cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr, cmd.Env = stdout, stderr, os.Environ()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(stderr, "mcp-gateway pull: installing %q failed: %s: %v\n", e.Name, strings.Join(argv, " "), err)
				return exitError
			}
		}
	}
	return exitOK
}
