package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// upstreamFor returns the session's own upstream session of a per-client
// server, starting it on first use.
func (s *Session) upstreamFor(ctx context.Context, srv *server) (Upstream, error) {
	s.mu.Lock()
	up := s.ups[srv]
	s.mu.Unlock()
	if up != nil {
		return up, nil
	}
	caps := s.capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	up = srv.newPerClient(caps, s.hooksFor(srv))
	if p, ok := up.(interface{ IsProcess() bool }); ok && p.IsProcess() {
		proc, err := s.gw.procs.reserve(s, srv, up)
		if err != nil {
			_ = up.Close()
			return nil, err
		}
		up = proc
	}
	if err := up.Start(ctx); err != nil {
		_ = up.Close()
		return nil, err
	}
	s.mu.Lock()
	if s.upsClosed { // the session ended while this one was starting
		s.mu.Unlock()
		_ = up.Close()
		return nil, fmt.Errorf("mcp server %q: the client's session ended", srv.name)
	}
	if s.ups == nil {
		s.ups = map[*server]Upstream{}
	}
	if prev := s.ups[srv]; prev != nil { // started meanwhile by another call
		s.mu.Unlock()
		_ = up.Close()
		return prev, nil
	}
	select {
	case <-srv.gone: // removed while this session was starting
		s.mu.Unlock()
		_ = up.Close()
		return nil, fmt.Errorf("mcp server %q was removed", srv.name)
	default:
	}
	s.ups[srv] = up
	level := s.logLevel // read with the store: a setLevel after this sees up in s.ups
	s.mu.Unlock()
	if proc, ok := up.(*clientProcess); ok {
		proc.release() // started: idle from now until its first call, and stopped if it never gets one
	}
	if level >= 0 {
		s.gw.setUpstreamLevel(ctx, srv, up, level)
	}
	return up, nil
}

// hooksFor routes what a session's own upstream session sends: to this
// client, on the stream of its call in flight on that server when there is one.
func (s *Session) hooksFor(srv *server) Hooks {
	g := s.gw
	callOn := func() *call { return s.callOn(srv) }
	callStream := func() Stream {
		if c := callOn(); c != nil {
			return c.stream
		}
		return nil
	}
	return Hooks{
		OnNotification: func(method string, params json.RawMessage) {
			if method == "notifications/tasks/status" {
				g.taskStatus(s.ownUpstream(srv), params)
				return
			}
			if method != "notifications/message" {
				g.serverNotification(srv, method, params)
				return
			}
			level, _ := wire.GetString(params, "level")
			if !s.wants(slices.Index(logLevels, level)) {
				return
			}
			msg := wire.AppendNotification(nil, method, params)
			deliver(callStream(), s, msg)
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			if method == "ping" {
				return json.RawMessage(`{}`), nil
			}
			if res, werr, handled := g.serverTaskRequest(ctx, srv, method, params); handled {
				return res, werr
			}
			if missing := s.lacks(method, params); missing != "" {
				return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: the client did not declare the %s capability", method, missing)
			}
			c := callOn()
			var st Stream
			if c != nil {
				st = c.stream
			}
			return g.askClient(ctx, s, srv, st, method, g.traceBack(c, params))
		},
	}
}

// procTable is the gateway's running processes of per-client servers,
// counted against its Limits.
type procTable struct {
	mu  sync.Mutex
	all map[*clientProcess]struct{}
}

// clientProcess is one client session's process of a per-client server.
// It counts against the limits from reserve until it is stopped or
// closed, and stops after Limits.PerClientIdleTimeout without a call.
type clientProcess struct {
	Upstream
	g      *Gateway
	sess   *Session
	srv    *server
	client string // clientKey of its session's client

	// Under g.procs.mu.
	busy    int       // calls in flight, and 1 while it starts
	last    time.Time // when it was last busy
	stopped bool
	timer   *time.Timer
}

// reserve counts a new process up of srv for the session s, making room
// at a limit by stopping the longest idle process of the same client, else
// one of a client holding more than it; with no such process, it refuses.
// The process counts as busy until release.
func (t *procTable) reserve(s *Session, srv *server, up Upstream) (*clientProcess, error) {
	g := s.gw
	p := &clientProcess{Upstream: up, g: g, sess: s, srv: srv, client: clientKey(s.clientInfo), busy: 1}
	perServer, total := g.Limits.processes(), g.Limits.processesTotal()
	t.mu.Lock()
	if t.all == nil {
		t.all = map[*clientProcess]struct{}{}
	}
	n := 0
	for o := range t.all {
		if o.srv == srv {
			n++
		}
	}
	var (
		full   string
		victim *clientProcess
	)
	switch {
	case n >= perServer:
		full = LimitPerClientProcesses
		victim = t.idlest(p.client, func(o *clientProcess) bool { return o.srv == srv })
	case len(t.all) >= total:
		full = LimitPerClientProcessesTotal
		victim = t.idlest(p.client, func(*clientProcess) bool { return true })
	}
	if full != "" && victim == nil {
		t.mu.Unlock()
		g.quota.refuse(full)
		g.Router.log.Warn("refused a process for a client session: the per-client processes are at their limit and none this client may stop is idle",
			"server", srv.name, "client", p.client, "limit", full)
		if full == LimitPerClientProcesses {
			return nil, fmt.Errorf("mcp server %q runs a process per client session and %d of them run already, all busy or of other clients (--max-per-client-processes %d): try again when a call ends, or end idle sessions", srv.name, n, perServer)
		}
		return nil, fmt.Errorf("mcp server %q: %d processes of per-client servers run already, all busy or of other clients (--max-per-client-processes-total %d): try again when a call ends, or end idle sessions", srv.name, len(t.all), total)
	}
	if victim != nil {
		victim.stopLocked()
	}
	t.all[p] = struct{}{}
	t.mu.Unlock()
	if victim != nil {
		g.quota.drop("process_evicted")
		g.Router.log.Info("stopped the longest idle per-client process to make room", "server", victim.srv.name, "client", victim.client, "limit", full)
		_ = victim.Upstream.Close()
	}
	return p, nil
}

// idlest picks, among the idle processes in scope, the longest idle of
// client, else of the client holding the most in scope, if it holds more
// than client. Called with t.mu held.
func (t *procTable) idlest(client string, in func(*clientProcess) bool) *clientProcess {
	held := map[string]int{}
	for o := range t.all {
		if in(o) {
			held[o.client]++
		}
	}
	var best *clientProcess
	better := func(o *clientProcess) bool {
		switch {
		case best == nil:
			return true
		case (o.client == client) != (best.client == client):
			return o.client == client
		case held[o.client] != held[best.client]:
			return held[o.client] > held[best.client]
		}
		return o.last.Before(best.last)
	}
	for o := range t.all {
		if !in(o) || o.busy > 0 || o.stopped || o.client != client && held[o.client] <= held[client] {
			continue
		}
		if better(o) {
			best = o
		}
	}
	return best
}

// Call runs a call on the process, which is busy meanwhile. A process
// stopped since the session took it (idle, or to make room) hands the call
// to the session's next process, started for it.
func (p *clientProcess) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	t := &p.g.procs
	t.mu.Lock()
	if p.stopped {
		t.mu.Unlock()
		if method == "logging/setLevel" { // its successor is given the session's level when it starts
			return &wire.Response{Result: json.RawMessage(`{}`)}, nil
		}
		up, err := p.sess.upstreamFor(ctx, p.srv)
		if err != nil {
			return nil, err
		}
		if up == Upstream(p) { // cannot be: a stopped process has left its session
			return nil, fmt.Errorf("mcp server %q: this client's process was stopped; call again", p.srv.name)
		}
		return up.Call(ctx, method, params)
	}
	p.busy++
	t.mu.Unlock()
	defer p.release()
	return p.Upstream.Call(ctx, method, params)
}

// release ends one use of the process; the last one starts its idle timer.
func (p *clientProcess) release() {
	t := &p.g.procs
	d := p.g.Limits.idleTimeout()
	t.mu.Lock()
	defer t.mu.Unlock()
	p.busy--
	p.last = time.Now()
	if p.busy > 0 || p.stopped || d == 0 {
		return
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(d, func() { p.expire(d) })
	} else {
		p.timer.Reset(d)
	}
}

// expire stops the process if it is still idle.
func (p *clientProcess) expire(d time.Duration) {
	t := &p.g.procs
	t.mu.Lock()
	if p.stopped || p.busy > 0 || time.Since(p.last) < d {
		t.mu.Unlock()
		return
	}
	p.stopLocked()
	t.mu.Unlock()
	p.g.quota.drop("process_idle")
	p.g.Router.log.Info("stopped an idle per-client process (--per-client-idle-timeout); the client's next call starts a new one", "server", p.srv.name, "client", p.client, "idle", d)
	_ = p.Upstream.Close()
}

// stopLocked marks the process stopped, uncounts it and takes it from its
// session at once, so the session's next call starts a new one; the caller
// closes it after releasing g.procs.mu, which it holds. (A session's mu is
// never held while g.procs.mu is taken.)
func (p *clientProcess) stopLocked() {
	p.stopped = true
	delete(p.g.procs.all, p)
	if p.timer != nil {
		p.timer.Stop()
	}
	s := p.sess
	s.mu.Lock()
	if s.ups[p.srv] == p {
		delete(s.ups, p.srv)
	}
	s.mu.Unlock()
}

// Close ends the process and its count (its session ended, or it was not kept).
func (p *clientProcess) Close() error {
	t := &p.g.procs
	t.mu.Lock()
	delete(t.all, p)
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
	t.mu.Unlock()
	return p.Upstream.Close()
}

// Stateless reports the process's era, as the router asks it of every upstream.
func (p *clientProcess) Stateless() bool { return isStateless(p.Upstream) }
