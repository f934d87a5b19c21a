package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for the zero values of [Options].
const (
	DefaultTimeout   = 55 * time.Second // the SDK waits 60 s for the whole command
	DefaultKillGrace = 3 * time.Second
)

// tokenEnv is where the SDK passes the token. It never reaches the serving
// process's environment, whatever Options.Env holds.
const tokenEnv = "GATEWAY_ACCESS_TOKEN"

// How much of the log a failed launch shows.
const (
	logTailLines = 30
	logTailBytes = 64 << 10
)

// ErrTimeout is wrapped by the error of a launch whose serving process did not
// report ready within Options.Timeout.
var ErrTimeout = errors.New("gateway not ready in time")

// Options says what to start and where its files go. Zero values mean the
// defaults given per field.
type Options struct {
	// Executable is the serving process's binary; "" means this program
	// (os.Executable).
	Executable string
	// Args is the serving process's argv after the executable, e.g.
	// ["serve", "--ready-fd=3", "--port=50005"]. It must not hold the token:
	// anyone on the machine can read a process's argv.
	Args []string
	// Handoff is written to the serving process's stdin, which is then closed:
	// the config and the token, handed over privately.
	Handoff []byte
	// Env is the serving process's environment; nil means this process's.
	// GATEWAY_ACCESS_TOKEN is dropped from it either way.
	Env []string
	// Dir is the serving process's working directory; "" means "/".
	Dir string
	// LogFile receives the serving process's stdout and stderr, appended. It
	// is created if missing (mode 0644, missing directories 0755). "" discards
	// them.
	LogFile string
	// PIDFile holds the serving process's pid while it runs; it is removed if
	// the launch fails. <PIDFile>.lock serialises launches. "" means no pid
	// file, no lock and no already-running check.
	PIDFile string
	// TokenFile receives Token (see WriteTokenFile) before the serving process
	// starts; it is removed if the launch fails. "" means no token file.
	TokenFile string
	// Token is the gateway's access token, written to TokenFile.
	Token string
	// Timeout bounds the whole launch, from the call to the ready report; 0
	// means DefaultTimeout.
	Timeout time.Duration
	// KillGrace is how long the serving process's session has to exit after
	// SIGTERM before SIGKILL; 0 means DefaultKillGrace.
	KillGrace time.Duration
}

// Result describes a serving process that reported ready.
type Result struct {
	PID  int // the serving process, leader of its own session
	Port int // the port it reported
}

// StartError is the error of a launch whose serving process was started but
// did not become ready. By the time it is returned every process of the
// serving process's session has been killed and the token and pid files
// removed.
type StartError struct {
	PID     int      // the serving process
	Reason  error    // what failed: its own report, its exit, the timeout, the context
	LogFile string   // where its output went ("" if discarded)
	LogTail []string // the last lines this launch added to LogFile
}

func (e *StartError) Error() string {
	var b strings.Builder
	b.WriteString(e.Reason.Error())
	switch {
	case e.LogFile == "":
	case len(e.LogTail) == 0:
		fmt.Fprintf(&b, "\n(nothing was logged to %s)", e.LogFile)
	default:
		fmt.Fprintf(&b, "\nlast %d lines of %s:", len(e.LogTail), e.LogFile)
		for _, l := range e.LogTail {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

func (e *StartError) Unwrap() error { return e.Reason }

// Launch starts the serving process detached from the caller and waits until
// it reports ready on the pipe at fd ReadyFD, exits, times out, or ctx is done.
// On success the process keeps running after the caller exits. On failure its
// whole session is killed, the token and pid files are removed, and the error
// is a *StartError (or, if nothing was started, says what could not be done);
// a launch while a gateway runs fails with *AlreadyRunningError.
func Launch(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	timeout := time.NewTimer(opts.Timeout)
	defer timeout.Stop()

	if opts.PIDFile != "" {
		lock, err := lockLaunch(ctx, opts.PIDFile+".lock", timeout.C)
		if err != nil {
			return nil, err
		}
		defer lock.Close()
		if pid, ok := Running(opts.PIDFile); ok {
			return nil, &AlreadyRunningError{PID: pid}
		}
	}
	if opts.TokenFile != "" {
		if err := WriteTokenFile(opts.TokenFile, opts.Token); err != nil {
			return nil, err
		}
	}
	c, err := start(opts)
	if err != nil {
		opts.removeToken()
		return nil, err
	}
	defer c.close()
	if opts.PIDFile != "" {
		if err := WritePIDFile(opts.PIDFile, c.pid); err != nil {
			return nil, c.fail(opts, err)
		}
	}
	port, err := c.wait(ctx, timeout.C, opts)
	if err != nil {
		return nil, c.fail(opts, err)
	}
	return &Result{PID: c.pid, Port: port}, nil
}

// complete fills in defaults and refuses options that would leak the token.
func (o *Options) complete() error {
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this program to start it as the serving process: %w", err)
		}
		o.Executable = exe
	}
	if o.Dir == "" {
		o.Dir = "/"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	// A short token (any non-empty string is accepted) could match innocent
	// text, so only one long enough to be random is looked for.
	leaks := func(s string) bool { return len(o.Token) >= minCheckedToken && strings.Contains(s, o.Token) }
	env := make([]string, 0, len(o.Env))
	for _, kv := range o.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == tokenEnv {
			continue
		}
		if leaks(kv) {
			return fmt.Errorf("the serving process's environment variable %s holds the token; hand it over on stdin", name)
		}
		env = append(env, kv)
	}
	o.Env = env
	for _, a := range o.Args {
		if leaks(a) {
			return errors.New("the serving process's arguments hold the token; hand it over on stdin")
		}
	}
	return nil
}

// minCheckedToken is the shortest token Options.complete looks for in argv and
// the environment; generated tokens (a UUID, 64 hex digits) are longer.
const minCheckedToken = 16

func (o *Options) removeToken() {
	if o.TokenFile != "" {
		os.Remove(o.TokenFile)
	}
}

// child is a started serving process the launcher is waiting for.
type child struct {
	pid       int
	proc      *os.Process
	reaper    *reaper
	reports   chan report // one report from the readiness pipe
	readyR    *os.File    // launcher's end of the readiness pipe
	stdinW    *os.File    // launcher's end of the handoff pipe
	logOffset int64       // size of the log before the start
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// start opens the log and the pipes and starts the serving process in a new
// session. The goroutines it starts (report reader, handoff writer, reaper)
// end in close.
func start(opts Options) (c *child, err error) {
	logf, offset, err := openLog(opts.LogFile)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("handoff pipe: %w", err)
	}
	defer stdinR.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		stdinW.Close()
		return nil, fmt.Errorf("readiness pipe: %w", err)
	}
	defer readyW.Close()

	cmd := exec.Command(opts.Executable, opts.Args...)
	cmd.Env = opts.Env
	cmd.Dir = opts.Dir
	cmd.Stdin = stdinR
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{readyW} // fd 3 == ReadyFD
	// A new session: no terminal, its own process group, and a session id
	// that marks every process it starts, for terminate.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		stdinW.Close()
		readyR.Close()
		return nil, fmt.Errorf("starting the serving process %s: %w", opts.Executable, err)
	}

	c = &child{
		pid:       cmd.Process.Pid,
		proc:      cmd.Process,
		reaper:    startReaper(cmd.Process.Pid),
		reports:   make(chan report, 1),
		readyR:    readyR,
		stdinW:    stdinW,
		logOffset: offset,
	}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.reports <- readReport(readyR)
	}()
	go func() {
		defer c.wg.Done()
		// EPIPE if the child dies without reading; its exit says more.
		stdinW.Write(opts.Handoff)
		stdinW.Close()
	}()
	return c, nil
}

// openLog opens the log for appending and returns its size before this launch.
func openLog(path string) (*os.File, int64, error) {
	if path == "" {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		return f, 0, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, 0, fmt.Errorf("log file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("log file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("log file %s: %w", path, err)
	}
	return f, fi.Size(), nil
}

// wait returns the port the serving process reported ready on, or why it
// will not be ready.
func (c *child) wait(ctx context.Context, timeout <-chan time.Time, opts Options) (int, error) {
	select {
	case rep := <-c.reports:
		return c.onReport(rep, opts.KillGrace)
	case <-c.reaper.exited:
		// It may have reported just before exiting; with the child gone the
		// pipe ends at once unless something it started holds a copy.
		t := time.NewTimer(opts.KillGrace)
		defer t.Stop()
		select {
		case rep := <-c.reports:
			switch rep.kind {
			case reportFailed:
				return 0, errors.New(rep.reason)
			case reportReady:
				return 0, fmt.Errorf("the serving process %s right after reporting ready", c.reaper.describe())
			}
		case <-t.C:
		}
		return 0, fmt.Errorf("the serving process %s before it was ready", c.reaper.describe())
	case <-timeout:
		return 0, fmt.Errorf("%w (%s): servers fetched when they start (uvx, npx, GitHub clones) can take longer; pre-install them in the template with `mcp-gateway pull <server>`",
			ErrTimeout, opts.Timeout)
	case <-ctx.Done():
		return 0, fmt.Errorf("interrupted while waiting for the gateway to be ready: %w", ctx.Err())
	}
}

func (c *child) onReport(rep report, grace time.Duration) (int, error) {
	switch rep.kind {
	case reportReady:
		if c.reaper.halt() {
			return 0, fmt.Errorf("the serving process %s right after reporting ready", c.reaper.describe())
		}
		return rep.port, nil
	case reportFailed:
		return 0, errors.New(rep.reason)
	}
	// The pipe closed without a report: the child is most likely exiting;
	// give it the grace period to be reaped, so its status can be shown.
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.reaper.exited:
		return 0, fmt.Errorf("the serving process %s before it was ready", c.reaper.describe())
	case <-t.C:
		return 0, errors.New("the serving process closed its readiness pipe without reporting")
	}
}

// fail ends the serving process's session, removes the files of this launch
// and builds the error. The log's tail is read first: the serving process's
// shutdown lines would push the failing server's stderr out of it.
func (c *child) fail(opts Options, reason error) error {
	tail := logTail(opts.LogFile, c.logOffset)
	terminate(c.pid, opts.KillGrace, c.reaper)
	if opts.PIDFile != "" {
		RemovePIDFile(opts.PIDFile, c.pid)
	}
	opts.removeToken()
	return &StartError{PID: c.pid, Reason: reason, LogFile: opts.LogFile, LogTail: tail}
}

// close releases what the launcher holds of the child; the child itself keeps
// running if it was ready. The reaper stops first, so nothing waits on the
// child from here on.
func (c *child) close() {
	c.closeOnce.Do(func() {
		c.reaper.halt()
		c.readyR.Close()
		c.stdinW.Close()
		c.wg.Wait()
		c.proc.Release()
	})
}

// logTail returns the last lines written to path after offset.
func logTail(path string, offset int64) []string {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	from := max(offset, fi.Size()-logTailBytes)
	if from >= fi.Size() {
		return nil
	}
	b, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return nil
	}
	text := strings.TrimRight(string(b), "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if from > offset && len(lines) > 1 {
		lines = lines[1:] // the first line was cut
	}
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return lines
}
