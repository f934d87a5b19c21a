package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const testToken = "3f2c9a4e-5b61-4c1d-9e8f-0a7b6c5d4e3f"

// testOptions points every file into a fresh temporary directory and runs the
// test binary as the serving process in the given mode.
func testOptions(t *testing.T, mode string, env ...string) Options {
	t.Helper()
	dir := t.TempDir()
	return Options{
		Args:      []string{"serve", "--ready-fd=3"},
		Env:       append(append(os.Environ(), modeEnv+"="+mode), env...),
		LogFile:   filepath.Join(dir, "log", "mcp-gateway.log"),
		PIDFile:   filepath.Join(dir, "run", "mcp-gateway.pid"),
		TokenFile: filepath.Join(dir, "etc", "mcp-gateway", ".token"),
		Token:     testToken,
		KillGrace: 500 * time.Millisecond,
	}
}

// launch calls Launch and makes sure a started gateway is killed when the test
// ends.
func launch(t *testing.T, ctx context.Context, opts Options) (*Result, error) {
	t.Helper()
	res, err := Launch(ctx, opts)
	if res != nil {
		t.Cleanup(func() { killSession(res.PID) })
	}
	return res, err
}

// killSession kills every process of session sid and reaps its leader if it
// is this process's child.
func killSession(sid int) {
	signalSession(sid, syscall.SIGKILL)
	waitSessionEmpty(sid, nil, 10*time.Second)
	var ws syscall.WaitStatus
	syscall.Wait4(sid, &ws, syscall.WNOHANG, nil)
}

func killPIDs(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z' && st.state != 'X'
}

// waitGone waits for every pid to be gone (or a zombie). Nothing but Launch
// kills these processes, so the bound only keeps a broken Launch from hanging
// the test.
func waitGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) is still running", what, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func assertGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (stat: %v)", path, err)
	}
}

func TestLaunchReady(t *testing.T) {
	opts := testOptions(t, "ready")
	res, err := launch(t, context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.PID <= 0 || res.Port <= 0 {
		t.Fatalf("Result = %+v, want a pid and the bound port", res)
	}

	t.Run("token file", func(t *testing.T) {
		b, err := os.ReadFile(opts.TokenFile)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != testToken {
			t.Errorf("token file holds %q, want %q (no newline)", b, testToken)
		}
		if m := fileMode(t, opts.TokenFile); m != 0o600 {
			t.Errorf("token file mode %o, want 600", m)
		}
		if m := fileMode(t, filepath.Dir(opts.TokenFile)); m != 0o700 {
			t.Errorf("token directory mode %o, want 700", m)
		}
	})
	t.Run("pid file", func(t *testing.T) {
		b, err := os.ReadFile(opts.PIDFile)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%d\n", res.PID); string(b) != want {
			t.Errorf("pid file holds %q, want %q", b, want)
		}
		if pid, ok := Running(opts.PIDFile); !ok || pid != res.PID {
			t.Errorf("Running = %d, %v; want %d, true", pid, ok, res.PID)
		}
	})
	t.Run("log file", func(t *testing.T) {
		b, err := os.ReadFile(opts.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "serving\n") {
			t.Errorf("log holds %q, want the serving process's stderr", b)
		}
		if m := fileMode(t, opts.LogFile); m != 0o644 {
			t.Errorf("log file mode %o, want 644", m)
		}
		if m := fileMode(t, filepath.Dir(opts.LogFile)); m != 0o755 {
			t.Errorf("log directory mode %o, want 755", m)
		}
	})
	t.Run("detached", func(t *testing.T) {
		st, err := readStat(res.PID)
		if err != nil || st.state == 'Z' {
			t.Fatalf("serving process %d is not running after Launch returned (stat %+v, %v)", res.PID, st, err)
		}
		self, err := readStat(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if st.session != res.PID || st.pgrp != res.PID {
			t.Errorf("serving process: session %d, group %d; want both %d (its own)", st.session, st.pgrp, res.PID)
		}
		if self.session == st.session || self.pgrp == st.pgrp {
			t.Errorf("serving process shares the launcher's session %d or group %d", self.session, self.pgrp)
		}
	})
}

func TestLaunchHandoffIsPrivate(t *testing.T) {
	secret := make([]byte, 16)
	rand.Read(secret)
	token := hex.EncodeToString(secret)
	// Larger than a pipe's buffer, so the handoff needs a reader while it is
	// written.
	handoff := []byte(token + "\n" + `{"memory":{},"filesystem":{"paths":["` + strings.Repeat("x", 300<<10) + `"]}}`)
	sum := sha256.Sum256(handoff)

	opts := testOptions(t, "handoff",
		handoffSumEnv+"="+hex.EncodeToString(sum[:]),
		secretLenEnv+"="+strconv.Itoa(len(token)),
		tokenEnv+"="+token, // as the SDK sets it; Launch must drop it
	)
	opts.Token = token
	opts.Handoff = handoff
	if _, err := launch(t, context.Background(), opts); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchReportedFailure(t *testing.T) {
	opts := testOptions(t, "fail")
	res, err := launch(t, context.Background(), opts)
	if err == nil {
		t.Fatalf("Launch succeeded (%+v), want the server's failure", res)
	}
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %q, want *StartError", err, err)
	}
	msg := err.Error()
	for _, want := range []string{
		`mcp server "broken": exited with status 1 before listing its tools`,
		"last 30 lines of " + opts.LogFile,
		"[broken] stderr line 10\n",
		"[broken] stderr line 39",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "stderr line 9\n") {
		t.Errorf("error shows more than the last 30 lines:\n%s", msg)
	}
	assertGone(t, opts.TokenFile)
	assertGone(t, opts.PIDFile)
	waitGone(t, "serving process", se.PID)
}

func TestLaunchExitWithoutReport(t *testing.T) {
	opts := testOptions(t, "exit")
	_, err := launch(t, context.Background(), opts)
	if err == nil {
		t.Fatal("Launch succeeded, want the exit reported")
	}
	msg := err.Error()
	for _, want := range []string{"exited with status 3 before it was ready", "about to exit without a report"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	assertGone(t, opts.TokenFile)
	assertGone(t, opts.PIDFile)
}

// readPIDs reads the grandchildren's pids a hanging serving process wrote.
func readPIDs(t *testing.T, path string) ([]int, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", path, b)
		}
		pids = append(pids, pid)
	}
	t.Cleanup(func() { killPIDs(pids) })
	return pids, true
}

func TestLaunchTimeout(t *testing.T) {
	for _, mode := range []string{"hang", "hang-ignore-term"} {
		t.Run(mode, func(t *testing.T) {
			// The grandchildren must exist before the timeout for their
			// killing to be checked; on a slow machine, try a longer one.
			for timeout := time.Second; ; timeout *= 2 {
				pidsFile := filepath.Join(t.TempDir(), "pids")
				opts := testOptions(t, mode, pidsFileEnv+"="+pidsFile)
				opts.Timeout = timeout
				_, err := launch(t, context.Background(), opts)
				if !errors.Is(err, ErrTimeout) {
					t.Fatalf("error %v, want ErrTimeout", err)
				}
				var se *StartError
				if !errors.As(err, &se) {
					t.Fatalf("error %T, want *StartError", err)
				}
				if !strings.Contains(err.Error(), "pre-install them in the template with `mcp-gateway pull <server>`") {
					t.Errorf("error lacks the pull hint:\n%s", err)
				}
				assertGone(t, opts.TokenFile)
				assertGone(t, opts.PIDFile)
				grandchildren, ok := readPIDs(t, pidsFile)
				if !ok {
					waitGone(t, "serving process", se.PID)
					if timeout >= 32*time.Second {
						t.Fatal("the hanging serving process never started its grandchildren")
					}
					continue
				}
				waitGone(t, "serving process", se.PID)
				waitGone(t, "grandchild in the serving process's group", grandchildren[0])
				waitGone(t, "grandchild in a group of its own", grandchildren[1])
				return
			}
		})
	}
}

func TestLaunchCanceled(t *testing.T) {
	pidsFile := filepath.Join(t.TempDir(), "pids")
	opts := testOptions(t, "hang", pidsFileEnv+"="+pidsFile)
	opts.Timeout = time.Hour // only the context ends this launch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := launch(t, ctx, opts)
		errc <- err
	}()

	var grandchildren []int
	for {
		if pids, ok := readPIDs(t, pidsFile); ok {
			grandchildren = pids
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("Launch returned before it was canceled: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("error %T, want *StartError", err)
	}
	if !strings.Contains(err.Error(), "hanging") {
		t.Errorf("error lacks the log tail:\n%s", err)
	}
	waitGone(t, "serving process", se.PID)
	waitGone(t, "grandchildren", grandchildren...)
	assertGone(t, opts.TokenFile)
	assertGone(t, opts.PIDFile)
}

func TestLaunchAlreadyRunning(t *testing.T) {
	opts := testOptions(t, "ready")
	first, err := launch(t, context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = launch(t, context.Background(), opts)
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != first.PID {
		t.Fatalf("second launch: %v, want AlreadyRunningError{PID: %d}", err, first.PID)
	}
	if want := fmt.Sprintf("mcp-gateway is already running (pid %d)", first.PID); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	// The refused launch leaves the running gateway's files alone.
	if b, err := os.ReadFile(opts.TokenFile); err != nil || string(b) != testToken {
		t.Errorf("token file after the refused launch: %q, %v", b, err)
	}
	if pid, ok := Running(opts.PIDFile); !ok || pid != first.PID {
		t.Errorf("Running after the refused launch = %d, %v; want %d", pid, ok, first.PID)
	}
}

func TestLaunchConcurrent(t *testing.T) {
	opts := testOptions(t, "ready")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []*Result
		errs    []error
	)
	for range 2 {
		wg.Go(func() {
			res, err := launch(t, context.Background(), opts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else {
				results = append(results, res)
			}
		})
	}
	wg.Wait()
	if len(results) != 1 || len(errs) != 1 {
		t.Fatalf("%d launches succeeded and %d failed (%v), want one each", len(results), len(errs), errs)
	}
	var are *AlreadyRunningError
	if !errors.As(errs[0], &are) || are.PID != results[0].PID {
		t.Errorf("losing launch: %v, want AlreadyRunningError{PID: %d}", errs[0], results[0].PID)
	}
}

func TestLaunchStalePIDFile(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "1000")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		other.Process.Kill()
		other.Wait()
	})

	for _, tc := range []struct {
		name    string
		content string
	}{
		{"garbage", "not a pid\n"},
		{"dead process", fmt.Sprintf("%d\n", dead.ProcessState.Pid())},
		{"another program", fmt.Sprintf("%d\n", other.Process.Pid)},
		{"the launcher itself", fmt.Sprintf("%d\n", os.Getpid())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "ready")
			if err := os.MkdirAll(filepath.Dir(opts.PIDFile), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(opts.PIDFile, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if pid, ok := Running(opts.PIDFile); ok {
				t.Fatalf("Running = %d, true for a stale pid file", pid)
			}
			res, err := launch(t, context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if pid, ok := Running(opts.PIDFile); !ok || pid != res.PID {
				t.Errorf("Running = %d, %v; want %d, true", pid, ok, res.PID)
			}
		})
	}
}

// TestLaunchDetachesFromLauncher runs a launcher the way the SDK does (a
// command whose output is read to its end) and checks the gateway outlives it
// without holding the launcher's output open.
func TestLaunchDetachesFromLauncher(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), modeEnv+"=launcher", launchPathsEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Only a serving process holding the launcher's stdout would make Wait
	// use this; a working launcher's output ends when it exits.
	cmd.WaitDelay = 30 * time.Second
	runErr := cmd.Run()

	var port, pid int
	if _, err := fmt.Sscanf(stdout.String(), "MCP gateway is ready on port %d (pid %d)\n", &port, &pid); err == nil {
		t.Cleanup(func() { killSession(pid) })
	}
	if errors.Is(runErr, exec.ErrWaitDelay) {
		t.Fatal("the serving process kept the launcher's stdout or stderr open")
	}
	if runErr != nil {
		t.Fatalf("launcher: %v\n%s", runErr, stderr.String())
	}
	if pid == 0 {
		t.Fatalf("launcher printed %q, want the ready line", stdout.String())
	}
	st, err := readStat(pid)
	if err != nil || st.state == 'Z' {
		t.Fatalf("serving process %d died with its launcher (stat %+v, %v)", pid, st, err)
	}
	if st.session != pid {
		t.Errorf("serving process is in session %d, want its own (%d)", st.session, pid)
	}
	if st.ppid == cmd.ProcessState.Pid() {
		t.Errorf("serving process's parent is still the launcher")
	}
	if got, ok := Running(filepath.Join(dir, "pid")); !ok || got != pid {
		t.Errorf("Running = %d, %v; want %d, true", got, ok, pid)
	}
}

func TestLaunchKeepsTokenOffArgvAndEnv(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
	}{
		{"argv", func(o *Options) { o.Args = append(o.Args, "--token="+testToken) }},
		{"environment", func(o *Options) { o.Env = append(o.Env, "OTHER="+testToken) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "ready")
			tc.change(&opts)
			res, err := launch(t, context.Background(), opts)
			if err == nil {
				t.Fatalf("Launch started pid %d with the token on its %s", res.PID, tc.name)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("the error shows the token: %v", err)
			}
			assertGone(t, opts.TokenFile)
			assertGone(t, opts.LogFile)
		})
	}
}

func TestLaunchMissingExecutable(t *testing.T) {
	opts := testOptions(t, "ready")
	opts.Executable = filepath.Join(t.TempDir(), "no-such-mcp-gateway")
	_, err := launch(t, context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "starting the serving process") {
		t.Fatalf("error %v, want the start failure", err)
	}
	assertGone(t, opts.TokenFile)
	assertGone(t, opts.PIDFile)
}

func TestLaunchShortTokenIsNotMistakenForALeak(t *testing.T) {
	opts := testOptions(t, "ready", "SHLVL=1")
	opts.Token = "1" // any non-empty token is accepted
	if _, err := launch(t, context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(opts.TokenFile); err != nil || string(b) != "1" {
		t.Errorf("token file: %q, %v", b, err)
	}
}

// An aborted launch (the launcher found the configuration invalid) kills the
// serving process, which was waiting for its handoff, and writes nothing.
func TestStartAbort(t *testing.T) {
	opts := testOptions(t, "ready")
	p, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.c.pid
	p.Abort()
	if st, err := readStat(pid); err == nil {
		t.Errorf("serving process %d is still there after Abort (state %c)", pid, st.state)
	}
	for _, f := range []string{opts.TokenFile, opts.LogFile, opts.PIDFile, opts.PIDFile + ".lock"} {
		assertGone(t, f)
	}
}

// The token file is written while the servers start; failing to write it
// fails the launch all the same, and stops the serving process.
func TestLaunchUnwritableTokenFile(t *testing.T) {
	opts := testOptions(t, "ready")
	notADir := filepath.Dir(opts.TokenFile)
	if err := os.MkdirAll(filepath.Dir(notADir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := launch(t, context.Background(), opts)
	if err == nil {
		t.Fatalf("Launch succeeded (pid %d) without its token file", res.PID)
	}
	if !strings.Contains(err.Error(), "token file "+opts.TokenFile) {
		t.Errorf("error does not name the token file:\n%s", err)
	}
	var se *StartError
	if !errors.As(err, &se) {
		t.Fatalf("error %T, want *StartError", err)
	}
	waitGone(t, "serving process", se.PID)
	assertGone(t, opts.PIDFile)
}

// The serving process inherits Options.Listener at ListenFD: the launcher
// binds the port before anything starts, and the serving process serves
// on that very socket.
func TestLaunchHandsOverTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := testOptions(t, "listener")
	opts.Listener = f
	res, err := launch(t, context.Background(), opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if want := ln.Addr().(*net.TCPAddr).Port; res.Port != want {
		t.Errorf("the serving process reported port %d, want %d, the port of the socket it was given", res.Port, want)
	}
}
