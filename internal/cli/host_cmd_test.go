package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

// The host command's refusals before it serves: exit code and message.
func TestHostCommandRefusals(t *testing.T) {
	busyDir := t.TempDir()
	store, err := registry.Open(busyDir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	free := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // a regular expression of the whole of it
	}{
		{"argument", []string{"x"}, 2, `mcp-gateway host: unexpected argument "x"\n`},
		{"log file", []string{"--log-file", "/nonexistent/dir/log"}, 2, `mcp-gateway host: --log-file: open /nonexistent/dir/log: no such file or directory\n`},
		{"log level", []string{"--log-level", "loud"}, 2, `mcp-gateway host: --log-level: slog: level string "loud": unknown name\n`},
		{"tool prefix", []string{"--tool-prefix", "x"}, 2, `mcp-gateway host: --tool-prefix must be '', always or never, not "x"\n`},
		{"negative limit", []string{"--max-connections", "-1"}, 2, `mcp-gateway host: --max-header-bytes, --max-connections and --max-sessions must not be negative\n`},
		{"state directory in use", []string{"--state-dir", busyDir, "--port", "0"}, 1,
			regexp.QuoteMeta(fmt.Sprintf(`err="state directory in use: another mcp-gateway host (pid %d) uses %s; stop it or pass another --state-dir"`, os.Getpid(), busyDir)) + `\n`},
		{"port in use", []string{"--state-dir", free, "--port", port}, 1,
			regexp.QuoteMeta(fmt.Sprintf(`err="another process (pid %d: `, os.Getpid())) + `.*` + regexp.QuoteMeta(fmt.Sprintf(`) listens on port %s: stop it, or pass another --port: listening on port %s: listen tcp 127.0.0.1:%s: bind: address already in use"`, port, port, port)) + `\n`},
		{"port in use, logging to a file", []string{"--state-dir", free, "--port", port, "--log-file", filepath.Join(free, "log")}, 1,
			regexp.QuoteMeta(fmt.Sprintf(`mcp-gateway host: another process (pid %d: `, os.Getpid())) + `.*` + regexp.QuoteMeta(fmt.Sprintf(`) listens on port %s: stop it, or pass another --port: listening on port %s: listen tcp 127.0.0.1:%s: bind: address already in use`, port, port, port)) + `\n`},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(runHost, tt.args...)
		if code != tt.code || stdout != "" || !regexp.MustCompile(`(?s)^(time=\S+ level=ERROR msg="mcp-gateway host failed" )?`+tt.stderr+`$`).MatchString(stderr) {
			t.Errorf("%s: exit %d (want %d), stdout %q\nstderr %q\nwant   %s", tt.name, code, tt.code, stdout, stderr, tt.stderr)
		}
	}
	// The failure is in the log file too.
	if b, _ := os.ReadFile(filepath.Join(free, "log")); !strings.Contains(string(b), `msg="mcp-gateway host failed"`) {
		t.Errorf("log file: %q", b)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The host command serves its control socket and the MCP endpoint, prints
// the --public-url in sandbox create, keeps what it was told across a
// restart, and stops on SIGTERM with exit 0.
func TestHostCommandRuns(t *testing.T) {
	dir := t.TempDir()
	run := func() (stop func() (int, string)) {
		var logs lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- runHost([]string{"--state-dir", dir, "--port", "0", "--public-url", "https://gw.example/mcp"}, &logs, &logs)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := host.NewClient(dir).Do(ctx, "GET", "/v1/servers", nil, nil); err != nil {
			t.Fatalf("the control socket: %v\n%s", err, logs.String())
		}
		return func() (int, string) {
			if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			return <-done, logs.String()
		}
	}
	stop := run()
	code, stdout, stderr := runCLI(runSandbox, "create", "s", "--json", "--state-dir", dir)
	var created host.SandboxCreated
	if code != 0 || json.Unmarshal([]byte(stdout), &created) != nil || created.URL != "https://gw.example/mcp" {
		t.Errorf("sandbox create: %d %s %s", code, stdout, stderr)
	}
	code, logs := stop()
	if code != exitOK || !strings.Contains(logs, `msg="mcp-gateway host is ready" url=https://gw.example/mcp state_dir=`+dir) || !strings.Contains(logs, `msg="shutting down"`) {
		t.Errorf("exit %d, log:\n%s", code, logs)
	}

	stop = run()
	code, stdout, _ = runCLI(runSandbox, "ls", "--state-dir", dir)
	if code != 0 || stdout != "NAME  MODE     SERVERS\ns     dynamic  -\n" {
		t.Errorf("sandbox ls after a restart: %d %q", code, stdout)
	}
	if code, _ := stop(); code != exitOK {
		t.Errorf("second run: exit %d", code)
	}
}

// mcp-gateway stdio serves the merged view over standard input and output:
// what a client writes is answered there, and the end of its input ends
// the command with exit 0.
func TestStdioCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"t":{"runCmd":%q,"envs":{%q:"1"}}}`, "exec "+exe, testServerEnv)
	input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta","arguments":{}}}
`
	var code int
	var stdout, stderr string
	withStdin(t, input, func() {
		code, stdout, stderr = runCLI(runStdio, "--config", cfg, "--catalog-file", filepath.Join(t.TempDir(), "none"), "--log-level", "warn")
	})
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	byID := map[string]json.RawMessage{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", line)
		}
		byID[string(m.ID)] = m.Result
	}
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(byID["2"], &list); err != nil || len(list.Tools) != 2 || list.Tools[0].Name != "alpha" || list.Tools[1].Name != "beta" {
		t.Errorf("tools/list: %s", byID["2"])
	}
	if !strings.Contains(string(byID["3"]), `"text":"beta"`) {
		t.Errorf("tools/call beta: %s", byID["3"])
	}
}
