package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const agentURL = "http://127.0.0.1:8811/mcp"

// authOf digs the Authorization value and the URL out of each agent's
// document, in the agent's own format.
func agentDoc(t *testing.T, agent string, doc []byte) (url, auth string, whole map[string]any) {
	t.Helper()
	whole = map[string]any{}
	if agent == "codex" {
		if _, err := toml.Decode(string(doc), &whole); err != nil {
			t.Fatalf("codex: not TOML: %v\n%s", err, doc)
		}
		srv := whole["mcp_servers"].(map[string]any)["mcp-gateway"].(map[string]any)
		url, _ = srv["url"].(string)
		if env, ok := srv["bearer_token_env_var"].(string); ok {
			auth = "env:" + env
		} else if h, ok := srv["http_headers"].(map[string]any); ok {
			auth, _ = h["Authorization"].(string)
		}
		return url, auth, whole
	}
	if err := json.Unmarshal(doc, &whole); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", agent, err, doc)
	}
	var srv map[string]any
	switch agent {
	case "vscode":
		srv = whole["servers"].(map[string]any)["mcp-gateway"].(map[string]any)
	case "opencode":
		srv = whole["mcp"].(map[string]any)["servers"].(map[string]any)["mcp-gateway"].(map[string]any)
	default:
		srv = whole["mcpServers"].(map[string]any)["mcp-gateway"].(map[string]any)
	}
	for _, k := range []string{"url", "httpUrl"} {
		if u, ok := srv[k].(string); ok {
			url = u
		}
	}
	auth, _ = srv["headers"].(map[string]any)["Authorization"].(string)
	return url, auth, whole
}

// Each agent's document is in its format, points at the URL and references
// the token the way that agent's documentation says, never holding it.
func TestAgentDocuments(t *testing.T) {
	want := map[string]string{
		"claude":   "Bearer ${MCP_GATEWAY_TOKEN}",
		"codex":    "env:MCP_GATEWAY_TOKEN",
		"gemini":   "Bearer ${MCP_GATEWAY_TOKEN}",
		"opencode": "Bearer {env:MCP_GATEWAY_TOKEN}",
		"vscode":   "Bearer ${input:mcp-gateway-token}",
		"cursor":   "Bearer ${env:MCP_GATEWAY_TOKEN}",
	}
	for _, agent := range agentNames {
		t.Run(agent, func(t *testing.T) {
			c, err := agentFor(agent, agentEndpoint{URL: agentURL})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := c.Document()
			if err != nil {
				t.Fatal(err)
			}
			url, auth, whole := agentDoc(t, agent, doc)
			if url != agentURL || auth != want[agent] {
				t.Errorf("url %q, Authorization %q; want %q, %q\n%s", url, auth, agentURL, want[agent], doc)
			}
			switch agent {
			case "claude", "vscode":
				var srv map[string]any
				if agent == "claude" {
					srv = whole["mcpServers"].(map[string]any)["mcp-gateway"].(map[string]any)
				} else {
					srv = whole["servers"].(map[string]any)["mcp-gateway"].(map[string]any)
					inputs, _ := whole["inputs"].([]any)
					if len(inputs) != 1 || inputs[0].(map[string]any)["password"] != true || inputs[0].(map[string]any)["id"] != "mcp-gateway-token" {
						t.Errorf("vscode inputs %v, want one password promptString mcp-gateway-token", inputs)
					}
				}
				if srv["type"] != "http" {
					t.Errorf("type %v, want http", srv["type"])
				}
			case "opencode":
				if whole["$schema"] != "https://opencode.ai/config.json" || whole["mcp"].(map[string]any)["servers"].(map[string]any)["mcp-gateway"].(map[string]any)["type"] != "remote" {
					t.Errorf("opencode document %s", doc)
				}
			}
			if agent == "claude" && c.Command != `claude mcp add --transport http --scope project mcp-gateway http://127.0.0.1:8811/mcp --header 'Authorization: Bearer ${MCP_GATEWAY_TOKEN}'` {
				t.Errorf("claude command %q", c.Command)
			}
		})
	}
	if _, err := agentFor("emacs", agentEndpoint{URL: agentURL}); err == nil || !strings.Contains(err.Error(), `unknown agent "emacs": --agent takes one of claude, codex, gemini, opencode, vscode, cursor`) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := agentFor("claude", agentEndpoint{URL: agentURL, TokenEnv: "1BAD"}); err == nil || !strings.Contains(err.Error(), `--token-env "1BAD"`) {
		t.Errorf("bad --token-env: %v", err)
	}
}

// Write merges into an existing file, keeping its other servers and
// settings; a file with the token inline is 0600, even one that was not.
func TestAgentWriteMergesAndProtectsTheToken(t *testing.T) {
	for _, agent := range agentNames {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			c, _ := agentFor(agent, agentEndpoint{URL: agentURL})
			path := filepath.Join(dir, c.File)
			os.MkdirAll(filepath.Dir(path), 0o755)
			var before string
			if agent == "codex" {
				before = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"npx\"\n"
			} else {
				before = `{"theme": "dark", "mcpServers": {"other": {"command": "npx"}}, "servers": {"other": {"type": "stdio", "command": "npx"}}, "mcp": {"servers": {"other": {"type": "local", "command": ["npx"]}}}}`
			}
			if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(dir); err != nil {
				t.Fatal(err)
			}
			after, _ := os.ReadFile(path)
			url, auth, whole := agentDoc(t, agent, after)
			if url != agentURL || strings.Contains(auth, "secret-token") {
				t.Errorf("after --write: url %q auth %q\n%s", url, auth, after)
			}
			if agent == "codex" {
				if !strings.HasPrefix(string(after), before) || whole["model"] != "o3" || whole["mcp_servers"].(map[string]any)["other"] == nil {
					t.Errorf("config.toml lost what it had:\n%s", after)
				}
				// A second write refuses to replace the table (and the file's comments).
				if _, err := c.Write(dir); err == nil || !strings.Contains(err.Error(), "already has [mcp_servers.mcp-gateway]") {
					t.Errorf("second write: %v", err)
				}
			} else if whole["theme"] != "dark" {
				t.Errorf("the file lost its other settings:\n%s", after)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want the file's own 0644 (no token in it)", fi.Mode().Perm())
			}

			// With the token inline, the file is made 0600.
			os.Remove(path)
			os.WriteFile(path, []byte(strings.ReplaceAll(before, "mcp-gateway", "x")), 0o644)
			inline, _ := agentFor(agent, agentEndpoint{URL: agentURL, Token: "secret-token"})
			if _, err := inline.Write(dir); err != nil {
				t.Fatal(err)
			}
			after, _ = os.ReadFile(path)
			if _, auth, _ := agentDoc(t, agent, after); auth != "Bearer secret-token" {
				t.Errorf("inline: Authorization %q\n%s", auth, after)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("a file holding the token has mode %v, want 0600", fi.Mode().Perm())
			}
			if agent == "vscode" && bytes.Contains(after, []byte(`"password"`)) {
				t.Errorf("vscode inline still asks for the token:\n%s", after)
			}
			// A new file holding the token is created 0600 too.
			fresh := t.TempDir()
			if p, err := inline.Write(fresh); err != nil {
				t.Fatal(err)
			} else if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("new file with the token: mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
}

// A file that is not in the agent's format is left alone, with an error
// naming it.
func TestAgentWriteRefusesABrokenFile(t *testing.T) {
	dir := t.TempDir()
	c, _ := agentFor("cursor", agentEndpoint{URL: agentURL})
	path := filepath.Join(dir, c.File)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("{ // a comment\n}"), 0o644)
	if _, err := c.Write(dir); err == nil || !strings.Contains(err.Error(), path+": it is not a JSON object") {
		t.Errorf("broken .cursor/mcp.json: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "{ // a comment\n}" {
		t.Errorf("the broken file was changed: %q", b)
	}
	c, _ = agentFor("codex", agentEndpoint{URL: agentURL})
	path = filepath.Join(dir, c.File)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("mcp_servers = 3\n"), 0o644)
	if _, err := c.Write(dir); err == nil || !strings.Contains(err.Error(), "would not parse") {
		t.Errorf("config.toml whose mcp_servers is not a table: %v", err)
	}
}
