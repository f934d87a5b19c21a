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

	"golang.org/x/sys/unix"
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
	// Handoff is written to the serving process's stdin by Launch, which
	// then closes it: the config and the token, handed over privately.
	// Start ignores it; Pending.Complete takes it as an argument.
	Handoff []byte
	// Env is the serving process's environment; nil means this process's.
	// GATEWAY_ACCESS_TOKEN is dropped from it either way.
	Env []string
	// Listener is a listening socket the serving process inherits as fd
	// ListenFD, so the launcher binds the port before anything starts (a
	// port taken fails the launch at once). Start does not close it. nil
	// means none.
	Listener *os.File
	// Dir is the serving process's working directory; "" means "/".
	Dir string
	// LogFile receives the serving process's stdout and stderr, appended,
	// from its handoff on (see AcceptHandoff). It is created if missing (mode
	// 0644, missing directories 0755) when the handoff is ready. "" discards
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
	// Timeout bounds the whole launch, from the call to Launch or Start to
	// the ready report; 0 means DefaultTimeout.
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

// Launch starts the serving process detached from the caller, hands it
// opts.Handoff and waits until it reports ready on the pipe at fd ReadyFD,
// exits, times out, or ctx is done: [Start] followed by [Pending.Complete].
// On success the process keeps running after the caller exits. On failure its
// whole session is killed, the token and pid files are removed, and the error
// is a *StartError (or, if nothing was handed over, says what could not be
// done); a launch while a gateway runs fails with *AlreadyRunningError.
func Launch(ctx context.Context, opts Options) (*Result, error) {
	p, err := Start(opts)
	if err != nil {
		return nil, err
	}
	return p.Complete(ctx, opts.Handoff)
}

// Pending is a serving process started ahead of its handoff: the program's
// own start-up (exec, runtime, flags) runs while the launcher checks the
// configuration. Until [Pending.Complete] hands it over, the serving process
// waits on its stdin and has written nothing; [Pending.Abort] stops it.
type Pending struct {
	opts    Options
	c       *child
	timeout *time.Timer
}

// Start starts the serving process in a new session, with the launcher's
// stderr, stdout discarded and the readiness pipe at fd ReadyFD. It takes no
// lock and writes no file; opts.Handoff is not used. Options.Timeout runs
// from here.
func Start(opts Options) (*Pending, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	c, err := start(opts)
	if err != nil {
		return nil, err
	}
	return &Pending{opts: opts, c: c, timeout: time.NewTimer(opts.Timeout)}, nil
}

// Complete takes the launch lock, refuses if a gateway is already running,
// prepares the log file, hands over handoff and the log file's path on the
// serving process's stdin, and waits for its report (see [Launch]). The
// token and pid files are written meanwhile: the serving process starts its
// servers without waiting for the disk, and the launch succeeds only once
// both files are in place. Whatever it returns, the Pending is finished.
func (p *Pending) Complete(ctx context.Context, handoff []byte) (*Result, error) {
	opts, c := p.opts, p.c
	defer p.timeout.Stop()
	if opts.PIDFile != "" {
		lock, err := lockLaunch(ctx, opts.PIDFile+".lock", p.timeout.C)
		if err != nil {
			p.Abort()
			return nil, err
		}
		defer lock.Close()
		if pid, ok := Running(opts.PIDFile); ok {
			p.Abort()
			return nil, &AlreadyRunningError{PID: pid}
		}
	}
	offset, err := prepareLog(opts.LogFile)
	if err != nil {
		p.Abort()
		return nil, err
	}
	c.logOffset = offset
	defer c.close()
	c.handOver(opts.LogFile, handoff)
	c.writeFiles(opts)
	port, err := c.wait(ctx, p.timeout.C, opts)
	if err != nil {
		return nil, c.fail(opts, err)
	}
	return &Result{PID: c.pid, Port: port}, nil
}

// Abort kills the serving process before its handoff and reaps it. Having
// had no handoff, it has started nothing and written nothing.
func (p *Pending) Abort() {
	p.timeout.Stop()
	if !p.c.reaper.halt() {
		// Not exited, so not reaped: the pid is still the serving process's.
		unix.Kill(p.c.pid, unix.SIGKILL) //nolint:errcheck // ESRCH: it is gone already
		for {
			if _, err := unix.Wait4(p.c.pid, nil, 0, nil); !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	p.c.close() // reaps it if it had exited
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
	if o.LogFile != "" {
		// The serving process opens it from its working directory.
		abs, err := filepath.Abs(o.LogFile)
		if err != nil {
			return fmt.Errorf("log file %s: %w", o.LogFile, err)
		}
		o.LogFile = abs
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
	reports   chan report   // one report from the readiness pipe
	readyR    *os.File      // launcher's end of the readiness pipe
	stdinW    *os.File      // launcher's end of the handoff pipe
	logOffset int64         // size of the log before the handoff
	filesDone chan struct{} // closed once writeFiles has written (or failed)
	filesErr  error         // why the token or pid file could not be written
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// start opens the pipes and starts the serving process in a new session. The
// goroutines of the child (report reader, reaper, and those of handOver and
// writeFiles) end in close.
func start(opts Options) (c *child, err error) {
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
	// Until its handoff names the log file, the serving process's stderr is
	// the launcher's, so an early failure is shown where the launch was run.
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = []*os.File{readyW} // fd 3 == ReadyFD
	if opts.Listener != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, opts.Listener) // fd 4 == ListenFD
	}
	// A new session: no terminal, its own process group, and a session id
	// that marks every process it starts, for terminate.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		stdinW.Close()
		readyR.Close()
		return nil, fmt.Errorf("starting the serving process %s: %w", opts.Executable, err)
	}

	c = &child{
		pid:     cmd.Process.Pid,
		proc:    cmd.Process,
		reaper:  startReaper(cmd.Process.Pid),
		reports: make(chan report, 1),
		readyR:  readyR,
		stdinW:  stdinW,
	}
	c.wg.Go(func() { c.reports <- readReport(readyR) })
	return c, nil
}

// handOver writes the handoff to the serving process's stdin, after the log
// file's path and a NUL (see AcceptHandoff), and closes it.
func (c *child) handOver(logFile string, handoff []byte) {
	msg := make([]byte, 0, len(logFile)+1+len(handoff))
	msg = append(append(append(msg, logFile...), 0), handoff...)
	c.wg.Go(func() {
		// EPIPE if the child dies without reading; its exit says more.
		c.stdinW.Write(msg)
		c.stdinW.Close()
	})
}

// writeFiles writes the token and pid files in the background; filesDone is
// closed when they are written or one has failed (filesErr).
func (c *child) writeFiles(opts Options) {
	c.filesDone = make(chan struct{})
	c.wg.Go(func() {
		defer close(c.filesDone)
		if opts.TokenFile != "" {
			if c.filesErr = WriteTokenFile(opts.TokenFile, opts.Token); c.filesErr != nil {
				return
			}
		}
		if opts.PIDFile != "" {
			c.filesErr = WritePIDFile(opts.PIDFile, c.pid)
		}
	})
}

// prepareLog creates the log file if it is missing (and its directory) and
// returns its size before this launch; the serving process opens it for
// appending when it accepts its handoff.
func prepareLog(path string) (int64, error) {
	if path == "" {
		return 0, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, fmt.Errorf("log file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("log file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("log file %s: %w", path, err)
	}
	return fi.Size(), nil
}

// wait returns the port the serving process reported ready on, or why it
// will not be ready, a token or pid file that could not be written included.
// A report is taken once both files are written.
func (c *child) wait(ctx context.Context, timeout <-chan time.Time, opts Options) (int, error) {
	filesDone := c.filesDone
	for {
		select {
		case <-filesDone:
			if c.filesErr != nil {
				return 0, c.filesErr
			}
			filesDone = nil // written: wait on for the report
		case rep := <-c.reports:
			if filesDone != nil {
				<-filesDone
				if c.filesErr != nil {
					return 0, c.filesErr
				}
			}
			return c.onReport(rep, opts.KillGrace)
		case <-c.reaper.exited:
			return 0, c.onExit(opts.KillGrace)
		case <-timeout:
			return 0, fmt.Errorf("%w (%s): servers fetched when they start (uvx, npx, GitHub clones) can take longer; pre-install them in the template with `mcp-gateway pull <server>`",
				ErrTimeout, opts.Timeout)
		case <-ctx.Done():
			return 0, fmt.Errorf("interrupted while waiting for the gateway to be ready: %w", ctx.Err())
		}
	}
}

// onExit explains the serving process's exit before a report was read.
func (c *child) onExit(grace time.Duration) error {
	// It may have reported just before exiting; with the child gone the
	// pipe ends at once unless something it started holds a copy.
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case rep := <-c.reports:
		switch rep.kind {
		case reportFailed:
			return errors.New(rep.reason)
		case reportReady:
			return fmt.Errorf("the serving process %s right after reporting ready", c.reaper.describe())
		}
	case <-t.C:
	}
	return fmt.Errorf("the serving process %s before it was ready", c.reaper.describe())
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
	<-c.filesDone // what it wrote is removed below
	if opts.PIDFile != "" {
		RemovePIDFile(opts.PIDFile, c.pid)
	}
	opts.removeToken()
	return &StartError{PID: c.pid, Reason: reason, LogFile: opts.LogFile, LogTail: tail}
}

// close releases what the launcher holds of the child; the child itself keeps
// running if it was ready, and is reaped if it has exited. The reaper stops
// first, so nothing waits on the child from here on.
func (c *child) close() {
	c.closeOnce.Do(func() {
		c.reaper.halt()
		c.reaper.reap()
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
