package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
)

// runSandbox is `mcp-gateway sandbox create|ls|rm`: the host's sandboxes.
func runSandbox(args []string, stdout, stderr io.Writer) int {
	return runAdmin("sandbox", []adminCommand{sandboxCreate(), sandboxLs(), sandboxRm()}, args, stdout, stderr)
}

func sandboxCreate() adminCommand {
	var static commaListFlag
	var asJSON bool
	return adminCommand{
		name: "create", synopsis: "create NAME [--static a,b]...",
		text: `Create a sandbox with its own token. With --static, the named servers are
pre-loaded and no discovery tools are offered; without it the sandbox is dynamic:
nothing pre-loaded, and mcp-find, mcp-add and mcp-config-set let its agent attach
servers. Prints the endpoint, the token (shown once) and a client configuration.`,
		flags: func(fs *flag.FlagSet) {
			fs.Var(&static, "static", "`servers` to pre-load (static mode), comma-separated or repeated: --static a,b or --static a --static b")
			jsonFlag(&asJSON)(fs)
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
			return printSandboxCreated(stdout, res)
		},
	}
}

// printSandboxCreated prints a new sandbox's endpoint and token, and how a
// client is configured to use them.
func printSandboxCreated(stdout io.Writer, res host.SandboxCreated) error {
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
}

func sandboxLs() adminCommand {
	return listCommand("List the sandboxes, their modes and servers.", "/v1/sandboxes", "NAME\tMODE\tSERVERS",
		func(tw io.Writer, s host.SandboxSummary) {
			var servers []string
			for _, name := range s.Servers {
				if st := s.Status[name]; st.State != "ready" {
					name += " (" + st.State + ")"
				}
				servers = append(servers, name)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Mode, dash(strings.Join(servers, ", ")))
		})
}

func sandboxRm() adminCommand {
	return adminCommand{
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
	}
}
