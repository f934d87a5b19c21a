package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/secrets"
)

// runSecret is `mcp-gateway secret set|ls|rm`: the host's secrets.
func runSecret(args []string, stdout, stderr io.Writer) int {
	return runAdmin("secret", []adminCommand{secretSet(), secretLs(), secretRm()}, args, stdout, stderr)
}

func secretSet() adminCommand {
	return adminCommand{
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
	}
}

func secretLs() adminCommand {
	return adminCommand{
		name: "ls", synopsis: "ls", text: "List the stored secrets: names only.",
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			var list []secrets.Entry
			if err := c.Do(ctx, http.MethodGet, "/v1/secrets", nil, &list); err != nil {
				return err
			}
			return printTable(stdout, "NAME\tSET", func(tw io.Writer) {
				for _, e := range list {
					fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.SetAt.Format(time.RFC3339))
				}
			})
		},
	}
}

func secretRm() adminCommand {
	return adminCommand{
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
	}
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
