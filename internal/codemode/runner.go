package codemode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

// Tool is a function a program may call: one tool of one server.
type Tool struct {
	Server  string          // the server's configured name: servers.<Server>
	Name    string          // the tool's name at its server: servers.<Server>.<Name>
	Exposed string          // its name in the gateway's tools/list, which CallFunc takes
	Def     json.RawMessage // its definition (inputSchema, outputSchema, description)
	// Hidden: the caller's policy hides it; it is callable (and refused
	// with the policy's reason), but not described.
	Hidden bool
}

// CallFunc makes one inner call of a run: the tool's CallToolResult, or an
// error for a call that got no result (a JSON-RPC error, the run ending).
type CallFunc func(ctx context.Context, t Tool, arguments json.RawMessage) (json.RawMessage, error)

// Program is one run's program and what it may call.
type Program struct {
	// Source is the body of an async function: it may await, and what it
	// returns (as JSON) is the run's value.
	Source string
	Tools  []Tool
	Call   CallFunc
	Limits Limits
}

// RunnerName is the runner's executable: the JavaScript engine runs in it,
// never in the gateway's own process.
const RunnerName = "mcp-gateway-codemode"

// The default bounds of the runner processes.
const (
	DefaultMaxRunners          = 8
	DefaultMaxRunnersPerClient = 2
	DefaultRunnerIdle          = time.Minute
)

// RunnerOptions configure the runner processes of a gateway.
type RunnerOptions struct {
	// Path is the runner's executable; "": FindRunner's.
	Path string
	// Env is added to the runner's environment (tests).
	Env []string
	// MaxTotal bounds the runner processes, MaxPerClient those serving
	// one client's runs at once; a run beyond either waits its turn (within
	// its timeout). Idle is how long a runner waits for the next run before
	// it is stopped.
	MaxTotal, MaxPerClient int
	Idle                   time.Duration
	// MemoryBytes is the runs' memory ceiling (Limits.MemoryBytes): the
	// OS caps a runner's data a little above it.
	MemoryBytes int64
	// DataBytes overrides that cap (tests); 0: 256 MiB + 2 × MemoryBytes.
	DataBytes uint64
	Logger    *slog.Logger
	// Metrics counts the runner processes; nil: not counted.
	Metrics RunnerMetrics
}

// RunnerMetrics counts runner processes: started, and stopped by why
// (idle, limit, cancelled, died, closed).
type RunnerMetrics interface {
	CodeModeRunnerStarted()
	CodeModeRunnerStopped(reason string)
}

// FindRunner returns the runner's executable: path when given, else the
// one beside the gateway's own executable, else the one on PATH.
func FindRunner(path string) (string, error) {
	if path != "" {
		if err := executable(path); err != nil {
			return "", fmt.Errorf("the code-mode runner --code-mode-runner %s: %v", path, err)
		}
		return path, nil
	}
	var beside string
	if self, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(self), RunnerName)
		if executable(beside) == nil {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(RunnerName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("the code-mode runner %s is not installed: it is neither beside the gateway (%s) nor on PATH; "+
		"install it with the gateway (go install github.com/mcp-gateway/mcp-gateway/cmd/...@latest, or make build, which puts both in bin/) "+
		"or give its path with --code-mode-runner", RunnerName, beside)
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// Runners are a gateway's runner processes: each serves one run at a
// time and is kept warm for the next (in a fresh engine); one whose run
// hit a limit, was cancelled, or died is stopped, and the next run gets a
// new one.
type Runners struct {
	o     RunnerOptions
	path  string
	err   error // the runner was not found
	total chan struct{}

	mu      sync.Mutex
	clients map[string]*clientSlots
	idle    []*proc
	alive   int
	closed  bool
}

type clientSlots struct {
	slots chan struct{}
	users int
}

// NewRunners makes a gateway's runners; none is started before a run.
func NewRunners(o RunnerOptions) *Runners {
	if o.MaxTotal <= 0 {
		o.MaxTotal = DefaultMaxRunners
	}
	if o.MaxPerClient <= 0 {
		o.MaxPerClient = DefaultMaxRunnersPerClient
	}
	if o.Idle <= 0 {
		o.Idle = DefaultRunnerIdle
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := &Runners{o: o, total: make(chan struct{}, o.MaxTotal), clients: map[string]*clientSlots{}}
	p.path, p.err = FindRunner(o.Path)
	return p
}

// Err is why no run can start (the runner is not installed), nil when runs can.
func (p *Runners) Err() error { return p.err }

// Alive is how many runner processes there are.
func (p *Runners) Alive() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alive
}

// Close stops the idle runners; the busy ones stop when their runs end.
func (p *Runners) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, r := range idle {
		p.stop(r, "closed")
	}
}

// Run runs a program in a runner process for client (runs of one client
// take at most MaxPerClient runners at once): its value, or why it failed.
func (p *Runners) Run(ctx context.Context, client string, prog Program) Outcome {
	began := time.Now()
	out := p.run(ctx, client, prog)
	out.Elapsed = time.Since(began)
	return out
}

func (p *Runners) run(ctx context.Context, client string, prog Program) Outcome {
	lim := prog.Limits.WithDefaults()
	if p.err != nil {
		return Outcome{Err: &RunnerError{Message: p.err.Error()}}
	}
	if n := len(prog.Source); n > lim.ProgramBytes {
		return Outcome{Err: proto.Limitf(LimitProgramBytes, "the program is %d bytes, more than %d", n, lim.ProgramBytes)}
	}
	waitCtx, cancel := context.WithTimeout(ctx, lim.Timeout)
	began := time.Now()
	release, err := p.acquire(waitCtx, client)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{Err: ErrCancelled}
		}
		return Outcome{Err: proto.Limitf(LimitTimeout, "no code-mode runner was free within %s: its client's %d (--code-mode-max-runners-per-client) or the gateway's %d (--code-mode-max-runners) were all busy",
			lim.Timeout, p.o.MaxPerClient, p.o.MaxTotal)}
	}
	defer release()
	// The wait for a runner counts against the run's time.
	lim.Timeout = max((lim.Timeout - time.Since(began)).Round(time.Millisecond), time.Millisecond)
	r, err := p.get()
	if err != nil {
		return Outcome{Err: &RunnerError{Message: fmt.Sprintf("could not start the code-mode runner %s: %v", p.path, err)}}
	}
	out, reason := p.serve(ctx, r, prog, lim)
	if reason == "" {
		p.put(r)
	} else {
		p.stop(r, reason)
	}
	return out
}

// acquire takes a runner slot of the client's and one of the gateway's.
func (p *Runners) acquire(ctx context.Context, client string) (func(), error) {
	p.mu.Lock()
	c := p.clients[client]
	if c == nil {
		c = &clientSlots{slots: make(chan struct{}, p.o.MaxPerClient)}
		p.clients[client] = c
	}
	c.users++
	p.mu.Unlock()
	done := func() {
		p.mu.Lock()
		if c.users--; c.users == 0 {
			delete(p.clients, client)
		}
		p.mu.Unlock()
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
	select {
	case p.total <- struct{}{}:
	case <-ctx.Done():
		<-c.slots
		done()
		return nil, ctx.Err()
	}
	return func() { <-p.total; <-c.slots; done() }, nil
}

// proc is one runner process.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex
	enc    *json.Encoder
	w      *bufio.Writer
	msgs   chan proto.Message // closed when its stdout ends
	exited chan struct{}      // closed once it exited
	stderr tail
	timer  *time.Timer  // stops it when idle
	tools  []proto.Func // the functions of its last run
	sent   []Tool       // the tools of its last run, as given
	listed int          // runs whose tools were listed and compared one by one
	cur    atomic.Pointer[runState]
}

func (r *proc) send(m proto.Message) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if err := r.enc.Encode(m); err != nil {
		return err
	}
	return r.w.Flush()
}

// get takes an idle runner, else starts one.
func (p *Runners) get() (*proc, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		r := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		r.timer.Stop()
		select {
		case <-r.exited:
			p.stop(r, "died")
		default:
			return r, nil
		}
	}
	return p.start()
}

func (p *Runners) start() (*proc, error) {
	cmd := exec.Command(p.path)
	cmd.Env = append(runnerEnv(), p.o.Env...)
	r := &proc{cmd: cmd, msgs: make(chan proto.Message, 16), exited: make(chan struct{})}
	cmd.Stderr = &r.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := limitData(cmd.Process.Pid, p.dataLimit()); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("capping its memory: %w", err)
	}
	r.stdin = stdin
	r.w = bufio.NewWriterSize(stdin, 64<<10)
	r.enc = json.NewEncoder(r.w)
	go func() {
		defer close(r.msgs)
		dec := json.NewDecoder(bufio.NewReaderSize(stdout, 64<<10))
		for {
			var m proto.Message
			if dec.Decode(&m) != nil {
				return
			}
			if st := r.cur.Load(); m.Call != nil && st != nil {
				st.start(*m.Call)
				continue
			}
			r.msgs <- m
		}
	}()
	go func() { _ = cmd.Wait(); close(r.exited) }()
	p.mu.Lock()
	p.alive++
	p.mu.Unlock()
	if p.o.Metrics != nil {
		p.o.Metrics.CodeModeRunnerStarted()
	}
	p.o.Logger.Debug("code-mode runner started", "pid", cmd.Process.Pid)
	return r, nil
}

// runnerEnv is the environment a runner gets: the Go runtime's settings
// only, none of the gateway's own (its tokens, its servers' secrets).
func runnerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name == "GOGC" || name == "GOMEMLIMIT" || name == "GOMAXPROCS" || name == "GODEBUG" || name == "GOTRACEBACK" {
			env = append(env, kv)
		}
	}
	return env
}

// dataLimit is the OS's cap on a runner's data segment: room for the
// runtime and the engine, and for the memory ceiling twice over (the
// collector lets the heap reach twice what is live); the ceiling itself
// is enforced by the runner's sampler, this is the backstop.
func (p *Runners) dataLimit() uint64 {
	if p.o.DataBytes > 0 {
		return p.o.DataBytes
	}
	return 256<<20 + 2*uint64(proto.Limits{MemoryBytes: p.o.MemoryBytes}.WithDefaults().MemoryBytes)
}

// put keeps a runner for the next run, stopping it after Idle.
func (p *Runners) put(r *proc) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.stop(r, "closed")
		return
	}
	p.idle = append(p.idle, r)
	r.timer = time.AfterFunc(p.o.Idle, func() {
		p.mu.Lock()
		i := -1
		for j, x := range p.idle {
			if x == r {
				i = j
			}
		}
		if i >= 0 {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
		}
		p.mu.Unlock()
		if i >= 0 {
			p.stop(r, "idle")
		}
	})
	p.mu.Unlock()
}

// stop ends a runner: its stdin closed, and killed if it does not exit.
func (p *Runners) stop(r *proc, reason string) {
	_ = r.stdin.Close()
	if reason != "idle" && reason != "closed" {
		_ = r.cmd.Process.Kill()
	}
	select {
	case <-r.exited:
	case <-time.After(2 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	p.mu.Lock()
	p.alive--
	p.mu.Unlock()
	if p.o.Metrics != nil {
		p.o.Metrics.CodeModeRunnerStopped(reason)
	}
	p.o.Logger.Debug("code-mode runner stopped", "pid", r.cmd.Process.Pid, "reason", reason)
}

// serve runs prog in r, making its inner calls; reason is why r must be
// stopped now ("" when it may serve the next run).
func (p *Runners) serve(ctx context.Context, r *proc, prog Program, lim Limits) (out Outcome, reason string) {
	runCtx, cancel := context.WithCancel(ctx)
	var st *runState
	defer func() {
		cancel() // ends the inner calls still in flight, at their servers
		if st != nil {
			st.wg.Wait()
		}
	}()
	req := &proto.RunRequest{Source: prog.Source, Limits: lim}
	switch {
	case r.sent != nil && len(prog.Tools) > 0 && len(r.sent) == len(prog.Tools) && &r.sent[0] == &prog.Tools[0]:
		// The very tools of its last run (resolve keeps them): nothing to compare.
		req.SameTools = true
	default:
		r.listed++
		funcs := make([]proto.Func, len(prog.Tools))
		for i, t := range prog.Tools {
			funcs[i] = proto.Func{Server: t.Server, Name: t.Name}
		}
		req.Tools = funcs
		if r.tools != nil && slices.Equal(r.tools, funcs) {
			req.Tools, req.SameTools = nil, true
		} else {
			r.tools = funcs
		}
	}
	r.sent = prog.Tools
	st = &runState{ctx: runCtx, prog: prog, lim: lim, r: r}
	r.cur.Store(st)
	defer func() {
		r.cur.Store(nil)
		st.mu.Lock()
		st.closed = true
		st.mu.Unlock()
	}()
	if err := r.send(proto.Message{Run: req}); err != nil {
		return p.died(r, 0, lim), "died"
	}
	// The runner ends the run at its timeout; this is the backstop of a
	// runner that does not.
	backstop := time.NewTimer(lim.Timeout + 5*time.Second)
	defer backstop.Stop()
	for {
		select {
		case m, ok := <-r.msgs:
			switch {
			case !ok:
				return p.died(r, st.count(), lim), "died"
			case m.Call != nil: // a call the reader did not start: not this run's
			case m.Done != nil:
				out := m.Done.Outcome()
				var le *LimitError
				if errors.As(out.Err, &le) {
					return out, "limit"
				}
				return out, ""
			}
		case <-ctx.Done():
			return Outcome{Err: ErrCancelled, Calls: st.count()}, "cancelled"
		case <-backstop.C:
			return Outcome{Err: proto.Limitf(LimitTimeout, "the run took longer than %s", lim.Timeout), Calls: st.count()}, "limit"
		}
	}
}

// runState is the run a runner serves: its reader starts the run's inner
// calls as they come (one hop fewer per call than through serve).
type runState struct {
	ctx  context.Context
	prog Program
	lim  Limits
	r    *proc

	mu     sync.Mutex
	closed bool // the run ended: no more calls start
	calls  int
	wg     sync.WaitGroup
}

func (st *runState) count() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.calls
}

// start makes an inner call, on a goroutine of its own, and answers it.
func (st *runState) start(c proto.Call) {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.calls++
	st.wg.Add(1)
	st.mu.Unlock()
	go func() {
		defer st.wg.Done()
		reply := proto.Reply{ID: c.ID}
		if c.Tool < 0 || c.Tool >= len(st.prog.Tools) {
			reply.Error = fmt.Sprintf("the runner called tool %d of %d", c.Tool, len(st.prog.Tools))
		} else {
			res, err := st.prog.Call(st.ctx, st.prog.Tools[c.Tool], c.Arguments)
			reply.Result = res
			switch {
			case err != nil:
				reply.Result, reply.Error = nil, err.Error()
			case len(res) > st.lim.ResultBytes:
				reply.Result, reply.TooLarge = nil, len(res)
			case len(res) == 0:
				reply.Result = json.RawMessage("null")
			}
		}
		_ = st.r.send(proto.Message{Reply: &reply})
	}()
}

// died is the outcome of a run whose runner exited before its end: out of
// the memory the OS gives it (the memory ceiling's backstop), or crashed.
func (p *Runners) died(r *proc, calls int, lim Limits) Outcome {
	select {
	case <-r.exited:
	case <-time.After(2 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	last := r.stderr.String()
	if strings.Contains(last, "out of memory") {
		return Outcome{Calls: calls, Err: proto.Limitf(LimitMemory, "the run's runner process ran out of the %d MiB of memory the OS lets it have, before the ceiling of %d MiB caught the program",
			p.dataLimit()>>20, lim.MemoryBytes>>20)}
	}
	last = lastWords(last)
	state := "it was killed or crashed"
	if ps := r.cmd.ProcessState; ps != nil {
		state = ps.String()
	}
	msg := fmt.Sprintf("the run's runner process (%s, pid %d) ended in the middle of the run (%s)", RunnerName, r.cmd.Process.Pid, state)
	if last != "" {
		msg += ": " + last
	}
	return Outcome{Calls: calls, Err: &RunnerError{Message: msg + "; the gateway and its other runs carry on, and the next run gets a new runner"}}
}

// tail keeps the first and the last KiB a runner wrote to its stderr (a
// Go runtime's fatal error comes first, then its goroutines).
type tail struct {
	mu         sync.Mutex
	head, last []byte
}

const tailBytes = 2 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if room := tailBytes - len(t.head); room > 0 {
		k := min(room, len(b))
		t.head = append(t.head, b[:k]...)
		b = b[k:]
	}
	t.last = append(t.last, b...)
	if n := len(t.last); n > tailBytes {
		t.last = append(t.last[:0], t.last[n-tailBytes:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.last)
}

// lastWords is the line of a runner's stderr that says why it ended: a Go
// fatal error or panic, else its last line.
func lastWords(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "mcp-gateway-codemode:") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}
