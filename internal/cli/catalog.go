package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
		steps := e.Install
		if fill := npxCacheFill(e); fill != nil {
			steps = append(slices.Clip(steps), fill)
		}
		for _, argv := range steps {
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

// npxCacheFill is the command that installs the whole package tree of an
// entry run with npx into npx's own cache (npm's cache directory, _npx),
// as npx itself would at the server's first start: `npm cache add`, the
// catalog's install command, caches the package alone, not its
// dependencies, so without this a pulled server still needs the registry
// when it starts. The gateway runs such servers with npm's prefer-offline
// (npm_config_prefer_offline, see internal/attach), so the tree installed here is used as it is.
// Nil when the entry is not run with npx, or its package is not plain.
func npxCacheFill(e *mcpconfig.Entry) []string {
	var argv []string
	for _, group := range e.Command {
		argv = append(argv, group...)
	}
	if len(argv) == 0 || filepath.Base(argv[0]) != "npx" {
		return nil
	}
	var pkgs []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case strings.Contains(a, "{{"):
			return nil
		case a == "-y" || a == "--yes" || a == "-q" || a == "--quiet":
		case a == "-p" || a == "--package":
			if i+1 == len(argv) || strings.Contains(argv[i+1], "{{") {
				return nil
			}
			i++
			pkgs = append(pkgs, argv[i])
		case strings.HasPrefix(a, "--package="):
			pkgs = append(pkgs, strings.TrimPrefix(a, "--package="))
		case strings.HasPrefix(a, "-"):
			return nil // an option of npx's whose effect on its cache is not known here
		default:
			if len(pkgs) == 0 {
				pkgs = []string{a} // npx PKG: the package is the command
			}
			i = len(argv)
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	fill := []string{"npm", "exec", "--yes"}
	for _, p := range pkgs {
		fill = append(fill, "--package="+p)
	}
	return append(fill, "--", "true")
}
