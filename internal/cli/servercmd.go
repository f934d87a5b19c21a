package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/metadata"
)

// runServer is `mcp-gateway server add|ls|inspect|rm`: the host's registrations.
func runServer(args []string, stdout, stderr io.Writer) int {
	return runAdmin("server", []adminCommand{serverAdd(), serverLs(), serverInspect(), serverRm()}, args, stdout, stderr)
}

// serverAddFlags are server add's flags: the registration request, and
// the lists and switches it is built from.
type serverAddFlags struct {
	req                    host.ServerRequest
	headers, env           listFlag
	argList, props, scopes commaListFlag
	skipAuth               bool
	authServer             string          // --oauth-authorization-server FILE|URL
	docker                 metadata.Docker // an OCI package's docker run settings
}

func (f *serverAddFlags) register(fs *flag.FlagSet) {
	req := &f.req
	fs.StringVar(&req.Description, "description", "", "what the server does (mcp-find searches it)")
	fs.StringVar(&req.URL, "url", "", "a remote server's endpoint `url`")
	fs.StringVar(&req.Transport, "transport", "", "a remote server's transport: http or sse (default: detect)")
	fs.BoolVar(&req.InitializeFirst, "initialize-first", false, "start a remote server's sessions with initialize instead of server/discover (as serve mode's \"discoverFirst\": false): for a server to be used in its session era, or one that mishandles server/discover")
	fs.Var(&f.headers, "header", "a header `'Name: value'` sent to the remote server (repeatable, one header each; a name given twice is refused)")
	fs.StringVar(&req.Command, "command", "", "a local server's `command`")
	fs.Var(&f.argList, "args", "`arguments` of the command, comma-separated or repeated (--args -y,pkg or --args -y --args pkg); arguments after -- are taken as they are")
	fs.StringVar(&req.Dir, "dir", "", "the command's working `directory`")
	fs.Var(&f.env, "env", "an environment variable `NAME=value` of the command (repeatable, one variable each)")
	fs.Var(&f.props, "property", "environment `variables` a sandbox may set with mcp-config-set, comma-separated or repeated")
	fs.StringVar(&req.Metadata, "metadata", "", "`url` (or file) of an MCP registry entry, server.json or server.yaml")
	fs.BoolVar(&req.AllowPrivateAddress, "allow-private-address", false, "let this server's URL (and its --metadata URL) reach private, loopback and link-local addresses without a warning (cloud-metadata addresses stay refused; the daemon's --allow-any-address lifts every check)")
	fs.BoolVar(&req.PerClient, "per-client", false, "run a local server as a process per client session (its requests to the client then always reach the right one; ${client_dir} names the process's own directory) instead of one per sandbox")
	fs.BoolVar(&req.Replace, "replace", false, "replace a registration of the same name (its attachments restart)")
	fs.StringVar(&req.ClientID, "client-id", "", "a remote OAuth server's pre-registered client `id` (a confidential client's secret goes in mcp:<server>:client_secret, stored before or after this; mcp:<server>:client-secret is read too); default: dynamic registration")
	fs.StringVar(&req.ClientMetadataURL, "client-metadata-url", "", "an https `url` of a client ID metadata document you publish, used when the authorization server supports them")
	fs.Var(&f.scopes, "scope", "OAuth `scopes` to ask for, in place of those the server names (as sbx does; auth --scope overrides them for one run), comma-separated or repeated")
	fs.StringVar(&req.OAuthIssuer, "oauth-issuer", "", "pin a remote OAuth server's authorization server to this issuer `url`: an authorization (or a client secret) is never sent to another one its metadata names; default: the issuer of the first grant, kept with the token")
	fs.StringVar(&req.OAuthTokenEndpoint, "oauth-token-endpoint", "", "pin the authorization server's token endpoint `url` too (needed for a confidential client whose token endpoint is on another origin than its issuer)")
	fs.StringVar(&f.authServer, "oauth-authorization-server", "", "the authorization server's metadata (RFC 8414), a `file` or an https URL, for a server whose own metadata does not lead to it; it pins the issuer and token endpoint it names")
	fs.BoolVar(&req.PerSandbox, "per-sandbox", false, "keep a remote OAuth server's tokens per sandbox (each sandbox authorizes it on its own: mcp-gateway auth NAME --sandbox S, or its NAME-authorize tool) instead of one grant shared by its sandboxes")
	fs.BoolVar(&f.skipAuth, "skip-auth", false, "register a server that wants OAuth without authorizing it now (later: mcp-gateway auth NAME)")
	// How an OCI package of --metadata runs (docker run's options).
	fs.StringVar(&f.docker.Network, "docker-network", "", "an OCI package's Docker `network` (docker run --network; default none: no network)")
	fs.StringVar(&f.docker.Memory, "docker-memory", "", "an OCI package's memory `limit` (docker run --memory; default "+metadata.DefaultDockerMemory+")")
	fs.StringVar(&f.docker.CPUs, "docker-cpus", "", "an OCI package's `CPUs` (docker run --cpus; default "+metadata.DefaultDockerCPUs+")")
	fs.IntVar(&f.docker.Pids, "docker-pids", 0, fmt.Sprintf("an OCI package's process `limit` (docker run --pids-limit; default %d)", metadata.DefaultDockerPids))
	fs.StringVar(&f.docker.Pull, "docker-pull", "", "when docker pulls an OCI package's image: never (the default: it must be on the host), missing or always")
}

// request is the registration of server NAME, with args: the arguments
// given after --.
func (f *serverAddFlags) request(name string, args []string) host.ServerRequest {
	req := f.req
	req.Name = name
	req.Metadata = callerPath(req.Metadata) // the daemon's directory is not the caller's
	req.Headers, req.Env, req.Props = f.headers, f.env, f.props
	req.Args = append(f.argList, args...)
	req.Scopes = f.scopes
	if f.docker != (metadata.Docker{}) {
		d := f.docker
		req.Docker = &d
	}
	return req
}

// readAuthServer resolves --oauth-authorization-server: a URL the daemon
// fetches, or a file read here, in the caller's directory.
func (f *serverAddFlags) readAuthServer(req *host.ServerRequest) error {
	v := f.authServer
	switch {
	case v == "":
		return nil
	case strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://"):
		req.OAuthAuthorizationServer = v
		return nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return usagef("--oauth-authorization-server: %v (give a metadata file or an https URL)", err)
	}
	if !json.Valid(b) {
		return usagef("--oauth-authorization-server: %s is not JSON (an RFC 8414 authorization server metadata document)", v)
	}
	req.OAuthAuthorizationServerMetadata = b
	return nil
}

func serverAdd() adminCommand {
	var f serverAddFlags
	return adminCommand{
		name:     "add",
		synopsis: "add NAME (--url URL | --command CMD | --metadata URL) [flags] [-- ARGS...]",
		text: `Register a server on the host: a remote one (--url, with --header 'Name: value'
whose ${name} placeholders name secrets mcp:<server>:<name>), a local command run
once per sandbox (--command, --args, --dir, --env), or an MCP registry entry,
server.json or server.yaml whose npm, PyPI or OCI package runs through npx,
uvx or docker run (--metadata; --docker-* set an OCI package's isolation).
Credential headers and variables must use a placeholder; store the value with
'mcp-gateway secret set'.`,
		flags: f.register,
		run: func(ctx context.Context, c *host.Client, args []string, _ io.Reader, stdout io.Writer) error {
			if len(args) == 0 {
				return usagef("give the server's NAME")
			}
			req := f.request(args[0], args[1:])
			if err := f.readAuthServer(&req); err != nil {
				return err
			}
			var res host.AddResult
			if err := c.Do(ctx, http.MethodPost, "/v1/servers", req, &res); err != nil {
				return err
			}
			if res.OAuth {
				return serverAddedOAuth(ctx, c, res, f.skipAuth, stdout)
			}
			printWarnings(stdout, res.Warnings)
			fmt.Fprintf(stdout, "registered mcp server %q (%d tools)\n", res.Server.Name, len(res.Server.Tools))
			return nil
		},
	}
}

// serverAddedOAuth tells what follows the registration of a server that
// wants OAuth, and authorizes it now unless its tokens are per sandbox or
// --skip-auth was given.
func serverAddedOAuth(ctx context.Context, c *host.Client, res host.AddResult, skipAuth bool, stdout io.Writer) error {
	fmt.Fprintf(stdout, "registered mcp server %q; it wants OAuth\n", res.Server.Name)
	if res.Server.PerSandbox {
		fmt.Fprintf(stdout, "its tokens are kept per sandbox: authorize it for each with: mcp-gateway auth %s --sandbox SANDBOX\n", res.Server.Name)
		return nil
	}
	if skipAuth {
		fmt.Fprintf(stdout, "authorize it later with: mcp-gateway auth %s\n", res.Server.Name)
		return nil
	}
	return authorize(ctx, c, res.Server.Name, "", authOptions{}, stdout)
}

func serverLs() adminCommand {
	return listCommand("List the registered servers.", "/v1/servers", "NAME\tKIND\tTOOLS\tSANDBOXES\tENDPOINT",
		func(tw io.Writer, s host.ServerSummary) {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Kind, s.Tools, dash(strings.Join(s.Sandboxes, ",")), s.Endpoint)
		})
}

func serverInspect() adminCommand {
	return adminCommand{
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
	}
}

func serverRm() adminCommand {
	return adminCommand{
		name: "rm", synopsis: "rm NAME", text: "Unregister a server, detaching it from every sandbox and removing its OAuth tokens. Its other secrets stay until removed.",
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
			if len(res.OAuthTokens) > 0 {
				fmt.Fprintf(stdout, "its OAuth tokens were removed with it (%s)\n", strings.Join(res.OAuthTokens, ", "))
			}
			if len(res.DetachedFrom) > 0 {
				fmt.Fprintf(stdout, "detached from sandboxes: %s\n", strings.Join(res.DetachedFrom, ", "))
			}
			if len(res.Secrets) > 0 {
				fmt.Fprintf(stdout, "its secrets are still stored: %s\nremove them with: %s\n", strings.Join(res.Secrets, ", "), secretRmCommands(res.Secrets))
			}
			return nil
		},
	}
}

func secretRmCommands(names []string) string {
	cmds := make([]string, len(names))
	for i, n := range names {
		cmds[i] = "mcp-gateway secret rm " + n
	}
	return strings.Join(cmds, "; ")
}
