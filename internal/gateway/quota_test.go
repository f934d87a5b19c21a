package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// A client at its own limit of input waits is refused, naming the flag; at
// the gateway's limit the oldest wait of the client holding the most is
// dropped (cancelled), never that of a client below it.
func TestAdmitWait(t *testing.T) {
	g := New(NewRouter(RouterOptions{}), Info{})
	g.Limits = Limits{MaxInputWaitsPerClient: 2, MaxInputWaits: 3}
	st := g.multiRoundTrip()
	var cancelled []string
	add := func(client string) *wire.Error {
		w := &inputWait{client: client}
		w.cancel = func() { cancelled = append(cancelled, w.id) }
		st.mu.Lock()
		dropped, werr := g.admitWait(st, w)
		if werr == nil {
			st.seq++
			w.id, w.seq = client+"-"+string(rune('0'+st.seq)), st.seq
			w.expires = time.AfterFunc(time.Hour, func() {})
			st.waits[w.id] = w
		}
		st.mu.Unlock()
		if dropped != nil {
			dropped.cancel()
		}
		return werr
	}
	for _, c := range []string{"flood", "flood"} {
		if werr := add(c); werr != nil {
			t.Fatal(werr)
		}
	}
	werr := add("flood")
	if werr == nil || werr.Code != wire.CodeInvalidRequest || !strings.Contains(werr.Message, `client "flood" already has 2 unanswered input requests`) || !strings.Contains(werr.Message, "--max-input-waits-per-client 2") {
		t.Fatalf("flood's third wait: %v, want refused naming the flag", werr)
	}
	if werr := add("other"); werr != nil {
		t.Fatal(werr)
	}
	// Full (3): the victim's wait drops flood's oldest.
	if werr := add("victim"); werr != nil {
		t.Fatalf("the victim's wait at the gateway's limit: %v", werr)
	}
	if len(cancelled) != 1 || cancelled[0] != "flood-1" {
		t.Errorf("dropped %v, want flood's oldest (flood-1)", cancelled)
	}
	if st.waits["other-3"] == nil || st.waits["flood-2"] == nil || len(st.waits) != 3 {
		t.Errorf("waits kept: %v", st.waits)
	}
	q := g.QuotaStatus()
	if q.InputWaits != 3 || q.Refused[LimitInputWaitsPerClient] != 1 || q.Dropped["input_wait"] != 1 {
		t.Errorf("QuotaStatus %+v", q)
	}
}

// procUpstream is a per-client process stand-in that counts its closes.
type procUpstream struct {
	*fakeUpstream
	closed atomic.Int32
}

func (p *procUpstream) IsProcess() bool { return true }
func (p *procUpstream) Close() error    { p.closed.Add(1); return nil }

// Per-client processes: at the per-server limit a new session stops the
// longest idle process of its own client, never another client's that
// holds no more than it; with none idle it is refused naming the flag; an
// idle process stops after the idle timeout and the next call starts one.
func TestPerClientProcessLimits(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	g.Limits = Limits{MaxPerClientProcesses: 2, PerClientIdleTimeout: -1}
	var made []*procUpstream
	r.AddPerClient(&fakeUpstream{name: "pc", tools: []string{tool("work")}}, Hooks{}, func(json.RawMessage, Hooks) Upstream {
		p := &procUpstream{fakeUpstream: &fakeUpstream{name: "pc", tools: []string{tool("work")}}}
		made = append(made, p)
		return p
	})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	session := func(client string) *Session {
		s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + client + `","version":"1"}}`))
		if werr != nil {
			t.Fatal(werr)
		}
		return s
	}
	call := func(s *Session) Reply {
		return s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"work"}`)}, noStream{})
	}
	victim, a := session("victim"), session("flood")
	for _, s := range []*Session{victim, a} {
		if rep := call(s); rep.Error != nil {
			t.Fatalf("call: %s", rep.Error)
		}
	}
	b := session("flood")
	if rep := call(b); rep.Error != nil {
		t.Fatalf("flood's second session: %s", rep.Error)
	}
	if made[1].closed.Load() != 1 || made[0].closed.Load() != 0 {
		t.Errorf("closed: victim's %d, flood's first %d; want flood's own idle one stopped, the victim's kept", made[0].closed.Load(), made[1].closed.Load())
	}
	if q := g.QuotaStatus(); q.PerClientProcesses["pc"] != 2 || q.Dropped["process_evicted"] != 1 {
		t.Errorf("QuotaStatus %+v", q)
	}
	// Both processes busy: a third session is refused.
	g.procs.mu.Lock()
	for p := range g.procs.all {
		p.busy++
	}
	g.procs.mu.Unlock()
	rep := call(session("flood"))
	if rep.Error == nil || !strings.Contains(string(rep.Error), `mcp server \"pc\" runs a process per client session and 2 of them run already`) || !strings.Contains(string(rep.Error), "--max-per-client-processes 2") {
		t.Errorf("a session with every process busy: %s %s", rep.Result, rep.Error)
	}
	g.procs.mu.Lock()
	for p := range g.procs.all {
		p.busy--
	}
	g.procs.mu.Unlock()

	// The idle timeout stops a process; its session's next call starts another.
	g.Limits.PerClientIdleTimeout = time.Millisecond
	if rep := call(victim); rep.Error != nil {
		t.Fatal(rep.Error)
	}
	deadline := time.Now().Add(10 * time.Second)
	for made[0].closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if made[0].closed.Load() != 1 {
		t.Fatal("the idle process did not stop")
	}
	if rep := call(victim); rep.Error != nil {
		t.Fatalf("the call after an idle stop: %s", rep.Error)
	}
	if n := len(made); n != 5 {
		t.Errorf("%d processes made, want 5 (a new one after the idle stop)", n)
	}
}

// A session-era call waiting in the guard is cancelled when its client
// cancels it, its session ends, or its request's connection closes.
func TestWhileCallerWaits(t *testing.T) {
	g := New(NewRouter(RouterOptions{}), Info{})
	for _, how := range []string{"cancelled", "session", "connection"} {
		s := newSession(t, g)
		connCtx, closeConn := context.WithCancel(context.Background())
		ctx, stop := s.whileCallerWaits(WithCallerGone(context.Background(), connCtx), json.RawMessage(`5`))
		switch how {
		case "cancelled":
			s.HandleNotification(context.Background(), &wire.Message{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":5}`)})
		case "session":
			s.Close()
		case "connection":
			closeConn()
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the waiting call's context did not end", how)
		}
		stop()
		closeConn()
		s.mu.Lock()
		left := len(s.calls)
		s.mu.Unlock()
		if left != 0 {
			t.Errorf("%s: %d calls left tracked", how, left)
		}
	}
}

// A session holding a process stopped since it took it (the window between
// finding it and calling it) has its call run on a new process, not failed.
func TestStoppedProcessHandsCallOn(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	g.Limits = Limits{PerClientIdleTimeout: -1}
	var made []*procUpstream
	r.AddPerClient(&fakeUpstream{name: "pc", tools: []string{tool("work")}}, Hooks{}, func(json.RawMessage, Hooks) Upstream {
		p := &procUpstream{fakeUpstream: &fakeUpstream{name: "pc", tools: []string{tool("work")}}}
		made = append(made, p)
		return p
	})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	s := newSession(t, g)
	srv := r.server("pc")
	up, err := s.upstreamFor(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	proc := up.(*clientProcess)
	g.procs.mu.Lock()
	proc.stopLocked()
	g.procs.mu.Unlock()
	_ = proc.Upstream.Close()
	resp, err := up.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"work"}`))
	if err != nil || resp.Error != nil {
		t.Fatalf("a call on a stopped process: %v %v", err, resp)
	}
	if len(made) != 2 || len(made[1].calls) != 1 || made[0].closed.Load() != 1 {
		t.Errorf("made %d processes; want the call on the second, the first closed", len(made))
	}
	if q := g.QuotaStatus(); q.PerClientProcesses["pc"] != 1 {
		t.Errorf("QuotaStatus %+v, want one process counted", q)
	}
}

// WithCallerGone's context is not cancelled with its parent, has no cause
// of its parent's, and keeps the parent's values.
func TestWithCallerGoneIsDetached(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	ctx := WithCallerGone(parent, parent)
	cancel(errors.New("the connection closed"))
	if ctx.Err() != nil || ctx.Done() != nil {
		t.Errorf("Err = %v, Done = %v after the parent's cancel: want nil, nil", ctx.Err(), ctx.Done())
	}
	if c := context.Cause(ctx); c != nil {
		t.Errorf("Cause = %v, want nil (the parent's cause must not show through)", c)
	}
	if v := ctx.Value(key{}); v != "v" {
		t.Errorf("Value = %v, want the parent's %q", v, "v")
	}
	child, stop := context.WithTimeout(ctx, time.Hour)
	defer stop()
	if child.Err() != nil {
		t.Errorf("a child's Err = %v, want nil", child.Err())
	}
}
