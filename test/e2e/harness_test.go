// Package e2e tests the real mcp-gateway binary, launched exactly as the
// sandbox SDKs launch it, over real HTTP, in front of real MCP servers (the
// npm reference servers pinned in test/npm, and a Go server of our own for
// failure cases), with real clients (the Go SDK's, the inspector CLI).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	gatewayBin string // the built binary
	npmBin     string // test/npm/node_modules/.bin
	standIns   string // directory of the stand-in npx and uvx, first on PATH
)

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		runTestServer()
		return
	}
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "mcp-gateway-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	root, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	npmBin = filepath.Join(root, "test", "npm", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(npmBin, "mcp-server-memory")); err != nil {
		return 0, fmt.Errorf("the npm test servers are not installed: run `npm ci` in test/npm (make test does): %w", err)
	}
	gatewayBin = filepath.Join(dir, "mcp-gateway")
	// Built with the race detector, so the real binary's races fail these tests too.
	build := exec.Command("go", "build", "-race", "-o", gatewayBin, "./cmd/mcp-gateway")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building mcp-gateway: %v\n%s", err, out)
	}
	// The code-mode runner, beside the gateway where it finds it; without
	// the race detector, whose shadow memory does not fit under the data
	// cap the gateway puts on a runner.
	build = exec.Command("go", "build", "-o", filepath.Join(dir, "mcp-gateway-codemode"), "./cmd/mcp-gateway-codemode")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building mcp-gateway-codemode: %v\n%s", err, out)
	}
	standIns = filepath.Join(dir, "stand-ins")
	if err := writeStandIns(standIns); err != nil {
		return 0, err
	}
	// Node 22 from test/npm first, then the stand-ins before it all.
	os.Setenv("PATH", standIns+":"+npmBin+":"+os.Getenv("PATH"))
	return m.Run(), nil
}

// writeStandIns writes `npx` (runs an installed npm server by its package
// name, never downloading) and `uvx` (records its argv, then runs the memory
// server in place of the Python server it was asked for). Both append their
// argv to $STANDIN_LOG.
func writeStandIns(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// One write per line, so concurrent servers' lines do not interleave.
	record := `line="$(basename "$0")"; for a in "$@"; do line="$line $a"; done; echo "$line" >> "$STANDIN_LOG"
`
	npx := `#!/bin/sh
` + record + `
[ "$1" = "-y" ] && shift
pkg="$1"; shift
case "$pkg" in @*/*@*) pkg="${pkg%@*}";; esac # a pinned version: the installed one stands in
exec "` + npmBin + `/mcp-server-${pkg#@modelcontextprotocol/server-}" "$@"
`
	uvx := `#!/bin/sh
` + record + `
exec "` + npmBin + `/mcp-server-memory"
`
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(npx), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "uvx"), []byte(uvx), 0o755)
}

// gw is one launched gateway.
type gw struct {
	t       *testing.T
	dir     string // its files: token, pid, log, catalog, clones
	token   string
	port    int
	pid     int
	url     string
	stdout  string
	stderr  string
	exit    int
	standIn string // the stand-ins' argv log
}

func (g *gw) tokenFile() string { return filepath.Join(g.dir, "etc", "mcp-gateway", ".token") }
func (g *gw) pidFile() string   { return filepath.Join(g.dir, "run", "mcp-gateway.pid") }
func (g *gw) logFile() string   { return filepath.Join(g.dir, "log", "mcp-gateway.log") }
func (g *gw) log() string {
	b, _ := os.ReadFile(g.logFile())
	return string(b)
}

// newGW prepares the paths of a gateway without launching it.
func newGW(t *testing.T) *gw {
	dir := t.TempDir()
	return &gw{t: t, dir: dir, token: "test-token-" + strconv.Itoa(os.Getpid()) + "-" + t.Name(), standIn: filepath.Join(dir, "stand-in.log")}
}

var readyLine = regexp.MustCompile(`^MCP gateway is ready on port (\d+) \(pid (\d+)\)\n$`)

// launch runs `mcp-gateway --config <config>` as the SDKs do and waits for it
// to exit; on success it registers the gateway's shutdown as a cleanup.
func (g *gw) launch(config string, extra ...string) {
	g.t.Helper()
	args := append([]string{
		"--config", config,
		"--host", "127.0.0.1", "--port", "0",
		"--token-file", g.tokenFile(),
		"--pid-file", g.pidFile(),
		"--log-file", g.logFile(),
		"--catalog-file", filepath.Join(g.dir, "etc", "mcp-gateway", "catalog.json"),
		"--github-dir", filepath.Join(g.dir, "opt", "github"),
		"--startup-timeout", "40s",
	}, extra...)
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+g.token, "STANDIN_LOG="+g.standIn)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	g.stdout, g.stderr = stdout.String(), stderr.String()
	g.exit = cmd.ProcessState.ExitCode()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			g.t.Fatalf("running the launcher: %v", err)
		}
		return
	}
	m := readyLine.FindStringSubmatch(g.stdout)
	if m == nil {
		g.t.Fatalf("launcher printed %q, want the ready line", g.stdout)
	}
	g.port, _ = strconv.Atoi(m[1])
	g.pid, _ = strconv.Atoi(m[2])
	g.url = fmt.Sprintf("http://127.0.0.1:%d/mcp", g.port)
	g.t.Cleanup(g.stop)
}

// mustLaunch launches and fails the test unless the launch succeeded.
func (g *gw) mustLaunch(config string, extra ...string) {
	g.t.Helper()
	g.launch(config, extra...)
	if g.exit != 0 {
		g.t.Fatalf("launch exited %d\nstderr: %s\nlog: %s", g.exit, g.stderr, g.log())
	}
}

// stop sends SIGTERM to the gateway and waits until it and every server are gone.
func (g *gw) stop() {
	if g.pid == 0 {
		return
	}
	procs := descendants(g.pid)
	_ = syscall.Kill(g.pid, syscall.SIGTERM)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && alive(g.pid) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(g.pid) {
		g.t.Errorf("gateway pid %d still alive 15s after SIGTERM", g.pid)
		_ = syscall.Kill(g.pid, syscall.SIGKILL)
	}
	for _, p := range procs {
		for time.Now().Before(deadline) && alive(p) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p) {
			g.t.Errorf("server process %d outlived the gateway", p)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	g.pid = 0
}

func alive(pid int) bool {
	// A zombie is gone for our purposes.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// descendants lists every living process below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens an MCP client session to the gateway with the Go SDK, in
// the newest era both speak (2026-07-28).
func (g *gw) connect(ctx context.Context) *mcp.ClientSession {
	g.t.Helper()
	return g.connectEra(ctx, "")
}

// connectEra connects with a given protocol version ("" for the SDK's
// newest); "2025-11-25" makes a session-era client.
func (g *gw) connectEra(ctx context.Context, version string) *mcp.ClientSession {
	g.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   g.url,
		HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		g.t.Fatalf("connecting to the gateway: %v\nlog:\n%s", err, g.log())
	}
	if version != "" && cs.InitializeResult().ProtocolVersion != version {
		g.t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, version)
	}
	g.t.Cleanup(func() { cs.Close() })
	return cs
}

// toolNames lists every tool name through the client, following cursors.
func toolNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// text joins the text content of a tool result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// serverPIDs maps each server's command line (first 200 bytes) to its pid, for the gateway's children.
func (g *gw) children() map[int]string {
	out := map[int]string{}
	for _, p := range descendants(g.pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			continue
		}
		out[p] = strings.ReplaceAll(string(b), "\x00", " ")
	}
	return out
}

// readLines returns the lines of a file.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}
