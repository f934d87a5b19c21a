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

	"golang.org/x/term"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/secrets"
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

// runAdmin parses a subcommand's flags (they may come after its positional
// arguments; everything after "--" is positional) and runs it.
func runAdmin(group string, cmds []adminCommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w := stdout
		if len(args) == 0 {
			w = stderr
		}
		fmt.Fprintf(w, "Usage: mcp-gateway %s <command> [flags]\n\nCommands:\n", group)
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-40s %s\n", c.synopsis, firstLine(c.text))
		}
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		fs := newFlagSet(group+" "+c.name, "mcp-gateway "+group+" "+c.synopsis, c.text, stderr)
		stateDir := fs.String("state-dir", defaultStateDir(), "the host's state `directory` (env "+stateDirEnv+")")
		if c.flags != nil {
			c.flags(fs)
		}
		positional, code, done := parseInterleaved(fs, args[1:], stdout)
		if done {
			return code
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := c.run(ctx, host.NewClient(*stateDir), positional, os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "mcp-gateway %s %s: %v\n", group, c.name, err)
			var usage *usageError
			if errors.As(err, &usage) {
				return exitUsage
			}
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stderr, "mcp-gateway %s: unknown command %q (run 'mcp-gateway %s --help')\n", group, args[0], group)
	return exitUsage
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

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
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

func runServer(args []string, stdout, stderr io.Writer) int {
	var req host.ServerRequest
	var headers, env listFlag
	var argList, props commaListFlag
	var asJSON, skipAuth bool
	var scopes commaListFlag
	return runAdmin("server", []adminCommand{
		{
			name:     "add",
			synopsis: "add NAME (--url URL | --command CMD | --metadata URL) [flags] [-- ARGS...]",
			text: `Register a server on the host: a remote one (--url, with --header 'Name: value'
whose ${name} placeholders name secrets mcp:<server>:<name>), a local command run
once per sandbox (--command, --args, --dir, --env), or an MCP registry entry,
server.json or server.yaml whose npm or PyPI package runs through npx or uvx
(--metadata).
Credential headers and variables must use a placeholder; store the value with
'mcp-gateway secret set'.`,
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&req.Description, "description", "", "what the server does (mcp-find searches it)")
				fs.StringVar(&req.URL, "url", "", "a remote server's endpoint `url`")
				fs.StringVar(&req.Transport, "transport", "", "a remote server's transport: http or sse (default: detect)")
				fs.Var(&headers, "header", "a header `'Name: value'` sent to the remote server (repeatable, one header each; a name given twice is refused)")
				fs.StringVar(&req.Command, "command", "", "a local server's `command`")
				fs.Var(&argList, "args", "`arguments` of the command, comma-separated or repeated (--args -y,pkg or --args -y --args pkg); arguments after -- are taken as they are")
				fs.StringVar(&req.Dir, "dir", "", "the command's working `directory`")
				fs.Var(&env, "env", "an environment variable `NAME=value` of the command (repeatable, one variable each)")
				fs.Var(&props, "property", "environment `variables` a sandbox may set with mcp-config-set, comma-separated or repeated")
				fs.StringVar(&req.Metadata, "metadata", "", "`url` (or file) of an MCP registry entry, server.json or server.yaml")
				fs.BoolVar(&req.AllowPrivateAddress, "allow-private-address", false, "let this server's URL (and its --metadata URL) reach private, loopback and link-local addresses without a warning (cloud-metadata addresses stay refused; the daemon's --allow-any-address lifts every check)")
				fs.BoolVar(&req.PerClient, "per-client", false, "run a local server as a process per client session (its requests to the client then always reach the right one; ${client_dir} names the process's own directory) instead of one per sandbox")
				fs.BoolVar(&req.Replace, "replace", false, "replace a registration of the same name (its attachments restart)")
				fs.StringVar(&req.ClientID, "client-id", "", "a remote OAuth server's pre-registered client `id` (a confidential client's secret goes in mcp:<server>:client-secret); default: dynamic registration")
				fs.StringVar(&req.ClientMetadataURL, "client-metadata-url", "", "an https `url` of a client ID metadata document you publish, used when the authorization server supports them")
				fs.Var(&scopes, "scope", "OAuth `scopes` to ask for when the server names none, comma-separated or repeated")
				fs.BoolVar(&req.PerSandbox, "per-sandbox", false, "keep a remote OAuth server's tokens per sandbox (each sandbox authorizes it on its own: mcp-gateway auth NAME --sandbox S, or its NAME-authorize tool) instead of one grant shared by its sandboxes")
				fs.BoolVar(&skipAuth, "skip-auth", false, "register a server that wants OAuth without authorizing it now (later: mcp-gateway auth NAME)")
			},
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				if len(args) == 0 {
					return usagef("give the server's NAME")
				}
				req.Name = args[0]
				req.Headers, req.Env, req.Props = headers, env, props
				req.Args = append(argList, args[1:]...)
				req.Scopes = scopes
				var res host.AddResult
				if err := c.Do(ctx, http.MethodPost, "/v1/servers", req, &res); err != nil {
					return err
				}
				if res.OAuth {
					fmt.Fprintf(stdout, "registered mcp server %q; it wants OAuth\n", res.Server.Name)
					if res.Server.PerSandbox {
						fmt.Fprintf(stdout, "its tokens are kept per sandbox: authorize it for each with: mcp-gateway auth %s --sandbox SANDBOX\n", res.Server.Name)
						return nil
					}
					if skipAuth {
						fmt.Fprintf(stdout, "authorize it later with: mcp-gateway auth %s\n", res.Server.Name)
						return nil
					}
					return authorize(ctx, c, res.Server.Name, "", stdout)
				}
				printWarnings(stdout, res.Warnings)
				fmt.Fprintf(stdout, "registered mcp server %q (%d tools)\n", res.Server.Name, len(res.Server.Tools))
				return nil
			},
		},
		{
			name: "ls", synopsis: "ls [--json]", text: "List the registered servers.",
			flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print JSON") },
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				var list []host.ServerSummary
				if err := c.Do(ctx, http.MethodGet, "/v1/servers", nil, &list); err != nil {
					return err
				}
				if asJSON {
					return printJSON(stdout, list)
				}
				tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tKIND\tTOOLS\tSANDBOXES\tENDPOINT")
				for _, s := range list {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Kind, s.Tools, dash(strings.Join(s.Sandboxes, ",")), s.Endpoint)
				}
				return tw.Flush()
			},
		},
		{
			name: "inspect", synopsis: "inspect NAME", text: "Show a registration: its templates as written and whether each secret is set (never a value).",
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				name, err := one(args, "server NAME")
				if err != nil {
					return err
				}
				var info json.RawMessage
				if err := c.Do(ctx, http.MethodGet, "/v1/servers/"+url.PathEscape(name), nil, &info); err != nil {
					return err
				}
				return printJSON(stdout, info)
			},
		},
		{
			name: "rm", synopsis: "rm NAME", text: "Unregister a server, detaching it from every sandbox. Its secrets stay until removed.",
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				name, err := one(args, "server NAME")
				if err != nil {
					return err
				}
				var res host.RemoveResult
				if err := c.Do(ctx, http.MethodDelete, "/v1/servers/"+url.PathEscape(name), nil, &res); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "removed mcp server %q\n", name)
				if len(res.DetachedFrom) > 0 {
					fmt.Fprintf(stdout, "detached from sandboxes: %s\n", strings.Join(res.DetachedFrom, ", "))
				}
				if len(res.Secrets) > 0 {
					fmt.Fprintf(stdout, "its secrets are still stored: %s\nremove them with: %s\n", strings.Join(res.Secrets, ", "), secretRmCommands(res.Secrets))
				}
				return nil
			},
		},
	}, args, stdout, stderr)
}

func secretRmCommands(names []string) string {
	cmds := make([]string, len(names))
	for i, n := range names {
		cmds[i] = "mcp-gateway secret rm " + n
	}
	return strings.Join(cmds, "; ")
}

func runSecret(args []string, stdout, stderr io.Writer) int {
	return runAdmin("secret", []adminCommand{
		{
			name: "set", synopsis: "set mcp:<server>:<name>",
			text: `Store a secret of a registered server, encrypted on the host and bound to the
server's endpoint. The value is read from standard input (a prompt on a terminal),
never from the command line; one trailing newline is dropped.`,
			run: func(ctx context.Context, c *host.Client, args []string, stdin io.Reader, stdout io.Writer) error {
				name, err := one(args, "secret name mcp:<server>:<name>")
				if err != nil {
					return err
				}
				if _, _, err := secrets.ParseName(name); err != nil {
					return &usageError{err.Error()}
				}
				value, err := readSecret(stdin, stdout, name)
				if err != nil {
					return err
				}
				var res struct{ Warnings []string }
				if err := c.Do(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(name), map[string]string{"value": value}, &res); err != nil {
					return err
				}
				printWarnings(stdout, res.Warnings)
				fmt.Fprintf(stdout, "secret %s stored\n", name)
				return nil
			},
		},
		{
			name: "ls", synopsis: "ls", text: "List the stored secrets: names only.",
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				var list []secrets.Entry
				if err := c.Do(ctx, http.MethodGet, "/v1/secrets", nil, &list); err != nil {
					return err
				}
				tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSET")
				for _, e := range list {
					fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.SetAt.Format(time.RFC3339))
				}
				return tw.Flush()
			},
		},
		{
			name: "rm", synopsis: "rm mcp:<server>:<name>", text: "Delete a stored secret.",
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				name, err := one(args, "secret name")
				if err != nil {
					return err
				}
				if err := c.Do(ctx, http.MethodDelete, "/v1/secrets/"+url.PathEscape(name), nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "secret %s removed\n", name)
				return nil
			},
		},
	}, args, stdout, stderr)
}

// readSecret reads a secret's value: from a pipe as is, on a terminal
// after a prompt, without echo.
func readSecret(stdin io.Reader, stdout io.Writer, name string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stdout, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd())) // without echo
		fmt.Fprintln(stdout)
		if err != nil {
			return "", fmt.Errorf("reading the value from the terminal: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading the value from standard input: %w", err)
	}
	v := strings.TrimSuffix(string(b), "\n")
	v = strings.TrimSuffix(v, "\r")
	if v == "" {
		return "", usagef("the value is empty: pipe it on standard input, e.g. printf %%s \"$TOKEN\" | mcp-gateway secret set %s", name)
	}
	return v, nil
}

func runSandbox(args []string, stdout, stderr io.Writer) int {
	var static commaListFlag
	var asJSON bool
	return runAdmin("sandbox", []adminCommand{
		{
			name: "create", synopsis: "create NAME [--static a,b]...",
			text: `Create a sandbox with its own token. With --static, the named servers are
pre-loaded and no discovery tools are offered; without it the sandbox is dynamic:
nothing pre-loaded, and mcp-find, mcp-add and mcp-config-set let its agent attach
servers. Prints the endpoint, the token (shown once) and a client configuration.`,
			flags: func(fs *flag.FlagSet) {
				fs.Var(&static, "static", "`servers` to pre-load (static mode), comma-separated or repeated: --static a,b or --static a --static b")
				fs.BoolVar(&asJSON, "json", false, "print JSON")
			},
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				name, err := one(args, "sandbox NAME")
				if err != nil {
					return err
				}
				req := host.SandboxRequest{Name: name, Static: static}
				var res host.SandboxCreated
				if err := c.Do(ctx, http.MethodPost, "/v1/sandboxes", req, &res); err != nil {
					return err
				}
				if asJSON {
					return printJSON(stdout, res)
				}
				printWarnings(stdout, res.Warnings)
				fmt.Fprintf(stdout, "sandbox %q created (%s", res.Name, res.Mode)
				if len(res.Servers) > 0 {
					fmt.Fprintf(stdout, ": %s", strings.Join(res.Servers, ", "))
				}
				fmt.Fprintf(stdout, ")\nendpoint: %s\ntoken:    %s\n\nClient configuration (mcpServers):\n", res.URL, res.Token)
				cfg := map[string]any{"mcpServers": map[string]any{"mcp-gateway": map[string]any{
					"type": "http", "url": res.URL, "headers": map[string]string{"Authorization": "Bearer " + res.Token},
				}}}
				if err := printJSON(stdout, cfg); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "\nClaude Code:\n  claude mcp add --transport http mcp-gateway %s --header \"Authorization: Bearer %s\"\n", res.URL, res.Token)
				return nil
			},
		},
		{
			name: "ls", synopsis: "ls [--json]", text: "List the sandboxes, their modes and servers.",
			flags: func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print JSON") },
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				var list []host.SandboxSummary
				if err := c.Do(ctx, http.MethodGet, "/v1/sandboxes", nil, &list); err != nil {
					return err
				}
				if asJSON {
					return printJSON(stdout, list)
				}
				tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tMODE\tSERVERS")
				for _, s := range list {
					var servers []string
					for _, name := range s.Servers {
						if st := s.Status[name]; st.State != "ready" {
							name += " (" + st.State + ")"
						}
						servers = append(servers, name)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Mode, dash(strings.Join(servers, ", ")))
				}
				return tw.Flush()
			},
		},
		{
			name: "rm", synopsis: "rm NAME", text: "Remove a sandbox: its token stops working at once and its servers stop.",
			run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
				name, err := one(args, "sandbox NAME")
				if err != nil {
					return err
				}
				var res host.SandboxRemoval
				if err := c.Do(ctx, http.MethodDelete, "/v1/sandboxes/"+url.PathEscape(name), nil, &res); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "sandbox %q removed; its token is revoked\n", name)
				if len(res.Policies) > 0 {
					fmt.Fprintf(stdout, "its policies were removed with it: %s\n", strings.Join(res.Policies, ", "))
				}
				return nil
			},
		},
	}, args, stdout, stderr)
}

// runLoad is `load SERVER --sandbox NAME` and `unload SERVER --sandbox NAME`.
func runLoad(unload bool) func(args []string, stdout, stderr io.Writer) int {
	verb, text := "load", "Attach a registered server to a running sandbox; its connected clients get notifications/tools/list_changed. The attachment is saved."
	if unload {
		verb, text = "unload", "Detach a server from a sandbox; its connected clients get notifications/tools/list_changed and its instance stops."
	}
	return func(args []string, stdout, stderr io.Writer) int {
		fs := newFlagSet(verb, "mcp-gateway "+verb+" SERVER --sandbox NAME", text, stderr)
		stateDir := fs.String("state-dir", defaultStateDir(), "the host's state `directory` (env "+stateDirEnv+")")
		sandbox := fs.String("sandbox", "", "the sandbox's `name`")
		positional, code, done := parseInterleaved(fs, args, stdout)
		if done {
			return code
		}
		if len(positional) != 1 || *sandbox == "" {
			fmt.Fprintf(stderr, "mcp-gateway %s: give one SERVER and --sandbox NAME\n", verb)
			return exitUsage
		}
		server := positional[0]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c := host.NewClient(*stateDir)
		path := "/v1/sandboxes/" + url.PathEscape(*sandbox) + "/servers/" + url.PathEscape(server)
		if unload {
			if err := c.Do(ctx, http.MethodDelete, path, nil, nil); err != nil {
				fmt.Fprintf(stderr, "mcp-gateway unload: %v\n", err)
				return exitError
			}
			fmt.Fprintf(stdout, "unloaded %q from sandbox %q\n", server, *sandbox)
			return exitOK
		}
		var res host.LoadResult
		if err := c.Do(ctx, http.MethodPost, path, nil, &res); err != nil {
			fmt.Fprintf(stderr, "mcp-gateway load: %v\n", err)
			return exitError
		}
		fmt.Fprintf(stdout, "loaded %q into sandbox %q (%d tools)\n", server, *sandbox, len(res.Tools))
		return exitOK
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
