package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"golang.org/x/sys/unix"
)

const (
	stdoutReadSize = 64 << 10
	// drainTimeout bounds how long the pipes are read after the group was killed.
	drainTimeout = time.Second
	// eofGrace is how long a process that closed its stdout is given to exit
	// before it is treated as broken; it only chooses the error's wording.
	eofGrace = time.Second
	// keptWriteBuffer caps the stdin buffer kept between messages.
	keptWriteBuffer = 1 << 20
	// previewBytes of bad output are quoted in logs and errors.
	previewBytes = 200
)

// process is one run of the server: the child, its pipes and the goroutines
// serving them. It is never restarted; Stdio replaces it.
//
// Goroutines and their owner: wait (started by exec) owns readStdout, the
// stderr forwarder and every background goroutine (those of rpc: handlers
// of the server's requests, cancellations, the end of an interrupted
// write); it ends after the child has exited, and closes done when all of
// them have ended.
type process struct {
	s   *Stdio
	cmd *exec.Cmd
	pid int // also the process group id

	stdin          *os.File
	stdout, stderr *os.File

	// wsem is the writer lock on stdin; whoever holds it owns wbuf.
	wsem chan struct{}
	wbuf []byte
	// dmu and wseq make a stale ctx interrupt unable to hit a later write.
	// wwatch fires when a write has taken writeWatchAfter; only then is
	// the writer's ctx (wctx) watched, with wstop its hook (lines.go).
	dmu    sync.Mutex
	wseq   uint64
	wwatch *time.Timer
	wctx   context.Context
	wstop  func() bool

	// rpc correlates the messages on the pipes; it owns the background
	// goroutines (server-to-client request handlers, cancellations, the
	// end of an interrupted write).
	rpc *rpc.Conn

	mu     sync.Mutex
	cause  *failure        // why it went down; set once
	down   chan struct{}   // closed when cause is set
	isDown atomic.Bool     // cause != nil, for the lock-free fast path
	ctx    context.Context // ends when the process goes down
	cancel context.CancelFunc

	initialized atomic.Bool
	initResult  json.RawMessage // set before the process is published
	stateless   bool            // speaks 2026-07-28 (answered server/discover); set before publishing
	graceful    atomic.Bool     // a graceful terminate owns the group's SIGKILL

	tail       ring
	exited     chan struct{} // closed when the child has been reaped
	stdoutDone chan struct{}
	stderrDone chan struct{}
	done       chan struct{} // closed when everything has ended
}

// exec starts the command with its pipes and the goroutines that serve them.
func (s *Stdio) exec() (*process, error) {
	if len(s.opts.Command) == 0 || s.opts.Command[0] == "" {
		return nil, fmt.Errorf("mcp server %q has no command to run; set its command", s.opts.Name)
	}
	path, err := lookPath(s.opts.Command[0], s.opts.Env)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: cannot start %q: %w; check the command and the PATH in its environment", s.opts.Name, s.opts.Command[0], err)
	}
	var files [6]*os.File // stdin r/w, stdout r/w, stderr r/w
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := 0; i < len(files); i += 2 {
		if files[i], files[i+1], err = os.Pipe(); err != nil {
			closeAll()
			return nil, fmt.Errorf("mcp server %q: cannot create pipes: %w", s.opts.Name, err)
		}
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        s.opts.Command,
		Env:         s.opts.Env,
		Dir:         s.opts.Dir,
		Stdin:       files[0],
		Stdout:      files[3],
		Stderr:      files[5],
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	files[0].Close() // the child's ends
	files[3].Close()
	files[5].Close()
	if err != nil {
		files[1].Close()
		files[2].Close()
		files[4].Close()
		return nil, fmt.Errorf("mcp server %q: cannot start %q: %w; check the command, its working directory and permissions", s.opts.Name, s.opts.Command[0], err)
	}
	p := &process{
		s:          s,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      files[1],
		stdout:     files[2],
		stderr:     files[4],
		wsem:       make(chan struct{}, 1),
		down:       make(chan struct{}),
		exited:     make(chan struct{}),
		stdoutDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	p.wwatch = time.AfterFunc(time.Hour, p.writeStalled)
	p.wwatch.Stop()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	hooks := rpc.Hooks{Server: s.opts.Name, OnNotification: s.opts.OnNotification, OnRequest: s.opts.OnRequest}
	p.rpc = rpc.New(p.ctx, s.opts.Name, s.log, hooks, p, s.opts.MaxMessageBytes)
	go p.readStdout()
	go func() {
		defer close(p.stderrDone)
		forwardStderr(p.stderr, s.opts.Stderr, "["+s.opts.Name+"] ", &p.tail)
	}()
	go p.wait()
	return p, nil
}

// lookPath finds a command the way the child's own environment would: in the
// PATH of env, or the gateway's PATH when env has none.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true // the last one wins, as in exec
		}
	}
	if !ok {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // as exec.ErrDot: never run a program from a relative PATH entry
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// call sends one request and waits for its response. Its errors are
// errNotSent, a *failure, an error wrapping ErrInvalidMessage, or ctx.Err().
func (p *process) call(ctx context.Context, method string, params json.RawMessage) (wire.Response, error) {
	c, ok := p.rpc.Begin(method)
	if !ok {
		return wire.Response{}, errNotSent
	}
	sent, err := p.writeRequest(ctx, c.ID(), method, params)
	switch {
	case errors.Is(err, ErrInvalidMessage): // never written
		c.Forget()
		return wire.Response{}, err
	case err != nil && err != errNotSent:
		return c.Abandon(ctx, sent)
	}
	// Sent, or the process is down and will fail every pending call.
	return c.Wait(ctx, sent)
}

// readStdout reads the server's messages, one per line, until stdout ends or
// the server writes something that is not JSON-RPC.
func (p *process) readStdout() {
	defer close(p.stdoutDone)
	lines := &lineReader{br: bufio.NewReaderSize(p.stdout, stdoutReadSize), limit: p.s.opts.MaxMessageBytes}
	_, err := p.rpc.Serve(lines, 0)
	var bad *badLine
	if errors.As(err, &bad) {
		p.badOutput(bad.line, bad.what)
		return
	}
	p.stdoutEnded()
}

// badOutput stops a process that wrote something other than JSON-RPC.
func (p *process) badOutput(line []byte, what string) {
	preview := trimNewline(line)
	if len(preview) > previewBytes {
		preview = preview[:previewBytes]
	}
	detail := strconv.Quote(string(preview))
	if what != "" {
		detail = what + ", starting " + detail
	}
	f := &failure{kind: ErrProtocol, event: "wrote non-JSON-RPC output to stdout", detail: detail, hint: stdoutHint}
	if p.stop(f) {
		p.s.log.Warn(fmt.Sprintf("mcp server %q wrote non-JSON-RPC output to stdout: %s", p.s.opts.Name, preview), "pid", p.pid)
		p.signal(unix.SIGKILL)
	}
}

// stdoutEnded handles the end of stdout. Usually the process has exited and
// wait reports it; a process that closed its stdout and lives on is broken.
func (p *process) stdoutEnded() {
	if p.isDown.Load() {
		return
	}
	t := time.NewTimer(eofGrace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	f := &failure{kind: ErrProtocol, event: "closed its stdout", detail: "while still running"}
	if p.stop(f) {
		p.s.log.Warn(fmt.Sprintf("mcp server %q closed its stdout; stopping it", p.s.opts.Name), "pid", p.pid)
		p.signal(unix.SIGKILL)
	}
}

// stop marks the process down for the first reason given: no new calls are
// accepted, handlers are cancelled and stdin is closed (so writers blocked on
// it return, and a server waiting for EOF exits). Pending calls are failed by
// wait, once the process is gone and its stderr is read to the end.
func (p *process) stop(f *failure) bool {
	p.mu.Lock()
	if p.cause != nil {
		p.mu.Unlock()
		return false
	}
	p.cause = f
	p.isDown.Store(true)
	close(p.down)
	p.rpc.Refuse() // with cause, so a call that finds the process up is one it will fail
	p.mu.Unlock()
	p.cancel()
	p.stdin.Close()
	return true
}

// signal sends sig to the whole process group: npx and shells leave children.
func (p *process) signal(sig unix.Signal) {
	unix.Kill(-p.pid, sig) //nolint:errcheck // ESRCH: the group is gone already
}

// wait reaps the child, then stops everything that served it. cmd.Wait
// waits on the child's pidfd where the kernel has them (os.Process), which
// sees an exit that came before the wait began as surely as a later one.
func (p *process) wait() {
	err := p.cmd.Wait()
	detail := "exit status 0"
	if err != nil {
		detail = err.Error()
	}
	crashed := p.stop(&failure{kind: ErrExited, event: "exited", detail: detail, cause: err}) && p.initialized.Load()
	close(p.exited)
	if !p.graceful.Load() { // else terminate kills the group when its grace is over
		p.signal(unix.SIGKILL)
		p.drain()
	}
	<-p.stdoutDone
	<-p.stderrDone
	if crashed {
		p.s.log.Warn(fmt.Sprintf("mcp server %q exited (%s); the next call restarts it", p.s.opts.Name, detail), "pid", p.pid, "stderr", p.tail.lines())
	}
	f := p.finalFailure()
	p.rpc.FailPending(func(string) error { return f })
	p.rpc.Wait()
	p.stdout.Close()
	p.stderr.Close()
	close(p.done)
}

// finalFailure returns why the process went down, with its stderr tail.
func (p *process) finalFailure() *failure {
	p.mu.Lock()
	f := *p.cause
	p.mu.Unlock()
	f.stderr = p.tail.lines()
	return &f
}

// terminate stops the process and waits until everything of it has ended.
// With a grace period the group gets SIGTERM, and SIGKILL once its members
// are gone or the grace has passed; without one, SIGKILL at once.
func (p *process) terminate(grace time.Duration, f *failure) {
	select {
	case <-p.done:
		return
	default:
	}
	if grace <= 0 {
		p.stop(f)
		p.signal(unix.SIGKILL)
		p.drain()
		<-p.done
		return
	}
	p.graceful.Store(true)
	p.stop(f)
	p.signal(unix.SIGTERM)
	// Wait for the leader, then for its children, which got the same SIGTERM
	// and are gone when nothing holds the pipes any more. Polling the group
	// instead would wait for zombies that nobody reaps.
	t := time.NewTimer(grace)
	defer t.Stop()
wait:
	for _, ch := range []chan struct{}{p.exited, p.stdoutDone, p.stderrDone} {
		select {
		case <-ch:
		case <-t.C:
			break wait
		}
	}
	p.signal(unix.SIGKILL)
	p.drain()
	<-p.done
}

// drain bounds the reading of the pipes once the group has been killed: only
// a descendant that left the group can hold them open longer.
func (p *process) drain() {
	deadline := time.Now().Add(drainTimeout)
	p.stdout.SetReadDeadline(deadline) //nolint:errcheck // fails only once closed
	p.stderr.SetReadDeadline(deadline) //nolint:errcheck
}
