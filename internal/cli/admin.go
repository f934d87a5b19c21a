package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
)

// The administration commands speak to a running host daemon over its
// control socket; the daemon serializes them and owns the state.

// listFlag is a repeatable string flag: --header 'A: b' --header 'C: d'.
// Its values are taken whole, since a header's or a variable's value may
// hold a comma.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// commaListFlag is a list flag given repeated, comma-separated, or both, as
// sbx takes it: --static a --static b, --static a,b. Items are read as one
// CSV record, so a comma inside double quotes stays in its item
// (--args '"--only=a,b"').
type commaListFlag []string

func (l *commaListFlag) String() string { return strings.Join(*l, ",") }

func (l *commaListFlag) Set(v string) error {
	if v == "" {
		return nil
	}
	r := csv.NewReader(strings.NewReader(v))
	r.LazyQuotes = true
	items, err := r.Read()
	if err != nil {
		return fmt.Errorf("%q is not a comma-separated list: %v", v, err)
	}
	if _, err := r.Read(); err != io.EOF {
		// a line break outside quotes ends a CSV record: what follows it
		// would be dropped
		return fmt.Errorf("%q holds a line break: quote the item that holds it, or pass it after --", v)
	}
	*l = append(*l, items...)
	return nil
}

// adminCommand is one administration subcommand.
type adminCommand struct {
	name, synopsis, text string
	flags                func(fs *flag.FlagSet) // registers its own flags
	run                  func(ctx context.Context, c *host.Client, args []string, stdin io.Reader, stdout io.Writer) error
}

// adminTimeout bounds one administration command's exchange with the daemon.
const adminTimeout = 5 * time.Minute

// stateDirFlag registers --state-dir, the daemon's state directory whose
// control socket the administration commands speak to.
func stateDirFlag(fs *flag.FlagSet) *string {
	return fs.String("state-dir", defaultStateDir(), "the host's state `directory` (env "+stateDirEnv+")")
}

// jsonFlag registers --json on a command's flag set.
func jsonFlag(asJSON *bool) func(fs *flag.FlagSet) {
	return func(fs *flag.FlagSet) { fs.BoolVar(asJSON, "json", false, "print JSON") }
}

// runAdmin parses a subcommand's flags (they may come after its positional
// arguments; everything after "--" is positional) and runs it.
func runAdmin(group string, cmds []adminCommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return adminUsage(group, cmds, len(args) == 0, stdout, stderr)
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return runAdminCommand(group, c, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "mcp-gateway %s: unknown command %q (run 'mcp-gateway %s --help')\n", group, args[0], group)
	return exitUsage
}

// adminUsage lists a group's subcommands: on stdout when asked for, on
// stderr (exit code 2) when no subcommand was given.
func adminUsage(group string, cmds []adminCommand, missing bool, stdout, stderr io.Writer) int {
	w := stdout
	if missing {
		w = stderr
	}
	fmt.Fprintf(w, "Usage: mcp-gateway %s <command> [flags]\n\nCommands:\n", group)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\n%s", c.synopsis, indent(c.text, "      "))
	}
	if missing {
		return exitUsage
	}
	return exitOK
}

// runAdminCommand parses one subcommand's flags and runs it against the
// daemon of --state-dir; group is "" for a command of its own (load, unload).
func runAdminCommand(group string, c adminCommand, args []string, stdout, stderr io.Writer) int {
	name, synopsis := c.name, c.synopsis
	if group != "" {
		name, synopsis = group+" "+c.name, group+" "+c.synopsis
	}
	fs := newFlagSet(name, "mcp-gateway "+synopsis, c.text, stderr)
	stateDir := stateDirFlag(fs)
	if c.flags != nil {
		c.flags(fs)
	}
	positional, code, done := parseInterleaved(fs, args, stdout)
	if done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := c.run(ctx, host.NewClient(*stateDir), positional, os.Stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway %s: %v\n", name, err)
		var usage *usageError
		if errors.As(err, &usage) {
			return exitUsage
		}
		return exitError
	}
	return exitOK
}

// listCommand is an `ls [--json]` subcommand: it gets the list at path
// from the daemon and prints it as JSON (--json) or as a table under
// header, each item's rows written by row.
func listCommand[T any](text, path, header string, row func(tw io.Writer, item T)) adminCommand {
	var asJSON bool
	return adminCommand{
		name: "ls", synopsis: "ls [--json]", text: text,
		flags: jsonFlag(&asJSON),
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			var list []T
			if err := c.Do(ctx, http.MethodGet, path, nil, &list); err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, list)
			}
			return printTable(stdout, header, func(tw io.Writer) {
				for _, item := range list {
					row(tw, item)
				}
			})
		},
	}
}

// printTable prints a table: the header line, then the rows, in aligned columns.
func printTable(w io.Writer, header string, rows func(tw io.Writer)) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}

// usageError is a command used wrongly (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseInterleaved parses flags anywhere among the arguments.
func parseInterleaved(fs *flag.FlagSet, args []string, stdout io.Writer) (positional []string, code int, done bool) {
	for {
		if code, done := parse(fs, args, stdout); done {
			return nil, code, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, false
		}
		// fs.Parse stops at the first positional argument, or consumes "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), 0, false
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// indent returns text with prefix before each of its lines, and a final
// newline: a description shown in full under its synopsis.
func indent(text, prefix string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if line != "" {
			b.WriteString(prefix)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

func one(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", usagef("give exactly one %s, got %d arguments", what, len(args))
	}
	return args[0], nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

// runLoad is `load SERVER --sandbox NAME` and `unload SERVER --sandbox NAME`.
func runLoad(unload bool) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return runAdminCommand("", loadCommand(unload), args, stdout, stderr)
	}
}

// loadCommand is load, or unload: a server attached to a sandbox or detached from it.
func loadCommand(unload bool) adminCommand {
	verb, text := "load", "Attach a registered server to a running sandbox; its connected clients get notifications/tools/list_changed. The attachment is saved."
	if unload {
		verb, text = "unload", "Detach a server from a sandbox; its connected clients get notifications/tools/list_changed and its instance stops."
	}
	var sandbox string
	return adminCommand{
		name: verb, synopsis: verb + " SERVER --sandbox NAME", text: text,
		flags: func(fs *flag.FlagSet) { fs.StringVar(&sandbox, "sandbox", "", "the sandbox's `name`") },
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			if len(args) != 1 || sandbox == "" {
				return usagef("give one SERVER and --sandbox NAME")
			}
			server := args[0]
			path := "/v1/sandboxes/" + url.PathEscape(sandbox) + "/servers/" + url.PathEscape(server)
			if unload {
				if err := c.Do(ctx, http.MethodDelete, path, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "unloaded %q from sandbox %q\n", server, sandbox)
				return nil
			}
			var res host.LoadResult
			if err := c.Do(ctx, http.MethodPost, path, nil, &res); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "loaded %q into sandbox %q (%d tools)\n", server, sandbox, len(res.Tools))
			return nil
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
