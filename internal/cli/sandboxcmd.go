package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
)

// runSandbox is `mcp-gateway sandbox create|ls|rm|connect`: the host's sandboxes.
func runSandbox(args []string, stdout, stderr io.Writer) int {
	return runAdmin("sandbox", []adminCommand{sandboxCreate(), sandboxLs(), sandboxRm(), sandboxConnect()}, args, stdout, stderr)
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

// sandboxConnect prints, or writes, what an agent needs to use a sandbox:
// its endpoint and (by reference) its token, in the agent's own format.
func sandboxConnect() adminCommand {
	var agent, name, tokenEnv string
	var write, inline bool
	return adminCommand{
		name: "connect", synopsis: "connect NAME --agent A [--write]",
		text: `Print the configuration agent A needs to use the sandbox's endpoint, in that
agent's own format: ` + strings.Join(agentNames, ", ") + `. The file's content goes to standard
output, where it belongs and how the token reaches it to standard error. With
--write it is merged into the agent's project-level file in the current directory
(.mcp.json, .codex/config.toml, .gemini/settings.json, opencode.json,
.vscode/mcp.json, .cursor/mcp.json), keeping the file's other servers. The token is
read from $MCP_GATEWAY_TOKEN (--token-env) when the agent starts (VS Code asks for
it once); the host keeps only its hash, so it is the one sandbox create printed.
With --inline-token the token, read from standard input, is written in the file
instead, and the file is made 0600.`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&agent, "agent", "", "the `agent`: "+strings.Join(agentNames, ", "))
			fs.BoolVar(&write, "write", false, "write it into the agent's project-level file in the current directory")
			fs.StringVar(&name, "name", "mcp-gateway", "the server's `name` in the agent's configuration")
			fs.StringVar(&tokenEnv, "token-env", defaultAgentTokenEnv, "the environment `variable` the agent reads the token from")
			fs.BoolVar(&inline, "inline-token", false, "write the token (read from standard input) in the file instead of referencing --token-env; the file is made 0600")
		},
		run: func(ctx context.Context, c *host.Client, args []string, stdin io.Reader, stdout io.Writer) error {
			sandbox, err := one(args, "sandbox NAME")
			if err != nil {
				return err
			}
			if agent == "" {
				return usagef("--agent is required: one of %s", strings.Join(agentNames, ", "))
			}
			if _, err := agentFor(agent, agentEndpoint{TokenEnv: tokenEnv}); err != nil {
				return err
			}
			var list []host.SandboxSummary
			if err := c.Do(ctx, http.MethodGet, "/v1/sandboxes", nil, &list); err != nil {
				return err
			}
			i := slices.IndexFunc(list, func(s host.SandboxSummary) bool { return s.Name == sandbox })
			if i < 0 {
				return fmt.Errorf("no sandbox %q: mcp-gateway sandbox ls lists them, sandbox create makes one", sandbox)
			}
			ep := agentEndpoint{Name: name, URL: list[i].URL, TokenEnv: tokenEnv}
			if inline {
				if ep.Token, err = readToken(stdin, sandbox); err != nil {
					return err
				}
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			hint := fmt.Sprintf("it is the token `mcp-gateway sandbox create %s` printed (the host keeps only its hash)", sandbox)
			return printAgent(agent, ep, write, dir, hint, stdout, os.Stderr)
		},
	}
}

// readToken reads a sandbox's token for --inline-token: after a prompt on
// a terminal (without echo), else from standard input.
func readToken(stdin io.Reader, sandbox string) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return readSecret(stdin, os.Stderr, "the token of sandbox "+sandbox)
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 1<<16))
	if err != nil {
		return "", fmt.Errorf("reading the token from standard input: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", usagef("--inline-token reads the token on standard input, and it was empty: printf %%s \"$TOKEN\" | mcp-gateway sandbox connect %s --agent A --inline-token", sandbox)
	}
	return token, nil
}
