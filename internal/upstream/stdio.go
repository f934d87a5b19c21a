package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

const (
	defaultProtocolVersion = "2025-11-25"
	defaultMaxMessageBytes = 16 << 20
	defaultKillGrace       = 3 * time.Second
)

var (
	defaultClientInfo   = json.RawMessage(`{"name":"mcp-gateway","version":"dev"}`)
	defaultCapabilities = json.RawMessage(`{}`)
)

// StdioOptions configure a [Stdio] upstream. Zero fields mean the default
// written beside them.
type StdioOptions struct {
	// Name is the server's name, used in errors, logs and as the stderr prefix.
	Name string
	// Command is the argv to run. A name without a slash is looked up in the
	// PATH of Env (the gateway's own PATH when Env has none).
	Command []string
	// Dir is the working directory; "" inherits the gateway's.
	Dir string
	// Env is the child's complete environment. Nil means an empty one: the
	// gateway's environment (and its token) is never inherited.
	Env []string
	// Stderr receives each line the child writes to stderr, prefixed
	// "[<Name>] ", in one Write per line. Writes of all upstreams are
	// serialized, so several may share one writer. Nil means os.Stderr.
	Stderr io.Writer
	// Logger receives the gateway's own messages about this server.
	// Nil means slog.Default().
	Logger *slog.Logger
	// ClientInfo is sent in initialize as clientInfo.
	// Nil means {"name":"mcp-gateway","version":"dev"}.
	ClientInfo json.RawMessage
	// Capabilities are the client capabilities sent in initialize. Nil means {}.
	Capabilities json.RawMessage
	// ProtocolVersion is the version asked for in initialize. "" means 2025-11-25.
	ProtocolVersion string
	// ProbeStateless sends server/discover before initialize, as a dual-era
	// client does on stdio: a server that supports 2026-07-28 is then spoken
	// to in that era (no initialize; every request carries _meta, which Call
	// fills in where the caller left it out), others get initialize. A
	// server's era is chosen for the life of its process.
	ProbeStateless bool
	// OnNotification receives the notifications the server sends
	// (list_changed, progress, message...). It runs on the goroutine that
	// reads the server's stdout, so messages arrive in order and a
	// notification sent before a response is seen before Call returns; it must
	// not block. params belongs to the callee. Nil drops notifications.
	OnNotification func(method string, params json.RawMessage)
	// OnRequest answers a server-to-client request (ping, sampling, roots,
	// elicitation). Each runs in its own goroutine; ctx ends when the server
	// cancels the request, the process stops, or the upstream is closed.
	// Return a result, or a JSON-RPC error. Nil answers ping with {} and
	// anything else with method-not-found.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error)
	// MaxMessageBytes is the longest stdout line accepted; a longer one is a
	// protocol error that stops the process. Zero means 16 MiB.
	MaxMessageBytes int
	// KillGrace is the time Close leaves the process group between SIGTERM
	// and SIGKILL. Zero means 3s.
	KillGrace time.Duration
}

// Stdio is an MCP server run as a supervised child process speaking
// line-delimited JSON-RPC over its stdin and stdout. It is safe for
// concurrent use. A crashed process is restarted by the next Call.
type Stdio struct {
	opts       StdioOptions
	log        *slog.Logger
	initParams json.RawMessage

	gen     atomic.Uint64
	started atomic.Int64 // unix nanoseconds of the current process's start
	// proc is the last initialized process; calls go to it while it is up.
	proc atomic.Pointer[process]

	mu        sync.Mutex
	closed    bool
	closeDone chan struct{} // closed when the first Close has finished
	starting  *startAttempt // the (re)start in progress, if any
	spawning  *process      // its process, once running, so Close can stop it
	latest    *process      // the most recently spawned process, for StderrTail
}

// startAttempt lets concurrent callers share one (re)start.
type startAttempt struct {
	done chan struct{}
	p    *process
	err  error
}

// NewStdio returns an upstream for one stdio server. It starts nothing; the
// process is spawned by Start or by the first Call.
func NewStdio(opts StdioOptions) *Stdio {
	if opts.Env == nil {
		opts.Env = []string{}
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClientInfo == nil {
		opts.ClientInfo = defaultClientInfo
	}
	if opts.Capabilities == nil {
		opts.Capabilities = defaultCapabilities
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = defaultProtocolVersion
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = defaultMaxMessageBytes
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = defaultKillGrace
	}
	params := []byte(`{"protocolVersion":`)
	params = wire.AppendString(params, opts.ProtocolVersion)
	params = append(params, `,"capabilities":`...)
	params = append(params, opts.Capabilities...)
	params = append(params, `,"clientInfo":`...)
	params = append(params, opts.ClientInfo...)
	params = append(params, '}')
	return &Stdio{
		opts:       opts,
		log:        opts.Logger.With("server", opts.Name),
		initParams: params,
		closeDone:  make(chan struct{}),
	}
}

// Name returns the server's name.
func (s *Stdio) Name() string { return s.opts.Name }

// Generation counts the processes started and initialized so far; it changes
// when the server was restarted, which a caller caching the server's lists
// may want to notice.
func (s *Stdio) Generation() uint64 { return s.gen.Load() }

// StartedAt is when the current process started; zero before the first.
func (s *Stdio) StartedAt() time.Time { return unixNanoTime(s.started.Load()) }

func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// InitializeResult returns the raw initialize result of the current (or last)
// process, or nil before the first successful start.
func (s *Stdio) InitializeResult() json.RawMessage {
	if p := s.proc.Load(); p != nil {
		return p.initResult
	}
	return nil
}

// StderrTail returns the last lines (up to 20) the most recently started
// process wrote to stderr.
func (s *Stdio) StderrTail() []string {
	s.mu.Lock()
	p := s.latest
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.tail.lines()
}

// Start spawns the process and performs the initialize handshake
// (initialize, a check of its result, notifications/initialized). It returns
// at once if a process is already up, and shares a start already in progress.
// Give ctx a deadline: a server that never answers is waited for as long as
// ctx allows. On failure nothing is left running, and the error names the
// server, says what failed and quotes the tail of its stderr.
func (s *Stdio) Start(ctx context.Context) error {
	_, err := s.running(ctx)
	return err
}

// Call sends a request and waits for its response. If no process is up
// (never started, crashed, or stopped after a protocol error) it first starts
// one within ctx. params is sent as it is and may be nil.
//
// When ctx ends first, the server is sent notifications/cancelled and Call
// returns an error wrapping ctx.Err(). When the process dies during the call,
// the error wraps ErrExited or ErrProtocol and quotes the server's stderr.
func (s *Stdio) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	params = withTraceMeta(ctx, params)
	for retried := false; ; retried = true {
		p, err := s.running(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				err = &startFailed{err}
			}
			return nil, err
		}
		if p.stateless {
			params = s.statelessMeta(params)
		}
		resp, err := p.call(ctx, method, params)
		switch {
		case err == nil:
			return &resp, nil
		case err == errNotSent && !retried:
			continue // it died between our look and our request: nothing was sent, try a fresh one
		case err == errNotSent:
			return nil, &serverError{server: s.opts.Name, phase: phaseNotSent, f: p.finalFailure()}
		case errors.Is(err, ErrInvalidMessage):
			return nil, fmt.Errorf("mcp server %q: %s not sent: %w; its params must be valid JSON", s.opts.Name, method, err)
		}
		var f *failure
		if errors.As(err, &f) {
			return nil, &serverError{server: s.opts.Name, phase: phaseCall, f: f}
		}
		return nil, fmt.Errorf("mcp server %q: %s abandoned before the server answered: %w", s.opts.Name, method, err)
	}
}

// Notify sends a notification to the running process. It does not start
// one: with no process up it returns an error wrapping ErrNotRunning.
func (s *Stdio) Notify(ctx context.Context, method string, params json.RawMessage) error {
	p := s.proc.Load()
	if p == nil || p.isDown.Load() {
		if s.isClosed() {
			return s.closedError()
		}
		return fmt.Errorf("mcp server %q: cannot send %s: %w", s.opts.Name, method, ErrNotRunning)
	}
	if err := p.notify(ctx, method, params); err != nil {
		if errors.Is(err, errNotSent) {
			return fmt.Errorf("mcp server %q: cannot send %s: %w", s.opts.Name, method, ErrNotRunning)
		}
		return fmt.Errorf("mcp server %q: sending %s: %w", s.opts.Name, method, err)
	}
	return nil
}

// Close stops the process: its stdin is closed, its whole process group gets
// SIGTERM and, after KillGrace, SIGKILL. Close returns once the process has
// exited and every goroutine of the upstream has ended. Calls in flight fail
// with an error wrapping ErrClosed, and so do later ones. Close may be called
// more than once and concurrently; every call waits for the shutdown.
func (s *Stdio) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closeDone
		return nil
	}
	s.closed = true
	attempt, current, spawning := s.starting, s.proc.Load(), s.spawning
	s.mu.Unlock()

	var wg sync.WaitGroup
	for _, p := range []*process{current, spawning} {
		if p != nil {
			wg.Go(func() { p.terminate(s.opts.KillGrace, closedFailure()) })
		}
	}
	wg.Wait()
	if attempt != nil {
		<-attempt.done // a start that raced us has seen closed and stopped its process
	}
	close(s.closeDone)
	return nil
}

func (s *Stdio) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Stdio) closedError() error {
	return fmt.Errorf("mcp server %q: %w", s.opts.Name, ErrClosed)
}

func closedFailure() *failure {
	return &failure{kind: ErrClosed, event: "was closed"}
}

// running returns a process that is up, starting one if needed. Concurrent
// callers share one start; if the caller who started it gave up (its ctx
// ended) the others try again with their own ctx.
func (s *Stdio) running(ctx context.Context) (*process, error) {
	if p := s.proc.Load(); p != nil && !p.isDown.Load() {
		return p, nil
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, s.closedError()
		}
		if p := s.proc.Load(); p != nil && !p.isDown.Load() {
			s.mu.Unlock()
			return p, nil
		}
		if a := s.starting; a != nil {
			s.mu.Unlock()
			select {
			case <-a.done:
				if a.err == nil {
					return a.p, nil
				}
				if isContextError(a.err) && ctx.Err() == nil {
					continue
				}
				return nil, a.err
			case <-ctx.Done():
				return nil, fmt.Errorf("mcp server %q: gave up waiting for it to start: %w", s.opts.Name, ctx.Err())
			}
		}
		a := &startAttempt{done: make(chan struct{})}
		s.starting = a
		s.mu.Unlock()

		p, err := s.spawn(ctx)

		s.mu.Lock()
		s.starting, s.spawning = nil, nil
		closed := s.closed
		if err == nil && !closed {
			s.proc.Store(p)
			s.logStarted(p, s.gen.Add(1))
			s.started.Store(time.Now().UnixNano())
		}
		s.mu.Unlock()
		if err == nil && closed { // Close ran during the handshake
			p.terminate(s.opts.KillGrace, closedFailure())
			p, err = nil, s.closedError()
		}
		a.p, a.err = p, err
		close(a.done)
		return p, err
	}
}

func (s *Stdio) logStarted(p *process, gen uint64) {
	if gen == 1 {
		s.log.Debug(fmt.Sprintf("mcp server %q started", s.opts.Name), "pid", p.pid)
		return
	}
	s.log.Info(fmt.Sprintf("mcp server %q restarted", s.opts.Name), "pid", p.pid, "generation", gen)
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// spawn runs the command and performs the handshake. On failure the process
// is killed and waited for, so the error quotes all of its stderr.
func (s *Stdio) spawn(ctx context.Context) (*process, error) {
	p, err := s.exec()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		p.terminate(0, closedFailure())
		return nil, s.closedError()
	}
	s.spawning, s.latest = p, p
	s.mu.Unlock()

	// A first start through a package runner fetches the package, which
	// can take a minute: say so once, rather than nothing.
	notice := slowStartNotice
	slow := time.AfterFunc(notice, func() {
		why := ""
		if runner := filepath.Base(s.opts.Command[0]); runner == "npx" || runner == "uvx" {
			why = " (" + runner + " fetches the package on its first start)"
		}
		s.log.Info(fmt.Sprintf("mcp server %q has not answered initialize after %s; still waiting%s", s.opts.Name, notice, why))
	})
	err = s.initialize(ctx, p)
	slow.Stop()
	if err != nil {
		p.terminate(0, &failure{kind: ErrExited, event: "was stopped", detail: "its start failed"})
		return nil, s.startError(p, err)
	}
	return p, nil
}

// slowStartNotice is how long a start goes unremarked.
var slowStartNotice = 10 * time.Second

// probeTimeout bounds the wait for an answer to server/discover: a session-era
// server may ignore a request that comes before initialize.
const probeTimeout = 3 * time.Second

// Stateless reports whether the server speaks 2026-07-28 (see ProbeStateless).
func (s *Stdio) Stateless() bool {
	p := s.proc.Load()
	return p != nil && p.stateless
}

// statelessMeta returns params with the 2026-07-28 request _meta filled in
// where the caller left it out.
func (s *Stdio) statelessMeta(params json.RawMessage) json.RawMessage {
	return statelessMeta(params, s.opts.ClientInfo, s.opts.Capabilities)
}

// discover probes for a 2026-07-28 server. ok is false when the server is
// of the session era; err is a transport failure.
func (s *Stdio) discover(ctx context.Context, p *process) (ok bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	resp, err := p.call(pctx, "server/discover", s.statelessMeta(nil))
	if err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			return false, nil // no answer: a session-era server
		}
		return false, err
	}
	init, ok := discovered(resp)
	if !ok {
		return false, nil
	}
	p.initResult = init
	p.stateless = true
	return true, nil
}

// listen opens the 2026-07-28 stream of change notifications on a stateless
// server for as long as its process lives; what arrives goes to OnNotification.
func (s *Stdio) listen(p *process) {
	params := s.statelessMeta(json.RawMessage(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}`))
	p.rpc.Go(func() { _, _ = p.call(p.ctx, "subscriptions/listen", params) })
}

// initialize performs the MCP handshake on a fresh process.
func (s *Stdio) initialize(ctx context.Context, p *process) error {
	if s.opts.ProbeStateless {
		ok, err := s.discover(ctx, p)
		if err != nil {
			return err
		}
		if ok {
			p.initialized.Store(true)
			s.listen(p)
			return nil
		}
	}
	resp, err := p.call(ctx, "initialize", s.initParams)
	if err != nil {
		return err
	}
	if resp.Error != nil {
		// A server of the 2026-07-28 era only refuses initialize: ask it
		// the new way before giving up.
		if !s.opts.ProbeStateless {
			if ok, err := s.discover(ctx, p); err == nil && ok {
				p.initialized.Store(true)
				s.listen(p)
				return nil
			}
		}
		return wire.DecodeError(resp.Error)
	}
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil || result.ProtocolVersion == "" {
		return &invalidInitializeError{result: resp.Result}
	}
	if result.ProtocolVersion != s.opts.ProtocolVersion {
		s.log.Debug(fmt.Sprintf("mcp server %q chose protocol version %s", s.opts.Name, result.ProtocolVersion), "asked", s.opts.ProtocolVersion)
	}
	p.initResult = resp.Result
	if err := p.notify(ctx, "notifications/initialized", nil); err != nil {
		return err
	}
	p.initialized.Store(true)
	return nil
}

type invalidInitializeError struct{ result json.RawMessage }

func (e *invalidInitializeError) Error() string {
	return fmt.Sprintf("its initialize result has no protocolVersion: %.200s", e.result)
}

// startError explains why a start failed, after the process is gone.
func (s *Stdio) startError(p *process, err error) error {
	tail := stderrSuffix(p.tail.lines())
	var f *failure
	var rpcErr *wire.Error
	var invalid *invalidInitializeError
	switch {
	case errors.Is(err, errNotSent):
		return &serverError{server: s.opts.Name, phase: phaseInitialize, f: p.finalFailure()}
	case errors.As(err, &f):
		if f.kind == ErrClosed {
			return s.closedError()
		}
		g := *f
		g.stderr = p.tail.lines()
		return &serverError{server: s.opts.Name, phase: phaseInitialize, f: &g}
	case errors.As(err, &rpcErr):
		return fmt.Errorf("mcp server %q refused initialize: %w; check its arguments and environment%s", s.opts.Name, err, tail)
	case errors.As(err, &invalid):
		return fmt.Errorf("mcp server %q answered initialize wrongly: %w; is it an MCP server?%s", s.opts.Name, err, tail)
	case isContextError(err):
		return fmt.Errorf("mcp server %q did not answer initialize: %w; check that its command starts an MCP server speaking stdio%s", s.opts.Name, err, tail)
	default:
		return fmt.Errorf("mcp server %q: initialize failed: %w%s", s.opts.Name, err, tail)
	}
}
