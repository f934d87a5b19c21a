package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// flakyStart fails to start until told otherwise.
type flakyStart struct {
	fakeUpstream
	down     atomic.Bool
	attempts atomic.Int32
}

func (f *flakyStart) Start(ctx context.Context) error {
	f.attempts.Add(1)
	if f.down.Load() {
		return errors.New(`mcp server "late": not yet`)
	}
	return f.fakeUpstream.Start(ctx)
}

// TestStartAllRetriesAFailedServer: a server that fails at start does not
// stop the others; it is retried in the background, and when it comes up
// its tools appear, clients hear list_changed and /health says ready.
func TestStartAllRetriesAFailedServer(t *testing.T) {
	late := &flakyStart{fakeUpstream: fakeUpstream{name: "late", tools: []string{tool("pid"), tool("sum")}}}
	late.down.Store(true)
	r := NewRouter(RouterOptions{RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	g := New(r, Info{})
	r.Add(&fakeUpstream{name: "early", tools: []string{tool("pid")}})
	r.Add(late)
	r.StartAll(context.Background())
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	s := newSession(t, g)

	st := r.Status()
	if st["early"].State != "ready" || st["early"].Tools != 1 || st["late"].State != "failed" || !strings.Contains(st["late"].LastError, "not yet") {
		t.Fatalf("status after start: %+v", st)
	}
	for deadline := time.Now().Add(10 * time.Second); late.attempts.Load() < 3; time.Sleep(time.Millisecond) { // retried, backing off
		if time.Now().After(deadline) {
			t.Fatalf("%d start attempts in 10 s: no retries", late.attempts.Load())
		}
	}
	late.down.Store(false)
	select {
	case m := <-s.Outbox():
		if string(m) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
			t.Errorf("notification %s", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after the server came up")
	}
	// It came up after start: a later server, so "pid" stays with "early".
	want := map[string]string{"pid": "early/pid", "late_pid": "late/pid", "sum": "late/sum"}
	if got := exposedTools(r, kindTools); !maps.Equal(got, want) {
		t.Errorf("exposed %v, want %v", got, want)
	}
	if st := r.Status()["late"]; st.State != "ready" || st.Tools != 2 {
		t.Errorf("status of the recovered server: %+v", st)
	}
}

// TestSharedServerServesBothEras: a shared server has one upstream for the
// clients of both eras. A 2026-07-28 client's call to a session-era server
// reaches that upstream with the era's _meta removed (its progress token
// kept), a session-era client's as it was sent; a tool the upstream adds is
// listed to both and callable by both on that same upstream.
func TestSharedServerServesBothEras(t *testing.T) {
	up := &scripted{fakeUpstream: fakeUpstream{name: "d", tools: []string{tool("x")}}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.AddShared(up, hooksOf(g, "d"))
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`
	s := newSession(t, g)
	if r := s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"x"}`), nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	if r := g.HandleStateless(context.Background(), msg(`2`, "tools/call", `{"name":"x",`+meta+`}`), nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	got := up.requests()
	if len(got) != 2 || got[0] != `tools/call {"name":"x"}` {
		t.Fatalf("the upstream got %q, want the session-era call and then the 2026-07-28 one", got)
	}
	p := json.RawMessage(strings.TrimPrefix(got[1], "tools/call "))
	if m := wire.Get(p, "_meta"); wire.Get(m, MetaProtocolVersion) != nil || wire.Get(m, MetaClientInfo) != nil || wire.Get(m, "progressToken") == nil {
		t.Errorf("the session-era upstream got %s: want _meta without the era's members, with the progress token", got[1])
	}

	// The server adds a tool and says so: both eras list it, and a
	// 2026-07-28 client's call of it goes to the same upstream.
	up.tools = append(up.tools, tool("added")) // no listing runs now; the one the notification starts follows
	hooksOf(g, "d").OnNotification("notifications/tools/list_changed", nil)
	select {
	case <-s.Outbox():
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after the server's tools changed")
	}
	if got := viewNames(r, kindTools); !slices.Equal(got, []string{"x", "added"}) {
		t.Errorf("merged tools %v, want x and added", got)
	}
	if r := g.HandleStateless(context.Background(), msg(`3`, "tools/call", `{"name":"added",`+meta+`}`), nil); r.Error != nil {
		t.Fatalf("the 2026-07-28 call of the added tool: %s", r.Error)
	}
	if got := up.requests(); len(got) != 3 || !strings.HasPrefix(got[2], `tools/call {"name":"added"`) {
		t.Errorf("the upstream got %q, want the added tool's call last", got)
	}
}

// blockedStart starts only when its context ends, failing with its error,
// as a server that has not answered initialize yet does.
type blockedStart struct {
	fakeUpstream
	started chan struct{}
}

func (b *blockedStart) Start(ctx context.Context) error {
	close(b.started)
	<-ctx.Done()
	return fmt.Errorf(`mcp server "slow" did not answer initialize: %w`, ctx.Err())
}

// TestStartAllCalledOffBlamesNoServer: a start cancelled (Ctrl-C before
// the gateway is ready) logs no warning about the servers it interrupted.
func TestStartAllCalledOffBlamesNoServer(t *testing.T) {
	var logs strings.Builder
	r := NewRouter(RouterOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond})
	slow := &blockedStart{fakeUpstream: fakeUpstream{name: "slow"}, started: make(chan struct{})}
	r.Add(slow)
	t.Cleanup(func() { _ = r.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-slow.started; cancel() }()
	r.StartAll(ctx)
	if strings.Contains(logs.String(), "failed to start") {
		t.Errorf("a cancelled start blamed its server:\n%s", logs.String())
	}
}
