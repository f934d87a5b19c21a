package cli

// The administration commands against a real host: the host package's
// daemon core, served on its control socket in a test directory, with the
// test binary as the registered local server (an MCP server built with the
// official Go SDK, testServerEnv set). Each step checks exactly what the
// person at the terminal sees: stdout, stderr and the exit code.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testServerEnv = "CLI_TEST_SERVER"

func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(testServerEnv); ok {
		s := mcp.NewServer(&mcp.Implementation{Name: "cli-test-server", Version: "1"}, nil)
		for _, name := range []string{"alpha", "beta"} {
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "A tool."},
				func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
				})
		}
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Print(err)
		}
		return
	}
	os.Exit(m.Run())
}

// startHost runs a host on a new state directory and serves its control
// socket; it returns the directory.
func startHost(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	h, err := host.Open(context.Background(), host.Options{
		Dir: dir, URL: "http://127.0.0.1:8811/mcp",
		Attach:       attach.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ServerLog: io.Discard, Guard: &netguard.Policy{AllowAll: true}},
		Info:         gateway.Info{Name: "mcp-gateway", Version: "test"},
		StartTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := host.ListenControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.ControlHandler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); h.Close() })
	return dir
}

// withStdin runs f with os.Stdin reading input (a pipe, as `printf | cmd`).
func withStdin(t *testing.T, input string, f func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(w, input); w.Close() }()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	f()
}

type cliRun func(args []string, stdout, stderr io.Writer) int

func runCLI(run cliRun, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

var tokenRE = regexp.MustCompile(`[0-9a-f]{64}`)

func TestAdminCommands(t *testing.T) {
	dir := startHost(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sd := "--state-dir=" + dir
	steps := []struct {
		name   string
		run    cliRun
		args   []string
		stdin  string // for secret set
		code   int
		stdout string
		stderr string
	}{
		{"server add", runServer, []string{"add", "mem", "--command", exe, "--env", testServerEnv + "=1", "--env", "DB=${db}", "--description", "Test server.", sd}, "", 0,
			"warning: its tools could not be listed yet, so mcp-find knows only its name and description: mcp server \"mem\": env DB: ${db} is not set (secret mcp:mem:db: not set; set it with `mcp-gateway secret set mcp:mem:db`)\nregistered mcp server \"mem\" (0 tools)\n", ""},
		{"server add again", runServer, []string{"add", "mem", "--command", exe, sd}, "", 1,
			"", "mcp-gateway server add: mcp server \"mem\" is already registered (" + exe + "); remove it first, or pass --replace\n"},
		{"server add without a name", runServer, []string{"add", "--command", exe, sd}, "", 2,
			"", "mcp-gateway server add: give the server's NAME\n"},
		{"server add refused", runServer, []string{"add", "r", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: Bearer abc", sd}, "", 1,
			"", "mcp-gateway server add: mcp server \"r\": header Authorization carries a credential, so its value must name a stored secret: write it like 'Bearer ${api-key}' and store the value with `mcp-gateway secret set mcp:r:api-key`\n"},
		{"secret set", runSecret, []string{"set", "mcp:mem:db", sd}, "/tmp/db\n", 0,
			"secret mcp:mem:db stored\n", ""},
		{"secret set unused", runSecret, []string{"set", "mcp:mem:other", sd}, "x", 0,
			"warning: mcp server \"mem\" names no ${other} in its headers, env or args, so this secret is not used\nsecret mcp:mem:other stored\n", ""},
		{"secret set empty", runSecret, []string{"set", "mcp:mem:db", sd}, "\n", 2,
			"", "mcp-gateway secret set: the value is empty: pipe it on standard input, e.g. printf %s \"$TOKEN\" | mcp-gateway secret set mcp:mem:db\n"},
		{"secret set bad name", runSecret, []string{"set", "db", sd}, "x", 2,
			"", "mcp-gateway secret set: secret name \"db\": it does not start with \"mcp:\"; expected mcp:<server>:<key>, both made of letters, digits, '.', '-' and '_' (for example mcp:github:token)\n"},
		{"server inspect without a name", runServer, []string{"inspect", sd}, "", 2,
			"", "mcp-gateway server inspect: give exactly one server NAME, got 0 arguments\n"},
		{"sandbox create", runSandbox, []string{"create", "s1", "--static", "mem", sd}, "", 0,
			"sandbox \"s1\" created (static: mem)\nendpoint: http://127.0.0.1:8811/mcp\ntoken:    TOKEN\n\nClient configuration (mcpServers):\n{\n  \"mcpServers\": {\n    \"mcp-gateway\": {\n      \"headers\": {\n        \"Authorization\": \"Bearer TOKEN\"\n      },\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:8811/mcp\"\n    }\n  }\n}\n\nClaude Code:\n  claude mcp add --transport http mcp-gateway http://127.0.0.1:8811/mcp --header \"Authorization: Bearer TOKEN\"\n", ""},
		{"sandbox create dynamic", runSandbox, []string{"create", "s2", sd}, "", 0,
			"sandbox \"s2\" created (dynamic)\nendpoint: http://127.0.0.1:8811/mcp\ntoken:    TOKEN\n\nClient configuration (mcpServers):\n{\n  \"mcpServers\": {\n    \"mcp-gateway\": {\n      \"headers\": {\n        \"Authorization\": \"Bearer TOKEN\"\n      },\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:8811/mcp\"\n    }\n  }\n}\n\nClaude Code:\n  claude mcp add --transport http mcp-gateway http://127.0.0.1:8811/mcp --header \"Authorization: Bearer TOKEN\"\n", ""},
		{"sandbox create again", runSandbox, []string{"create", "s1", sd}, "", 1,
			"", "mcp-gateway sandbox create: sandbox \"s1\" already exists; remove it first with `mcp-gateway sandbox rm s1`\n"},
		{"load", runLoad(false), []string{"mem", "--sandbox", "s2", sd}, "", 0,
			"loaded \"mem\" into sandbox \"s2\" (2 tools)\n", ""},
		{"load again", runLoad(false), []string{"mem", "--sandbox", "s2", sd}, "", 1,
			"", "mcp-gateway load: mcp server \"mem\" is already loaded in sandbox \"s2\"\n"},
		{"load without a sandbox", runLoad(false), []string{"mem", sd}, "", 2,
			"", "mcp-gateway load: give one SERVER and --sandbox NAME\n"},
		{"server ls", runServer, []string{"ls", sd}, "", 0,
			"NAME  KIND   TOOLS  SANDBOXES  ENDPOINT\nmem   local  2      s1,s2      " + exe + "\n", ""},
		{"sandbox ls", runSandbox, []string{"ls", sd}, "", 0,
			"NAME  MODE     SERVERS\ns1    static   mem\ns2    dynamic  mem\n", ""},
		{"unload", runLoad(true), []string{"mem", "--sandbox", "s2", sd}, "", 0,
			"unloaded \"mem\" from sandbox \"s2\"\n", ""},
		{"unload again", runLoad(true), []string{"mem", "--sandbox", "s2", sd}, "", 1,
			"", "mcp-gateway unload: mcp server \"mem\" is not loaded in sandbox \"s2\" (it has: none)\n"},
		{"sandbox rm", runSandbox, []string{"rm", "s2", sd}, "", 0,
			"sandbox \"s2\" removed; its token is revoked\n", ""},
		{"sandbox rm unknown", runSandbox, []string{"rm", "s2", sd}, "", 1,
			"", "mcp-gateway sandbox rm: sandbox \"s2\" does not exist (sandboxes: s1)\n"},
		{"secret rm", runSecret, []string{"rm", "mcp:mem:other", sd}, "", 0,
			"secret mcp:mem:other removed\n", ""},
		{"server rm", runServer, []string{"rm", "mem", sd}, "", 0,
			"removed mcp server \"mem\"\ndetached from sandboxes: s1\nits secrets are still stored: mcp:mem:db\nremove them with: mcp-gateway secret rm mcp:mem:db\n", ""},
		{"sandbox ls after server rm", runSandbox, []string{"ls", sd}, "", 0,
			"NAME  MODE    SERVERS\ns1    static  -\n", ""},
		{"unknown subcommand", runServer, []string{"frob", sd}, "", 2,
			"", "mcp-gateway server: unknown command \"frob\" (run 'mcp-gateway server --help')\n"},
	}
	for _, st := range steps {
		var code int
		var stdout, stderr string
		withStdin(t, st.stdin, func() { code, stdout, stderr = runCLI(st.run, st.args...) })
		stdout = tokenRE.ReplaceAllString(stdout, "TOKEN")
		if code != st.code || stdout != st.stdout || stderr != st.stderr {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", st.name, code, st.code, stdout, st.stdout, stderr, st.stderr)
		}
	}
}

// The JSON outputs and the secret listing, which carry times and tokens.
func TestAdminCommandsJSON(t *testing.T) {
	dir := startHost(t)
	exe, _ := os.Executable()
	sd := "--state-dir=" + dir
	if code, _, stderr := runCLI(runServer, "add", "mem", "--command", exe, "--env", testServerEnv+"=1", sd); code != 0 {
		t.Fatalf("server add: %s", stderr)
	}
	code, stdout, _ := runCLI(runSandbox, "create", "s", "--json", sd)
	var created host.SandboxCreated
	if code != 0 || json.Unmarshal([]byte(stdout), &created) != nil || created.Name != "s" || created.Mode != "dynamic" || !tokenRE.MatchString(created.Token) {
		t.Errorf("sandbox create --json: %d %s", code, stdout)
	}
	code, stdout, _ = runCLI(runServer, "ls", "--json", sd)
	var servers []host.ServerSummary
	if code != 0 || json.Unmarshal([]byte(stdout), &servers) != nil || len(servers) != 1 || servers[0].Tools != 2 || servers[0].Endpoint != exe {
		t.Errorf("server ls --json: %d %s", code, stdout)
	}
	code, stdout, _ = runCLI(runServer, "inspect", "mem", sd)
	var info map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &info) != nil || info["name"] != "mem" || info["kind"] != "local" {
		t.Errorf("server inspect: %d %s", code, stdout)
	}
	code, stdout, _ = runCLI(runSandbox, "ls", "--json", sd)
	var sandboxes []host.SandboxSummary
	if code != 0 || json.Unmarshal([]byte(stdout), &sandboxes) != nil || len(sandboxes) != 1 || sandboxes[0].Mode != "dynamic" {
		t.Errorf("sandbox ls --json: %d %s", code, stdout)
	}
	// A server that does not start is marked in sandbox ls.
	runCLI(runServer, "add", "broken", "--command", "/bin/false", sd)
	code, stdout, _ = runCLI(runSandbox, "create", "b", "--static", "broken", sd)
	if code != 0 || !strings.HasPrefix(stdout, "warning: mcp server \"broken\" did not start (") {
		t.Errorf("sandbox create with a failing server: %d %q", code, stdout)
	}
	code, stdout, _ = runCLI(runSandbox, "ls", sd)
	if want := "NAME  MODE     SERVERS\nb     static   broken (failed)\ns     dynamic  -\n"; code != 0 || stdout != want {
		t.Errorf("sandbox ls with a failing server:\n%s\nwant:\n%s", stdout, want)
	}
	withStdin(t, "v", func() { runCLI(runSecret, "set", "mcp:mem:k", sd) })
	code, stdout, _ = runCLI(runSecret, "ls", sd)
	if code != 0 || !regexp.MustCompile(`^NAME       SET\nmcp:mem:k  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`).MatchString(stdout) {
		t.Errorf("secret ls: %d %q", code, stdout)
	}
	if strings.Contains(stdout, "v\n") {
		t.Errorf("secret ls shows a value: %q", stdout)
	}
}

// With no host on the state directory, a command says so and how to start it.
func TestAdminCommandNoHost(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(runServer, "ls", "--state-dir", dir)
	want := "mcp-gateway server ls: mcp-gateway host is not running (no control socket answers at " + filepath.Join(dir, host.SocketFile) + "): start it with `mcp-gateway host`, or pass the --state-dir it uses\n"
	if code != exitError || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
}
