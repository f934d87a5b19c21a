package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
)

// The configurations the agents people use need to reach a gateway: its
// URL and its bearer token, each in the format of that agent's own
// documentation (docs/agents.md cites each). The token is referenced
// through an environment variable wherever the agent supports one, so the
// files hold no secret; written inline (--inline-token), the file is 0600.

// agentNames are the agents --agent knows, as help lists them.
var agentNames = []string{"claude", "codex", "gemini", "opencode", "vscode", "cursor"}

// defaultAgentTokenEnv is the environment variable the configurations read
// the token from.
const defaultAgentTokenEnv = "MCP_GATEWAY_TOKEN"

// agentEndpoint is what an agent's configuration points at.
type agentEndpoint struct {
	Name     string // the server's name in the agent's configuration
	URL      string // the gateway's /mcp
	TokenEnv string // the environment variable holding the token
	Token    string // when set, written in the file instead of TokenEnv
}

// agentConfig is one agent's configuration for an endpoint.
type agentConfig struct {
	Agent   string // the agent's name for people
	File    string // the project-level file, relative to the project's root
	Command string // a command that registers the server instead, if the agent has one
	inline  bool   // the token itself is in the file
	name    string // the server's name in the file

	// A JSON file: the servers are an object at container, keyed by name.
	container []string
	entry     map[string]any
	top       map[string]any // top-level members the file needs beside the servers
	input     map[string]any // a VS Code input the entry prompts with

	// A TOML file (Codex): the [mcp_servers.<name>] table.
	table map[string]any
}

// agentFor builds agent's configuration for ep.
func agentFor(agent string, ep agentEndpoint) (*agentConfig, error) {
	if ep.Name == "" {
		ep.Name = "mcp-gateway"
	}
	if ep.TokenEnv == "" {
		ep.TokenEnv = defaultAgentTokenEnv
	}
	if !envName.MatchString(ep.TokenEnv) {
		return nil, usagef("--token-env %q is not an environment variable name (letters, digits and _, not starting with a digit)", ep.TokenEnv)
	}
	// bearer is the Authorization value with the token, or the agent's
	// reference to the environment variable (ref formats its name).
	bearer := func(ref string) string {
		if ep.Token != "" {
			return "Bearer " + ep.Token
		}
		return "Bearer " + ref
	}
	c := &agentConfig{inline: ep.Token != ""}
	switch agent {
	case "claude":
		// code.claude.com/docs/en/mcp: .mcp.json (project scope), ${VAR}
		// expanded in url and headers.
		auth := bearer("${" + ep.TokenEnv + "}")
		c.Agent, c.File, c.container = "Claude Code", ".mcp.json", []string{"mcpServers"}
		c.entry = map[string]any{"type": "http", "url": ep.URL, "headers": map[string]any{"Authorization": auth}}
		c.Command = fmt.Sprintf("claude mcp add --transport http --scope project %s %s --header %s", shellQuote(ep.Name), shellQuote(ep.URL), shellQuote("Authorization: "+auth))
	case "codex":
		// developers.openai.com/codex/mcp: [mcp_servers.<name>] in
		// config.toml, url with bearer_token_env_var (streamable HTTP).
		c.Agent, c.File = "Codex", filepath.Join(".codex", "config.toml")
		c.table = map[string]any{"url": ep.URL}
		if ep.Token != "" {
			c.table["http_headers"] = map[string]any{"Authorization": bearer("")}
		} else {
			c.table["bearer_token_env_var"] = ep.TokenEnv
		}
	case "gemini":
		// geminicli.com/docs/tools/mcp-server: mcpServers with httpUrl
		// (streamable HTTP) and headers; settings strings expand $VAR.
		c.Agent, c.File, c.container = "Gemini CLI", filepath.Join(".gemini", "settings.json"), []string{"mcpServers"}
		c.entry = map[string]any{"httpUrl": ep.URL, "headers": map[string]any{"Authorization": bearer("${" + ep.TokenEnv + "}")}}
	case "opencode":
		// opencode.ai/docs/mcp-servers: mcp.servers.<name> of type remote;
		// opencode.ai/docs/config: {env:VAR} substitution.
		c.Agent, c.File, c.container = "OpenCode", "opencode.json", []string{"mcp", "servers"}
		c.top = map[string]any{"$schema": "https://opencode.ai/config.json"}
		c.entry = map[string]any{"type": "remote", "url": ep.URL, "headers": map[string]any{"Authorization": bearer("{env:" + ep.TokenEnv + "}")}}
	case "vscode":
		// code.visualstudio.com/docs/copilot/reference/mcp-configuration:
		// servers.<name> of type http; a promptString input with password
		// keeps the token in VS Code's secret storage, out of the file.
		c.Agent, c.File, c.container = "VS Code", filepath.Join(".vscode", "mcp.json"), []string{"servers"}
		id := ep.Name + "-token"
		c.entry = map[string]any{"type": "http", "url": ep.URL, "headers": map[string]any{"Authorization": bearer("${input:" + id + "}")}}
		if ep.Token == "" {
			c.input = map[string]any{"type": "promptString", "id": id, "description": "Bearer token of " + ep.URL + " (mcp-gateway)", "password": true}
		}
	case "cursor":
		// cursor.com/docs/mcp: .cursor/mcp.json mcpServers with url and
		// headers; ${env:NAME} interpolated.
		c.Agent, c.File, c.container = "Cursor", filepath.Join(".cursor", "mcp.json"), []string{"mcpServers"}
		c.entry = map[string]any{"url": ep.URL, "headers": map[string]any{"Authorization": bearer("${env:" + ep.TokenEnv + "}")}}
	default:
		return nil, usagef("unknown agent %q: --agent takes one of %s", agent, strings.Join(agentNames, ", "))
	}
	c.name = ep.Name
	return c, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Document is the configuration file holding only this server, as the
// agent reads it.
func (c *agentConfig) Document() ([]byte, error) {
	if c.table != nil {
		return []byte(c.tomlTable()), nil
	}
	return c.merge(nil)
}

// merge returns the JSON document old (nil: none) with this server set in
// it, the others kept.
func (c *agentConfig) merge(old []byte) ([]byte, error) {
	doc := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil || doc == nil {
			return nil, fmt.Errorf("it is not a JSON object (%v): fix it, or move it away and run this again", err)
		}
	}
	for k, v := range c.top {
		if _, ok := doc[k]; !ok {
			doc[k] = v
		}
	}
	servers := doc
	for i, key := range c.container {
		next, ok := servers[key].(map[string]any)
		if !ok {
			if servers[key] != nil {
				return nil, fmt.Errorf("its %q is not an object", strings.Join(c.container[:i+1], "."))
			}
			next = map[string]any{}
			servers[key] = next
		}
		servers = next
	}
	servers[c.name] = c.entry
	if c.input != nil {
		inputs, _ := doc["inputs"].([]any)
		if !slices.ContainsFunc(inputs, func(in any) bool {
			m, _ := in.(map[string]any)
			return m["id"] == c.input["id"]
		}) {
			doc["inputs"] = append(inputs, c.input)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// tomlTable is the [mcp_servers.<name>] table, written by hand so that it
// can be appended to a config.toml whose other tables (and comments) stay
// as they are.
func (c *agentConfig) tomlTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", tomlKey(c.name))
	for _, k := range []string{"url", "bearer_token_env_var"} {
		if v, ok := c.table[k].(string); ok {
			fmt.Fprintf(&b, "%s = %s\n", k, tomlString(v))
		}
	}
	if h, ok := c.table["http_headers"].(map[string]any); ok {
		fmt.Fprintf(&b, "http_headers = { Authorization = %s }\n", tomlString(h["Authorization"].(string)))
	}
	return b.String()
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Write sets this server in the agent's project-level file under dir,
// keeping the file's other servers and settings; it returns the file's
// path. A file holding the token is made 0600 (an existing one too).
func (c *agentConfig) Write(dir string) (string, error) {
	path := filepath.Join(dir, c.File)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, err
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if c.inline {
		mode = 0o600
	}
	var data []byte
	if c.table != nil {
		data, err = c.appendTOML(old)
	} else {
		data, err = c.merge(old)
	}
	if err != nil {
		return path, fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return path, err
	}
	return path, atomicfile.Write(path, data, mode)
}

// appendTOML appends the server's table to a config.toml, refusing one
// that already has a server of that name (replacing it would lose the
// file's comments) or that would no longer parse.
func (c *agentConfig) appendTOML(old []byte) ([]byte, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(old), &doc); err != nil {
		return nil, fmt.Errorf("it is not valid TOML (%v): fix it, or move it away and run this again", err)
	}
	if servers, ok := doc["mcp_servers"].(map[string]any); ok {
		if _, taken := servers[c.name]; taken {
			return nil, fmt.Errorf("it already has [mcp_servers.%s]: remove that table, or choose another --name", tomlKey(c.name))
		}
	}
	data := slices.Clone(old)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	if len(data) > 0 {
		data = append(data, '\n')
	}
	data = append(data, c.tomlTable()...)
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, fmt.Errorf("adding [mcp_servers.%s] would not parse (%v): add it by hand", tomlKey(c.name), err)
	}
	return data, nil
}

// printAgent prints agent's configuration for ep: the file's content on
// stdout (so that it can be redirected into the file), and on notes where
// it goes and how the token reaches it; with write, it is written into
// dir's project-level file instead. tokenHint says where the token is.
func printAgent(agent string, ep agentEndpoint, write bool, dir, tokenHint string, stdout, notes io.Writer) error {
	c, err := agentFor(agent, ep)
	if err != nil {
		return err
	}
	if write {
		path, err := c.Write(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: wrote server %q to %s\n", c.Agent, c.name, path)
	} else {
		doc, err := c.Document()
		if err != nil {
			return err
		}
		if _, err := stdout.Write(doc); err != nil {
			return err
		}
		fmt.Fprintf(notes, "%s reads this from %s in the project's root (--write puts it there, keeping the file's other servers).\n", c.Agent, c.File)
	}
	if c.Command != "" {
		fmt.Fprintf(notes, "Or register it with: %s\n", c.Command)
	}
	switch {
	case c.inline:
		fmt.Fprintf(notes, "The token is written in the configuration: keep the file private (written 0600).\n")
	case c.input != nil:
		fmt.Fprintf(notes, "VS Code asks for the token once and keeps it in its secret storage; %s.\n", tokenHint)
	default:
		fmt.Fprintf(notes, "The token is read from $%s when the agent starts: export %s=<token>; %s.\n", c.tokenEnv(ep), c.tokenEnv(ep), tokenHint)
	}
	return nil
}

func (c *agentConfig) tokenEnv(ep agentEndpoint) string {
	if ep.TokenEnv == "" {
		return defaultAgentTokenEnv
	}
	return ep.TokenEnv
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// launcherAgent prints, after the launcher's ready line, the configuration
// agent needs to use the gateway just started: on its loopback address
// unless it listens on one address only, the token referenced through
// $MCP_GATEWAY_TOKEN, which the notes say how to set from the token file.
func launcherAgent(agent string, g *gatewayFlags, port int, stdout, stderr io.Writer) {
	host := g.host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ep := agentEndpoint{URL: "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/mcp"}
	hint := "the launcher's token is in its environment's " + tokenEnv + " or generated"
	if g.tokenFile != "" {
		hint = fmt.Sprintf(`export %s="$(cat %s)"`, defaultAgentTokenEnv, shellQuote(g.tokenFile))
	}
	if err := printAgent(agent, ep, false, "", hint, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway: --agent %s: %v\n", agent, err)
	}
}
