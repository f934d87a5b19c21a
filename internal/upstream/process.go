package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
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
// stderr forwarder and every background goroutine (wg: server-to-client
// request handlers, cancellations, the end of an interrupted write); it ends
// after the child has exited, and closes done when all of them have ended.
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
	dmu  sync.Mutex
	wseq uint64

	mu       sync.Mutex
	ids      idSource                           // request ids, drawn under mu
	pending  map[uint64]*pendingCall            // calls waiting for a response; nil once failed
	incoming map[string]context.CancelCauseFunc // server-to-client requests being served, by raw id
	cause    *failure                           // why it went down; set once
	down     chan struct{}                      // closed when cause is set
	isDown   atomic.Bool                        // cause != nil, for the lock-free fast path
	ctx      context.Context                    // ends when the process goes down
	cancel   context.CancelFunc
	wg       sync.WaitGroup // background goroutines

	initialized atomic.Bool
	initResult  json.RawMessage // set before the process is published
	modern      bool            // speaks 2026-07-28 (answered server/discover); set before publishing
	graceful    atomic.Bool     // a graceful terminate owns the group's SIGKILL

	tail       ring
	exited     chan struct{} // closed when the child has been reaped
	stdoutDone chan struct{}
	stderrDone chan struct{}
	done       chan struct{} // closed when everything has ended
}

type pendingCall struct{ ch chan callResult }

type callResult struct {
	resp wire.Response
	fail *failure
}

// pendingPool recycles pendingCalls whose channel is known to be empty and
// unreferenced.
var pendingPool = sync.Pool{New: func() any { return &pendingCall{ch: make(chan callResult, 1)} }}

var errServerCancelled = errors.New("the server cancelled its request")

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
		ids:        newIDSource(),
		pending:    make(map[uint64]*pendingCall),
		incoming:   make(map[string]context.CancelCauseFunc),
		down:       make(chan struct{}),
		exited:     make(chan struct{}),
		stdoutDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
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
// errNotSent, a *failure, or ctx.Err().
func (p *process) call(ctx context.Context, method string, params json.RawMessage) (wire.Response, error) {
	c := pendingPool.Get().(*pendingCall)
	p.mu.Lock()
	if p.pending == nil || p.cause != nil {
		p.mu.Unlock()
		pendingPool.Put(c)
		return wire.Response{}, errNotSent
	}
	id := p.ids.next(p.isPending)
	p.pending[id] = c
	p.mu.Unlock()

	sent, err := p.writeRequest(ctx, id, method, params)
	sent = sent && method != "initialize" // which a client must not cancel
	if errors.Is(err, ErrInvalidMessage) {
		// Never written; but the process may have gone down meanwhile and
		// failPending put a result in c.ch, which must not go back to the
		// pool with c.
		if !p.forget(id) {
			<-c.ch
		}
		pendingPool.Put(c)
		return wire.Response{}, err
	}
	if err != nil && err != errNotSent {
		return p.abandon(ctx, id, c, sent)
	}
	// Sent, or the process is down and will fail every pending call.
	select {
	case r := <-c.ch:
		pendingPool.Put(c)
		if r.fail != nil {
			return wire.Response{}, r.fail
		}
		return r.resp, nil
	case <-ctx.Done():
		return p.abandon(ctx, id, c, sent)
	}
}

// abandon ends a call whose ctx is done. If the response has already been
// taken for delivery it is returned; otherwise, when sent says the server has
// seen the request, it is told that the caller gave up.
func (p *process) abandon(ctx context.Context, id uint64, c *pendingCall, sent bool) (wire.Response, error) {
	if !p.forget(id) {
		r := <-c.ch // delivered or about to be
		pendingPool.Put(c)
		if r.fail != nil {
			return wire.Response{}, r.fail
		}
		return r.resp, nil
	}
	pendingPool.Put(c)
	if sent {
		reason := context.Cause(ctx).Error()
		p.goBackground(func() { p.sendCancelled(id, reason) })
	}
	return wire.Response{}, ctx.Err()
}

// isPending reports whether id is a pending call's; p.mu is held.
func (p *process) isPending(id uint64) bool {
	_, ok := p.pending[id]
	return ok
}

func (p *process) forget(id uint64) bool {
	p.mu.Lock()
	_, ok := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	return ok
}

func (p *process) sendCancelled(id uint64, reason string) {
	if p.acquire(p.ctx) != nil {
		return
	}
	p.wbuf = wire.AppendNotification(p.wbuf[:0], "notifications/cancelled", cancelledParams(id, reason))
	p.flush(p.ctx) //nolint:errcheck // best effort: the call has already returned
}

func (p *process) writeRequest(ctx context.Context, id uint64, method string, params json.RawMessage) (sent bool, err error) {
	if err := p.acquire(ctx); err != nil {
		return false, err
	}
	p.wbuf = wire.AppendIntRequest(p.wbuf[:0], id, method, params)
	return p.flush(ctx)
}

func (p *process) notify(ctx context.Context, method string, params json.RawMessage) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	p.wbuf = wire.AppendNotification(p.wbuf[:0], method, params)
	_, err := p.flush(ctx)
	return err
}

// acquire takes the writer lock on stdin. Its errors are ctx.Err() and
// errNotSent (the process is down).
func (p *process) acquire(ctx context.Context) error {
	select {
	case p.wsem <- struct{}{}:
	default:
		select {
		case p.wsem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.down:
			return errNotSent
		}
	}
	if p.isDown.Load() {
		p.release()
		return errNotSent
	}
	return nil
}

func (p *process) release() {
	if cap(p.wbuf) > keptWriteBuffer {
		p.wbuf = nil
	}
	<-p.wsem
}

// flush writes wbuf, as one line (wire.OneLine), and a newline to stdin and
// releases the writer lock. A message that cannot be made one line (a line
// break in what is not valid JSON) is not written: flush returns an error
// wrapping ErrInvalidMessage. A ctx that ends during the write interrupts
// it: if nothing was written the call returns (false, ctx.Err()); if part
// was, the rest is written in the background, so the stream stays well
// formed, and it returns (true, ctx.Err()). Any other write error means the
// server stopped reading its stdin: the process is stopped and flush
// returns errNotSent.
func (p *process) flush(ctx context.Context) (sent bool, err error) {
	if err := p.oneLine(); err != nil {
		p.release()
		return false, err
	}
	return p.writeLine(ctx)
}

// oneLine makes wbuf one line (wire.OneLine); its error wraps
// ErrInvalidMessage, and leaves wbuf as it was.
func (p *process) oneLine() error {
	line, err := wire.OneLine(p.wbuf)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if len(line) != len(p.wbuf) { // compacted: a copy
		p.wbuf = append(p.wbuf[:0], line...)
	}
	return nil
}

// writeLine is flush for a wbuf already made one line.
func (p *process) writeLine(ctx context.Context) (sent bool, err error) {
	p.wbuf = append(p.wbuf, '\n')
	if err := ctx.Err(); err != nil {
		p.release()
		return false, err
	}
	var stop func() bool
	if ctx.Done() != nil {
		seq := p.wseq
		stop = context.AfterFunc(ctx, func() { p.interruptWrite(seq) })
	}
	n, werr := p.stdin.Write(p.wbuf)
	if stop != nil && !stop() {
		p.resetWriteDeadline()
	}
	switch {
	case werr == nil:
		p.release()
		return true, nil
	case errors.Is(werr, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		if n == 0 {
			p.release()
			return false, ctx.Err()
		}
		rest := p.wbuf[n:]
		if !p.goBackground(func() {
			if _, err := p.stdin.Write(rest); err != nil {
				p.writeFailed(err)
			}
			p.release()
		}) {
			p.release()
		}
		return true, ctx.Err()
	default:
		p.release()
		p.writeFailed(werr)
		return false, errNotSent
	}
}

func (p *process) interruptWrite(seq uint64) {
	p.dmu.Lock()
	if p.wseq == seq {
		p.stdin.SetWriteDeadline(time.Unix(1, 0)) //nolint:errcheck // fails only once stdin is closed
	}
	p.dmu.Unlock()
}

func (p *process) resetWriteDeadline() {
	p.dmu.Lock()
	p.wseq++
	p.stdin.SetWriteDeadline(time.Time{}) //nolint:errcheck // fails only once stdin is closed
	p.dmu.Unlock()
}

// writeFailed handles a failed write to stdin. A server that has exited
// fails the write too (a broken pipe): then its exit is what happened, and
// wait reports it; the failure is the server's closing of its stdin only
// if it is still running after eofGrace.
func (p *process) writeFailed(err error) {
	if p.isDown.Load() {
		return // stdin was closed because it went down
	}
	t := time.NewTimer(eofGrace)
	defer t.Stop()
	select {
	case <-p.down: // exited, or stopped for another reason
		return
	case <-t.C:
	}
	f := &failure{kind: ErrProtocol, event: "stopped reading its stdin", detail: err.Error(), cause: err}
	if p.stop(f) {
		p.s.log.Warn(fmt.Sprintf("mcp server %q stopped reading its stdin; stopping it", p.s.opts.Name), "error", err)
		p.signal(syscall.SIGKILL)
	}
}

// goBackground runs f on a goroutine owned by the process, unless the
// process is already down.
func (p *process) goBackground(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cause != nil {
		return false
	}
	p.wg.Go(f)
	return true
}

// readStdout reads the server's messages, one per line, until stdout ends or
// the server writes something that is not JSON-RPC.
func (p *process) readStdout() {
	defer close(p.stdoutDone)
	br := bufio.NewReaderSize(p.stdout, stdoutReadSize)
	limit := p.s.opts.MaxMessageBytes
	var long []byte // a line longer than the reader's buffer, being assembled
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(long)+len(chunk) > limit {
				p.badOutput(append(long, chunk...), fmt.Sprintf("a line longer than %d bytes", limit))
				return
			}
			long = append(long, chunk...)
			continue
		}
		var line []byte // owned: the parsed message aliases it and outlives the reader's buffer
		if long != nil {
			line, long = append(long, chunk...), nil
		} else if len(chunk) > 0 {
			line = bytes.Clone(chunk)
		}
		if len(line) > 0 && !p.dispatch(line, limit) {
			return
		}
		if err != nil {
			p.stdoutEnded()
			return
		}
	}
}

// dispatch handles one line of stdout; false means the process was stopped.
func (p *process) dispatch(line []byte, limit int) bool {
	if len(trimNewline(line)) > limit {
		p.badOutput(line, fmt.Sprintf("a line longer than %d bytes", limit))
		return false
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return true
	}
	var msg wire.Message // on the stack: a response's raw result aliases line, not msg
	if err := wire.ParseInto(&msg, line); err != nil {
		p.badOutput(line, "")
		return false
	}
	switch {
	case msg.IsResponse():
		p.deliver(&msg)
	case msg.IsRequest():
		p.serveRequest(msg)
	default:
		p.notification(&msg)
	}
	return true
}

func (p *process) deliver(msg *wire.Message) {
	id, ok := parseID(msg.ID)
	var c *pendingCall
	if ok {
		p.mu.Lock()
		c = p.pending[id]
		delete(p.pending, id)
		p.mu.Unlock()
	}
	if c == nil {
		// Most often the late answer to a call whose caller gave up.
		level := slog.LevelDebug
		if !ok {
			level = slog.LevelWarn
		}
		p.s.log.Log(context.Background(), level, fmt.Sprintf("mcp server %q answered an unknown request id; ignored", p.s.opts.Name), "id", string(msg.ID))
		return
	}
	r := callResult{}
	if msg.Error != nil {
		r.resp.Error = msg.Error
	} else {
		r.resp.Result = msg.Result
	}
	c.ch <- r
}

// parseID reads one of our integer ids, also when a server quoted it.
func parseID(raw json.RawMessage) (uint64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if len(raw) == 0 {
		return 0, false
	}
	var id uint64
	for _, c := range raw {
		if c < '0' || c > '9' || id > (math.MaxUint64-9)/10 {
			return 0, false
		}
		id = id*10 + uint64(c-'0')
	}
	return id, true
}

func (p *process) notification(msg *wire.Message) {
	if msg.Method == "notifications/cancelled" && p.cancelIncoming(msg.Params) {
		return
	}
	if h := p.s.opts.OnNotification; h != nil {
		h(msg.Method, msg.Params)
	}
}

// serveRequest answers a server-to-client request on its own goroutine, so
// that the reader never waits on a handler or on stdin.
func (p *process) serveRequest(msg wire.Message) {
	key := string(msg.ID)
	ctx, cancel := context.WithCancelCause(p.ctx)
	p.mu.Lock()
	if p.cause != nil {
		p.mu.Unlock()
		cancel(nil)
		return
	}
	p.incoming[key] = cancel
	p.wg.Go(func() {
		result, rpcErr := p.s.answer(ctx, msg.Method, msg.Params)
		p.mu.Lock()
		delete(p.incoming, key)
		p.mu.Unlock()
		cancelled := errors.Is(context.Cause(ctx), errServerCancelled)
		cancel(nil)
		if cancelled || p.acquire(p.ctx) != nil {
			return // a cancelled request gets no response
		}
		if rpcErr != nil {
			p.wbuf = wire.AppendError(p.wbuf[:0], msg.ID, rpcErr)
		} else {
			p.wbuf = wire.AppendResult(p.wbuf[:0], msg.ID, result)
		}
		if err := p.oneLine(); err != nil {
			p.s.log.Warn(fmt.Sprintf("mcp server %q: the answer to its %s request is not valid JSON; sending an error instead", p.s.opts.Name, msg.Method), "err", err)
			// The gateway's own error: one line (its id was read from one).
			p.wbuf = wire.AppendError(p.wbuf[:0], msg.ID, wire.Errorf(wire.CodeInternalError, "the gateway could not send the answer to %s as one JSON-RPC message", msg.Method))
		}
		p.writeLine(p.ctx) //nolint:errcheck // a failed write stops the process, which the calls report
	})
	p.mu.Unlock()
}

func (s *Stdio) answer(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	if s.opts.OnRequest != nil {
		return s.opts.OnRequest(ctx, method, params)
	}
	if method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "the gateway does not serve %s requests from mcp server %q", method, s.opts.Name)
}

// cancelIncoming ends the handler of a server-to-client request the server
// has cancelled; false when no such request is being served.
func (p *process) cancelIncoming(params json.RawMessage) bool {
	start, end, ok, err := wire.Member(params, "requestId")
	if err != nil || !ok {
		return false
	}
	p.mu.Lock()
	cancel := p.incoming[string(bytes.TrimSpace(params[start:end]))]
	p.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errServerCancelled)
	return true
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
		p.signal(syscall.SIGKILL)
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
		p.signal(syscall.SIGKILL)
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
	p.mu.Unlock()
	p.cancel()
	p.stdin.Close()
	return true
}

// signal sends sig to the whole process group: npx and shells leave children.
func (p *process) signal(sig syscall.Signal) {
	syscall.Kill(-p.pid, sig) //nolint:errcheck // ESRCH: the group is gone already
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
		p.signal(syscall.SIGKILL)
		p.drain()
	}
	<-p.stdoutDone
	<-p.stderrDone
	if crashed {
		p.s.log.Warn(fmt.Sprintf("mcp server %q exited (%s); the next call restarts it", p.s.opts.Name, detail), "pid", p.pid, "stderr", p.tail.lines())
	}
	p.failPending()
	p.wg.Wait()
	p.stdout.Close()
	p.stderr.Close()
	close(p.done)
}

// failPending fails every call still waiting, with the final stderr tail.
func (p *process) failPending() {
	f := p.finalFailure()
	p.mu.Lock()
	pending := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, c := range pending {
		c.ch <- callResult{fail: f}
	}
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
		p.signal(syscall.SIGKILL)
		p.drain()
		<-p.done
		return
	}
	p.graceful.Store(true)
	p.stop(f)
	p.signal(syscall.SIGTERM)
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
	p.signal(syscall.SIGKILL)
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
