package e2e

// The first hour of a new user (issue 24): help that lists and shows
// everything, a busy port, Ctrl-C during a start-up, and the messages met
// on the way. Each test runs the real binary.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runIn runs the binary with args in dir and returns its exit code and output.
func runIn(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(gatewayBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running mcp-gateway %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// mcp-gateway --help lists every command, as mcp-gateway help does; a
// group's help shows its descriptions whole; flags are shown with two
// dashes and a word as their value name.
func TestFirstHourHelp(t *testing.T) {
	code, help, errOut := runIn(t, "", nil, "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("mcp-gateway --help: exit %d, stderr %q", code, errOut)
	}
	for _, c := range []string{"serve", "stdio", "host", "server", "secret", "auth", "sandbox", "load", "unload", "policy", "approval", "audit", "catalog", "pull", "version"} {
		if !strings.Contains(help, "\n  "+c+" ") {
			t.Errorf("mcp-gateway --help does not list %s:\n%s", c, help)
		}
	}
	if _, other, _ := runIn(t, "", nil, "help"); other != help {
		t.Errorf("mcp-gateway help differs from mcp-gateway --help:\n%s\n---\n%s", other, help)
	}

	_, approval, _ := runIn(t, "", nil, "approval", "--help")
	// approval ls's description, past its first line
	for _, want := range []string{"@requireApproval), oldest first: id, time, sandbox, method, server/tool,", "arguments, reason. Unanswered within the daemon's --approval-timeout, a call is denied."} {
		if !strings.Contains(approval, want) {
			t.Errorf("approval --help cuts a description: %q missing\n%s", want, approval)
		}
	}

	_, host, _ := runIn(t, "", nil, "host", "--help")
	for _, want := range []string{"\n  --state-dir directory\n", "\n  --approval-timeout duration\n", "\n  --max-pending-approvals int\n"} {
		if !strings.Contains(host, want) {
			t.Errorf("host --help lacks %q:\n%s", want, host)
		}
	}
	for _, line := range strings.Split(host, "\n") {
		if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
			t.Errorf("host --help shows a flag with one dash: %q", line)
		}
		if strings.HasPrefix(line, "  --") && strings.Contains(line, "mcp-gateway") {
			t.Errorf("host --help shows doc text as a flag's value name: %q", line)
		}
	}
}

// slowServer is a server command that tells the test it started (its
// parent's pid and its own, on the FIFO it returns) and never answers
// initialize; mark, if not empty, is a file it creates when it starts.
func slowServer(t *testing.T) (config, fifo string) {
	fifo = filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf(`sh -c 'echo $PPID $$ > %s; exec sleep 600'`, fifo)
	return fmt.Sprintf(`{"slow": {"runCmd": %q}}`, cmd), fifo
}

// awaitStart waits until the slow server has started and returns its
// parent's and its own pid; done is closed if the command under test exits
// first. The processes are killed when the test ends, whatever happened.
func awaitStart(t *testing.T, fifo string, done <-chan struct{}) (parent, server int) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the server opens it
		got <- string(b)
	}()
	select {
	case line := <-got:
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("the slow server wrote %q", line)
		}
		parent, _ = strconv.Atoi(f[0])
		server, _ = strconv.Atoi(f[1])
		t.Cleanup(func() {
			_ = syscall.Kill(server, syscall.SIGKILL)
			_ = syscall.Kill(parent, syscall.SIGKILL)
		})
		return parent, server
	case <-done:
		t.Fatal("the command exited before its server started")
	case <-time.After(2 * time.Minute): // a hang guard, not a measure
		t.Fatal("the slow server never started")
	}
	return 0, 0
}

// Ctrl-C during the launcher's start-up stops the whole group, as a
// failure does, and says so; nothing keeps running, no token or pid file
// is left, and the next launch is not told "already running".
func TestFirstHourCtrlCDuringLaunch(t *testing.T) {
	g := newGW(t)
	config, fifo := slowServer(t)
	cmd := exec.Command(gatewayBin, "--config", config,
		"--host", "127.0.0.1", "--port", "0",
		"--token-file", g.tokenFile(), "--pid-file", g.pidFile(), "--log-file", g.logFile(),
		"--catalog-file", filepath.Join(g.dir, "none.json"), "--github-dir", filepath.Join(g.dir, "gh"),
		"--startup-timeout", "5m")
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+g.token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	serving, server := awaitStart(t, fifo, done)

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("launcher interrupted: exit %d (%s), want 130", code, cmd.ProcessState)
	}
	if want := "mcp-gateway: interrupted: the start-up was stopped, the gateway and its servers with it, and its token and pid files removed; nothing keeps running\n"; stderr.String() != want {
		t.Errorf("launcher's stderr %q, want %q", stderr.String(), want)
	}
	if stdout.Len() != 0 {
		t.Errorf("launcher's stdout %q, want nothing", stdout.String())
	}
	for _, pid := range []int{serving, server} {
		if alive(pid) {
			t.Errorf("process %d (%s) keeps running after the interrupted launch", pid, comm(pid))
		}
	}
	for _, f := range []string{g.tokenFile(), g.pidFile()} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the interrupted launch: %v; want it removed", f, err)
		}
	}

	g.mustLaunch(fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()))
	if strings.Contains(g.stderr, "already running") {
		t.Errorf("the next launch: %s", g.stderr)
	}
}

// comm is a process's command name, for messages.
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// Ctrl-C during serve's start-up stops it without blaming a server, says
// nothing is ready, removes the token file it wrote, and exits 130.
func TestFirstHourCtrlCDuringServe(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	config, fifo := slowServer(t)
	cmd := exec.Command(gatewayBin, "serve", "--config", config, "--host", "127.0.0.1", "--port", "0",
		"--token-file", tokenFile, "--catalog-file", filepath.Join(dir, "none.json"), "--startup-timeout", "5m")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	_, server := awaitStart(t, fifo, done)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-done
	out := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("serve interrupted: exit %d, want 130\n%s", code, out)
	}
	for _, bad := range []string{"did not answer initialize", "failed to start", "MCP gateway is ready", "level=ERROR"} {
		if strings.Contains(out, bad) {
			t.Errorf("serve interrupted during start-up logged %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "start-up interrupted by a signal; the servers were stopped") {
		t.Errorf("serve does not say its start-up was interrupted:\n%s", out)
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file after the interrupted serve: %v; want it removed", err)
	}
	if alive(server) {
		t.Errorf("the server (pid %d) outlived serve", server)
	}
}

// A busy port fails serve and the launcher at once, naming the process
// that holds it and suggesting --port; no server is started or blamed and
// the token file in place is not overwritten.
func TestFirstHourBusyPort(t *testing.T) {
	port := busyPort(t) // held by this test process
	holder := fmt.Sprintf("another process (pid %d: ", os.Getpid())
	check := func(t *testing.T, who string, code int, out, tokenFile, mark string) {
		t.Helper()
		if code != 1 {
			t.Errorf("%s on a busy port: exit %d, want 1\n%s", who, code, out)
		}
		for _, want := range []string{holder, fmt.Sprintf(") listens on port %d: stop it, or pass another --port", port)} {
			if !strings.Contains(out, want) {
				t.Errorf("%s on a busy port does not say %q:\n%s", who, want, out)
			}
		}
		for _, bad := range []string{"did not answer initialize", "failed to start", "bearer token written", "level=ERROR"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s on a busy port said %q:\n%s", who, bad, out)
			}
		}
		if b, err := os.ReadFile(tokenFile); string(b) != "the running gateway's token" {
			t.Errorf("%s on a busy port: token file holds %q (%v), want it untouched", who, b, err)
		}
		if _, err := os.Stat(mark); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s on a busy port started a server (%v)", who, err)
		}
	}
	server := func(dir string) (config, mark string) {
		mark = filepath.Join(dir, "started")
		return fmt.Sprintf(`{"one": {"runCmd": %q}}`, "sh -c 'touch "+mark+"; exec sleep 600'"), mark
	}

	t.Run("serve", func(t *testing.T) {
		dir := t.TempDir()
		tokenFile := filepath.Join(dir, "token")
		if err := os.WriteFile(tokenFile, []byte("the running gateway's token"), 0o600); err != nil {
			t.Fatal(err)
		}
		config, mark := server(dir)
		code, stdout, stderr := runIn(t, dir, nil, "serve", "--config", config, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
			"--token-file", tokenFile, "--catalog-file", filepath.Join(dir, "none.json"))
		check(t, "serve", code, stdout+stderr, tokenFile, mark)
		if !strings.HasPrefix(stderr, "mcp-gateway serve: another process") {
			t.Errorf("serve's fatal error is not a plain line on stderr: %q", stderr)
		}
	})
	t.Run("launcher", func(t *testing.T) {
		g := newGW(t)
		if err := os.MkdirAll(filepath.Dir(g.tokenFile()), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(g.tokenFile(), []byte("the running gateway's token"), 0o600); err != nil {
			t.Fatal(err)
		}
		config, mark := server(g.dir)
		g.launch(config, "--port", fmt.Sprint(port))
		check(t, "the launcher", g.exit, g.stdout+g.stderr+g.log(), g.tokenFile(), mark)
	})
}

// serve's fatal errors are plain lines on stderr, a multi-line reason
// included (not a log record with escaped newlines); a Cedar syntax error
// names file:line:col and what was expected.
func TestFirstHourServeFatalErrors(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runIn(t, dir, nil, "serve", "--config", `{"a": {}, "b": {}}`, "--token-file", "", "--catalog-file", filepath.Join(dir, "none.json"))
	if code != 2 || stdout != "" ||
		!strings.HasPrefix(stderr, `mcp-gateway serve: mcp server "a": unknown server;`) ||
		!strings.Contains(stderr, "\n"+`mcp server "b": unknown server;`) {
		t.Errorf("serve with two unknown servers: exit %d, stderr %q; want exit 2 and the two reasons on their own lines", code, stderr)
	}

	policy := filepath.Join(dir, "rules.cedar")
	if err := os.WriteFile(policy, []byte("permit (principal, action, resource);\nforbid (principal, action resource);\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runIn(t, dir, nil, "serve", "--config", `{}`, "--token-file", "", "--catalog-file", filepath.Join(dir, "none.json"), "--policy-file", policy)
	if want := policy + `:2:27: syntax error: expected ",", found "resource"`; code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "exact got") {
		t.Errorf("serve with a Cedar syntax error: exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
	}
}

// server add --metadata ./server.json reads the file in the caller's
// directory, not the daemon's.
func TestFirstHourMetadataInCallersDirectory(t *testing.T) {
	standInLog := filepath.Join(t.TempDir(), "standin.log")
	t.Setenv("STANDIN_LOG", standInLog)
	h := startHost(t, filepath.Join(t.TempDir(), "state"), "--server-env", "STANDIN_LOG")
	caller := t.TempDir()
	serverJSON := `{"name":"io.github.modelcontextprotocol/server-memory","description":"Knowledge graph memory","version":"2026.8.31",
		"packages":[{"registryType":"npm","identifier":"@modelcontextprotocol/server-memory","version":"2026.8.31","transport":{"type":"stdio"}}]}`
	if err := os.WriteFile(filepath.Join(caller, "server.json"), []byte(serverJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn(t, caller, []string{"MCP_GATEWAY_STATE_DIR=" + h.state}, "server", "add", "mem", "--metadata", "./server.json")
	if code != 0 || !strings.Contains(out, `registered mcp server "mem" (9 tools)`) {
		t.Fatalf("server add --metadata ./server.json from %s: exit %d\n%s%s\nhost log:\n%s", caller, code, out, errOut, h.log())
	}
	if out = h.mustCLI("", "server", "inspect", "mem"); !strings.Contains(out, filepath.Join(caller, "server.json")) {
		t.Errorf("server inspect mem does not name the caller's file:\n%s", out)
	}
}

// An SSE priming event (an id and empty data, which servers send to make
// a stream resumable) is not warned about: one WARN per event flooded the
// log.
func TestFirstHourPrimingEventsAreQuiet(t *testing.T) {
	everything := startEverythingHTTP(t, "streamableHttp")
	s := startServe(t, fmt.Sprintf(`{"everything": {"url": %q}}`, everything+"/mcp"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := s.connect(ctx)
	defer cs.Close()
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint("primed ", i)}})
		if err != nil || !strings.Contains(text(res), fmt.Sprint("primed ", i)) {
			t.Fatalf("echo through the gateway: %v %v\n%s", res, err, s.serveLog())
		}
	}
	if log := s.serveLog(); strings.Contains(log, "not a JSON-RPC message") {
		t.Errorf("the gateway warned about priming events:\n%s", log)
	}
}
