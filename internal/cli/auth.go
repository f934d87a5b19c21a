package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
)

// runAuth is `mcp-gateway auth NAME | --all | status | rm`.
func runAuth(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !slices.Contains([]string{"-h", "-help", "--help", "help", "status", "rm", "login"}, args[0]) {
		args = append([]string{"login"}, args...)
	}
	return runAdmin("auth", []adminCommand{authLogin(), authStatus(), authRm()}, args, stdout, stderr)
}

func authLogin() adminCommand {
	var sandbox string
	var scopes commaListFlag
	var noScope, all bool
	return adminCommand{
		name: "login", synopsis: "NAME | --all [--scope S]... [--no-scope] [--sandbox SANDBOX]",
		text: `Authorize a registered remote server that wants OAuth: prints the URL to open in
a browser, waits for the authorization server to send the browser back to the
host's loopback callback, and stores the tokens (encrypted, bound to the server's
URL and issuer). 'mcp-gateway auth NAME' and 'mcp-gateway auth login NAME' are the same.
The scopes asked for are --scope's (this run only), else server add's --scope, else
those the server names; a server that lists the scopes it supports must list each.
--no-scope asks for none. --all authorizes every registered server that wants
OAuth, one after the other. A server registered --per-sandbox is authorized for
one sandbox at a time: --sandbox.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sandbox, "sandbox", "", "the `sandbox` whose own grant to authorize (a server registered --per-sandbox)")
			fs.Var(&scopes, "scope", "ask for these OAuth `scopes` alone this time, in place of the registration's (comma-separated or repeated)")
			fs.BoolVar(&noScope, "no-scope", false, "ask for no scope at all")
			fs.BoolVar(&all, "all", false, "authorize every registered server that wants OAuth")
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			if noScope && len(scopes) > 0 {
				return usagef("give --scope or --no-scope, not both")
			}
			opt := authOptions{scopes: scopes, noScope: noScope}
			if all {
				if len(args) > 0 || sandbox != "" {
					return usagef("give a server NAME (and --sandbox) or --all, not both")
				}
				return authorizeAll(ctx, c, opt, stdout)
			}
			name, err := one(args, "server NAME (or --all)")
			if err != nil {
				return err
			}
			return authorize(ctx, c, name, sandbox, opt, stdout)
		},
	}
}

// authOptions are auth's scope flags.
type authOptions struct {
	scopes  []string
	noScope bool
}

func (o authOptions) query(q url.Values) {
	for _, s := range o.scopes {
		q.Add("scope", s)
	}
	if o.noScope {
		q.Set("no_scope", "1")
	}
}

// authorizeAll authorizes, one after the other, every registered server
// that wants OAuth with one grant for its sandboxes; one registered
// --per-sandbox is named, not authorized (it takes --sandbox).
func authorizeAll(ctx context.Context, c *host.Client, opt authOptions, stdout io.Writer) error {
	var list []oauth.Status
	if err := c.Do(ctx, http.MethodGet, "/v1/auth", nil, &list); err != nil {
		return err
	}
	var names, perSandbox []string
	for _, s := range list {
		switch {
		case s.Sandbox != "":
			if !slices.Contains(perSandbox, s.Server) {
				perSandbox = append(perSandbox, s.Server)
			}
		case !slices.Contains(names, s.Server):
			names = append(names, s.Server)
		}
	}
	if len(names) == 0 && len(perSandbox) == 0 {
		fmt.Fprintln(stdout, "no registered server wants OAuth")
		return nil
	}
	var failed []string
	for _, name := range names {
		if err := authorize(ctx, c, name, "", opt, stdout); err != nil {
			fmt.Fprintf(stdout, "mcp server %q: %v\n", name, err)
			failed = append(failed, name)
		}
	}
	for _, name := range perSandbox {
		fmt.Fprintf(stdout, "mcp server %q keeps an OAuth grant per sandbox: authorize it with mcp-gateway auth %s --sandbox SANDBOX\n", name, name)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d authorizations failed: %s", len(failed), len(names), strings.Join(failed, ", "))
	}
	return nil
}

func authStatus() adminCommand {
	var asJSON bool
	return adminCommand{
		name: "status", synopsis: "status [NAME] [--json]",
		text: `Show, per remote server that wants OAuth (or server NAME alone), whether it is
authorized, its token's expiry and granted scopes, the scopes asked for and those
the server supports (never a token).`,
		flags: jsonFlag(&asJSON),
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			path := "/v1/auth"
			switch len(args) {
			case 0:
			case 1:
				path += "?server=" + url.QueryEscape(args[0])
			default:
				return usagef("give at most one server NAME")
			}
			var list []oauth.Status
			if err := c.Do(ctx, http.MethodGet, path, nil, &list); err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, list)
			}
			err := printTable(stdout, "SERVER\tSANDBOX\tAUTHORIZED\tEXPIRES\tSCOPES\tREQUESTED\tSUPPORTED\tISSUER", func(tw io.Writer) {
				for _, s := range list {
					authStatusRow(tw, s)
				}
			})
			if err != nil {
				return err
			}
			for _, s := range list {
				if s.Pending != "" { // a step-up a call waits for, or an `auth` not completed
					fmt.Fprintf(stdout, "\nmcp server %q (sandbox %s) waits for an authorization: open this URL in a browser on this host and approve:\n%s\n", s.Server, dash(s.Sandbox), s.Pending)
				}
			}
			return nil
		},
	}
}

// authStatusRow is one grant's row of auth status.
func authStatusRow(tw io.Writer, s oauth.Status) {
	exp := "-"
	if !s.Expiry.IsZero() {
		exp = s.Expiry.UTC().Format(time.RFC3339)
	}
	authorized := "no"
	if s.Authorized {
		authorized = "yes"
	}
	if s.Error != "" {
		authorized = "no (" + s.Error + ")"
	}
	sb := s.Sandbox
	if sb == "" {
		sb = "(all)" // one grant shared by the server's sandboxes
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Server, sb, authorized, exp, dash(strings.Join(s.Scopes, " ")),
		dash(strings.Join(s.Requested, " ")), dash(strings.Join(s.Supported, " ")), dash(s.Issuer))
}

func authRm() adminCommand {
	var all bool
	var sandbox string
	return adminCommand{
		name: "rm", synopsis: "rm NAME [--sandbox SANDBOX] | --all",
		text: `Forget the OAuth tokens of a server (or of every server with --all); it must be authorized again.
For a server registered --per-sandbox, --sandbox forgets one sandbox's grant (without it, every sandbox's).`,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&all, "all", false, "forget the tokens of every server")
			fs.StringVar(&sandbox, "sandbox", "", "forget only this `sandbox`'s own grant (a server registered --per-sandbox)")
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			path := "/v1/auth/-?all=1"
			if !all {
				name, err := one(args, "server NAME (or --all)")
				if err != nil {
					return err
				}
				path = "/v1/auth/" + url.PathEscape(name)
				if sandbox != "" {
					path += "?sandbox=" + url.QueryEscape(sandbox)
				}
			} else if len(args) > 0 || sandbox != "" {
				return usagef("give a server NAME (and --sandbox) or --all, not both")
			}
			var res struct{ Removed []string }
			if err := c.Do(ctx, http.MethodDelete, path, nil, &res); err != nil {
				return err
			}
			printForgotten(stdout, res.Removed)
			return nil
		},
	}
}

// printForgotten names the grants auth rm removed: a server's, or a
// server's for one sandbox (server@sandbox).
func printForgotten(stdout io.Writer, removed []string) {
	for _, n := range removed {
		if server, sb, ok := strings.Cut(n, "@"); ok {
			fmt.Fprintf(stdout, "forgot the OAuth tokens of mcp server %q for sandbox %q\n", server, sb)
			continue
		}
		fmt.Fprintf(stdout, "forgot the OAuth tokens of mcp server %q\n", n)
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdout, "no server had OAuth tokens")
	}
}

// authorize runs a server's authorization: the host starts it and gives
// the URL, the person opens it, the host's callback completes it.
// sandbox names the sandbox whose own grant it is ("" for the server's).
func authorize(ctx context.Context, c *host.Client, name, sandbox string, opt authOptions, stdout io.Writer) error {
	q, forWhom := url.Values{}, ""
	if sandbox != "" {
		q.Set("sandbox", sandbox)
		forWhom = fmt.Sprintf(" for sandbox %q", sandbox)
	}
	query := ""
	if len(q) > 0 {
		query = "?" + q.Encode() // the wait names the grant alone
	}
	opt.query(q)
	start := "/v1/auth/" + url.PathEscape(name)
	if len(q) > 0 {
		start += "?" + q.Encode()
	}
	var started struct{ URL string }
	if err := c.Do(ctx, http.MethodPost, start, nil, &started); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "To authorize mcp server %q%s, open this URL in a browser on this host:\n\n  %s\n\nWaiting for the authorization...\n", name, forWhom, started.URL)
	var st oauth.Status
	if err := c.Do(ctx, http.MethodPost, "/v1/auth/"+url.PathEscape(name)+"/wait"+query, nil, &st); err != nil {
		return err
	}
	scopes := strings.Join(st.Scopes, " ")
	if scopes == "" {
		scopes = "none named"
	}
	fmt.Fprintf(stdout, "mcp server %q is authorized%s (issuer %s, scopes: %s)\n", name, forWhom, st.Issuer, scopes)
	return nil
}
