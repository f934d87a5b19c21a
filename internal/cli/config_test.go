package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

const catalogNames = "arxiv, duckduckgo, fetch, filesystem, memory, sequentialthinking, time"

// The configuration decisions of stdio, serve and the launcher that come
// before anything starts: each refusal's exit code and exact message.
func TestConfigRefusals(t *testing.T) {
	noCatalog := "--catalog-file=" + filepath.Join(t.TempDir(), "none.json") // a missing override is fine
	unknown := `mcp server \"a\": unknown server; the catalog has: ` + catalogNames + ` (a server of your own needs \"runCmd\"; a GitHub server is named github/<owner>/<repo>)`
	tests := []struct {
		name string
		args []string
		// stdio's stderr, serve's error (logged as err="..."), launcher's stderr ("" when not run)
		code   int
		stdio  string
		serve  string
		launch string
	}{
		{"config twice", []string{"--config", "{}", "--config-file", "x"}, 2,
			"mcp-gateway stdio: give --config or --config-file, not both\n",
			`err="give --config or --config-file, not both"`,
			"mcp-gateway: give --config or --config-file, not both\n"},
		{"no config", []string{}, 2,
			"mcp-gateway stdio: no configuration: give --config '<json>' or --config-file FILE\n",
			`err="no configuration: give --config '<json>' or --config-file FILE"`,
			"mcp-gateway: no configuration: give --config '<json>' or --config-file FILE\n"},
		{"missing config file", []string{"--config-file", "/nonexistent.json"}, 2,
			"mcp-gateway stdio: reading the config file: open /nonexistent.json: no such file or directory\n",
			`err="reading the config file: open /nonexistent.json: no such file or directory"`,
			"mcp-gateway: reading the config file: open /nonexistent.json: no such file or directory\n"},
		{"bad JSON", []string{"--config", "{not json", noCatalog}, 2,
			"mcp-gateway stdio: invalid configuration: mcp: invalid JSON at byte 2: invalid character 'n' looking for beginning of object key string\n",
			`err="mcp: invalid JSON at byte 2: invalid character 'n' looking for beginning of object key string"`, ""},
		{"unknown server", []string{"--config", `{"a":{}}`, noCatalog}, 2,
			"mcp-gateway stdio: invalid configuration: " + unescape(unknown) + "\n",
			`err="` + unknown + `"`, ""},
		{"bad log level", []string{"--log-level", "loud"}, 2,
			"mcp-gateway stdio: --log-level: slog: level string \"loud\": unknown name\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(runStdio, tt.args...)
			if code != tt.code || stdout != "" || stderr != tt.stdio {
				t.Errorf("stdio: exit %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, tt.stdio)
			}
			if tt.serve != "" {
				// serve says why it stops in a plain line, not a log record
				code, _, stderr = runCLI(runServe, append([]string{"--token-file="}, tt.args...)...)
				want := "mcp-gateway serve: " + unescape(strings.TrimSuffix(strings.TrimPrefix(tt.serve, `err="`), `"`)) + "\n"
				if stderr != want || code != tt.code {
					t.Errorf("serve: exit %d, stderr %q, want %q", code, stderr, want)
				}
			}
			if tt.launch != "" {
				code, _, stderr = runCLI(runLaunch, tt.args...)
				if code != tt.code || stderr != tt.launch {
					t.Errorf("launcher: exit %d, stderr %q, want %q", code, stderr, tt.launch)
				}
			}
		})
	}
}

func unescape(s string) string { return regexp.MustCompile(`\\"`).ReplaceAllString(s, `"`) }

// Flag values the commands refuse before reading any configuration.
func TestFlagRefusals(t *testing.T) {
	tests := []struct {
		name   string
		run    cliRun
		args   []string
		stderr string
	}{
		{"serve bad log level", runServe, []string{"--log-level", "loud"}, "mcp-gateway serve: --log-level: slog: level string \"loud\": unknown name\n"},
		{"serve negative limit", runServe, []string{"--max-sessions", "-1"}, "mcp-gateway serve: --max-header-bytes, --max-connections and --max-sessions must not be negative\n"},
		{"serve negative timeout", runServe, []string{"--idle-timeout", "-1s"}, "mcp-gateway serve: --read-header-timeout, --body-read-timeout, --idle-timeout, --slow-client-timeout, --stream-keepalive and --session-idle-timeout must not be negative\n"},
		{"launcher argument", runLaunch, []string{"x"}, "mcp-gateway: unexpected argument \"x\"; run mcp-gateway --help\n"},
		{"launcher negative limit", runLaunch, []string{"--max-connections", "-1"}, "mcp-gateway: --max-header-bytes, --max-connections and --max-sessions must not be negative\n"},
		{"pull nothing", runPull, []string{"--catalog-file", "/nonexistent"}, "mcp-gateway pull: name the servers to install; the catalog has: " + catalogNames + "\n"},
		{"pull unknown", runPull, []string{"--catalog-file", "/nonexistent", "memory", "nope"}, "mcp-gateway pull: unknown server \"nope\"; the catalog has: " + catalogNames + "\n"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(tt.run, tt.args...)
		if code != exitUsage || stdout != "" || stderr != tt.stderr {
			t.Errorf("%s: exit %d, stdout %q\nstderr %q\nwant   %q", tt.name, code, stdout, stderr, tt.stderr)
		}
	}
}

// --insecure-no-auth is refused unless the listener is loopback, and
// --tool-prefix takes only its three values.
func TestLoadConfigDecisions(t *testing.T) {
	cfg := []byte(`{"mem":{"runCmd":"true"}}`)
	missing := filepath.Join(t.TempDir(), "none.json")
	tests := []struct {
		g    gatewayFlags
		want string // "" accepted
	}{
		{gatewayFlags{host: "127.0.0.1", noAuth: true, catalogFile: missing}, ""},
		{gatewayFlags{host: "localhost", noAuth: true, catalogFile: missing}, ""},
		{gatewayFlags{host: "[::1]", noAuth: true, catalogFile: missing}, ""},
		{gatewayFlags{host: "0.0.0.0", noAuth: true, catalogFile: missing}, `--insecure-no-auth is only allowed with a loopback --host, not "0.0.0.0"`},
		{gatewayFlags{host: "10.0.0.1", noAuth: true, catalogFile: missing}, `--insecure-no-auth is only allowed with a loopback --host, not "10.0.0.1"`},
		{gatewayFlags{host: "0.0.0.0", catalogFile: missing}, ""},
		{gatewayFlags{host: "0.0.0.0", toolPrefix: "always", catalogFile: missing}, ""},
		{gatewayFlags{host: "0.0.0.0", toolPrefix: "sometimes", catalogFile: missing}, `--tool-prefix must be '', always or never, not "sometimes"`},
	}
	for _, tt := range tests {
		specs, _, err := loadConfig(&tt.g, cfg)
		if tt.want == "" && (err != nil || len(specs) != 1 || specs[0].Name != "mem") || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("%+v: %v %v, want %q", tt.g, specs, err, tt.want)
		}
	}
	for s, want := range map[string]gateway.PrefixMode{"": gateway.PrefixCollisions, "always": gateway.PrefixAlways, "never": gateway.PrefixNever} {
		if m, err := prefixMode(s); m != want || err != nil {
			t.Errorf("prefixMode(%q) = %q %v", s, m, err)
		}
	}
}

// A remote server's URL is checked before anything starts; the refusal
// names the server once. In the launcher, the headers' placeholders must be
// in the server's envs.
func TestCheckRemotes(t *testing.T) {
	guard := &netguard.Policy{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	imds := []mcpconfig.Server{{Name: "a", Kind: mcpconfig.KindRemote, URL: "http://169.254.169.254/mcp"}}
	err := checkRemotes(context.Background(), imds, guard, false)
	want := `mcp server "a": the url http://169.254.169.254/mcp: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to`
	if err == nil || err.Error() != want {
		t.Errorf("cloud metadata URL:\n got  %v\n want %q", err, want)
	}
	if err := checkRemotes(context.Background(), imds, &netguard.Policy{AllowAll: true}, false); err != nil {
		t.Errorf("with --allow-any-address: %v", err)
	}
	withHeader := []mcpconfig.Server{{Name: "r", Kind: mcpconfig.KindRemote, URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}}
	if err := checkRemotes(context.Background(), withHeader, guard, false); err != nil {
		t.Errorf("serve mode resolves headers when it connects, not here: %v", err)
	}
	err = checkRemotes(context.Background(), withHeader, guard, true)
	if want := `mcp server "r": header "Authorization" needs ${TOKEN}, which is not set; add it to the server's "envs"`; err == nil || err.Error() != want {
		t.Errorf("launcher without the env:\n got  %v\n want %q", err, want)
	}
	withHeader[0].Env = map[string]string{"TOKEN": "t"}
	if err := checkRemotes(context.Background(), withHeader, guard, true); err != nil {
		t.Errorf("launcher with the env: %v", err)
	}
	// stdio says it the same way, with serve's exit code for a configuration error.
	code, _, stderr := runCLI(runStdio, "--config", `{"a":{"url":"http://169.254.169.254/mcp"}}`, "--catalog-file=/nonexistent")
	if wantStdio := "mcp-gateway stdio: mcp server \"a\": the url http://169.254.169.254/mcp: 169.254.169.254 is a cloud metadata address, which the gateway does not connect to\n"; code != exitUsage || stderr != wantStdio {
		t.Errorf("stdio: exit %d\n got  %q\n want %q", code, stderr, wantStdio)
	}
}

// serve's ${NAME} lookup for a remote server's headers: the server's envs,
// then the environment (never the gateway's own token), then the secrets
// file.
func TestSecretLookup(t *testing.T) {
	t.Setenv("FROM_ENV", "environment")
	t.Setenv("SHARED", "environment")
	t.Setenv(tokenEnv, "the-gateway-token")
	s := mcpconfig.Server{Name: "r", Env: map[string]string{"SHARED": "envs"}}
	lookup := secretLookup(s, map[string]string{"SHARED": "file", "FROM_ENV": "file", "ONLY_FILE": "file", tokenEnv: "file-token"})
	for name, want := range map[string]string{"SHARED": "envs", "FROM_ENV": "environment", "ONLY_FILE": "file", tokenEnv: "file-token"} {
		if v, ok := lookup(name); !ok || v != want {
			t.Errorf("%s = %q %v, want %q", name, v, ok, want)
		}
	}
	if v, ok := lookup("NOWHERE"); ok {
		t.Errorf("NOWHERE = %q", v)
	}
}

// The secrets file: NAME=value lines, comments and blank lines skipped, a
// file others may read refused, a malformed line named by its number.
func TestReadSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# tokens\n\nAPI_KEY=abc=def\n  SPACED = v \n", 0o600)
	got, err := readSecrets(good)
	if err != nil || len(got) != 2 || got["API_KEY"] != "abc=def" || got["SPACED"] != " v" {
		t.Errorf("good file: %q %v", got, err)
	}
	if got, err := readSecrets(""); got != nil || err != nil {
		t.Errorf("no file: %v %v", got, err)
	}
	open := write("open", "A=1\n", 0o644)
	bad := write("bad", "A=1\n# c\nnovalue\n", 0o600)
	for _, tt := range []struct{ path, want string }{
		{open, "secrets file " + open + " has mode 644: make it readable by its owner only (chmod 600)"},
		{bad, "secrets file " + bad + ", line 3: want NAME=value"},
		{filepath.Join(dir, "none"), "secrets file: stat " + filepath.Join(dir, "none") + ": no such file or directory"},
	} {
		if _, err := readSecrets(tt.path); err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got  %v\n want %q", tt.path, err, tt.want)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "LocalHost": true,
		"0.0.0.0": false, "": false, "10.0.0.1": false, "example.com": false, "::": false} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("isLoopbackHost(%q) = %v", host, got)
		}
	}
}

// A server's process never gets the gateway's own token.
func TestEnvironWithout(t *testing.T) {
	t.Setenv(tokenEnv, "secret")
	t.Setenv("KEEP_ME", "1")
	env := environWithout(tokenEnv)
	if slices.ContainsFunc(env, func(kv string) bool { return regexp.MustCompile("^" + tokenEnv + "=").MatchString(kv) }) || !slices.Contains(env, "KEEP_ME=1") {
		t.Errorf("environment: %q", env)
	}
}

func TestCatalogAndVersion(t *testing.T) {
	code, stdout, stderr := runCLI(runCatalog, "--catalog-file", "/nonexistent")
	if code != 0 || stderr != "" || !regexp.MustCompile(`(?m)^memory  +A persistent knowledge graph of entities, relations and observations$`).MatchString(stdout) {
		t.Errorf("catalog: %d %q %q", code, stdout, stderr)
	}
	old := Version
	Version = "v1.2.3"
	defer func() { Version = old }()
	if code, stdout, _ := runCLI(runVersion); code != 0 || stdout != "mcp-gateway v1.2.3\n" {
		t.Errorf("version: %d %q", code, stdout)
	}
}
