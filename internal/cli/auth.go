package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
)

// runAuth is `mcp-gateway auth NAME | status | rm`.
func runAuth(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "help" && args[0] != "status" && args[0] != "rm" && args[0] != "login" {
		args = append([]string{"login"}, args...)
	}
	return runAdmin("auth", []adminCommand{authLogin(), authStatus(), authRm()}, args, stdout, stderr)
}

func authLogin() adminCommand {
	var sandbox string
	return adminCommand{
		name: "login", synopsis: "NAME [--sandbox SANDBOX]",
		text: `Authorize a registered remote server that wants OAuth: prints the URL to open in
a browser, waits for the authorization server to send the browser back to the
host's loopback callback, and stores the tokens (encrypted, bound to the server's
URL and issuer). 'mcp-gateway auth NAME' and 'mcp-gateway auth login NAME' are the same.
A server registered --per-sandbox is authorized for one sandbox at a time: --sandbox.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&sandbox, "sandbox", "", "the `sandbox` whose own grant to authorize (a server registered --per-sandbox)")
		},
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			name, err := one(args, "server NAME")
			if err != nil {
				return err
			}
			return authorize(ctx, c, name, sandbox, stdout)
		},
	}
}

func authStatus() adminCommand {
	var asJSON bool
	return adminCommand{
		name: "status", synopsis: "status [--json]",
		text:  "Show, per remote server that wants OAuth, whether it is authorized, its token's expiry and scopes (never a token).",
		flags: jsonFlag(&asJSON),
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			var list []oauth.Status
			if err := c.Do(ctx, http.MethodGet, "/v1/auth", nil, &list); err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, list)
			}
			err := printTable(stdout, "SERVER\tSANDBOX\tAUTHORIZED\tEXPIRES\tSCOPES\tISSUER", func(tw io.Writer) {
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
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Server, sb, authorized, exp, dash(strings.Join(s.Scopes, " ")), dash(s.Issuer))
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
func authorize(ctx context.Context, c *host.Client, name, sandbox string, stdout io.Writer) error {
	query, forWhom := "", ""
	if sandbox != "" {
		query, forWhom = "?sandbox="+url.QueryEscape(sandbox), fmt.Sprintf(" for sandbox %q", sandbox)
	}
	var start struct{ URL string }
	if err := c.Do(ctx, http.MethodPost, "/v1/auth/"+url.PathEscape(name)+query, nil, &start); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "To authorize mcp server %q%s, open this URL in a browser on this host:\n\n  %s\n\nWaiting for the authorization...\n", name, forWhom, start.URL)
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
