package gateway

import (
	"context"
	"encoding/json"
	"errors"
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

// TestDualEraCompanion: a 2026-07-28 client's call goes to the server's
// companion process of that era, started on the first such call; a
// session-era client's to the primary; what either lists is merged.
func TestDualEraCompanion(t *testing.T) {
	primary := &scripted{fakeUpstream: fakeUpstream{name: "d", tools: []string{tool("both")}}}
	companion := &statelessScripted{scripted{fakeUpstream: fakeUpstream{name: "d", tools: []string{tool("both"), tool("stateless_only")}}}}
	var made atomic.Int32
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.AddDualEra(primary, Hooks{}, func() Upstream { made.Add(1); return companion })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	if made.Load() != 0 {
		t.Fatal("the companion started before any 2026-07-28 call")
	}

	s := newSession(t, g)
	if r := s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"both"}`), nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	if r := g.HandleStateless(context.Background(), msg(`2`, "tools/call", `{"name":"both",`+meta+`}`), nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	if got := primary.requests(); len(got) != 1 || !strings.HasPrefix(got[0], `tools/call {"name":"both"}`) {
		t.Errorf("the primary got %v, want the session-era call alone", got)
	}
	if got := companion.requests(); len(got) != 1 || !strings.Contains(got[0], `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
		t.Errorf("the companion got %v, want the 2026-07-28 call with its _meta", got)
	}
	if made.Load() != 1 {
		t.Errorf("the companion was made %d times, want once", made.Load())
	}

	// The companion says its tools changed: its listing joins the view.
	g.CompanionHooks(hooksOf(g, "d")).OnNotification("notifications/tools/list_changed", nil)
	select {
	case <-s.Outbox():
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after the companion's tools changed")
	}
	if got := viewNames(r, kindTools); !slices.Equal(got, []string{"both", "stateless_only"}) {
		t.Errorf("merged tools %v, want the primary's and the companion's, once each", got)
	}
}

// sessionOnly fails to start, as a server of the session era only does.
type sessionOnly struct{ fakeUpstream }

func (*sessionOnly) Start(context.Context) error { return wire.ErrNotStateless }

// TestSessionEraOnlyServerIsBridged: when the companion turns out not to
// speak 2026-07-28, stateless calls go to the primary with the era's _meta
// removed, and no companion is tried again.
func TestSessionEraOnlyServerIsBridged(t *testing.T) {
	primary := &scripted{fakeUpstream: fakeUpstream{name: "d", tools: []string{tool("x")}}}
	var made atomic.Int32
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.AddDualEra(primary, Hooks{}, func() Upstream { made.Add(1); return &sessionOnly{fakeUpstream{name: "d"}} })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p"}`
	for i := range 2 {
		if r := g.HandleStateless(context.Background(), msg(`1`, "tools/call", `{"name":"x",`+meta+`}`), nil); r.Error != nil {
			t.Fatalf("call %d: %s", i, r.Error)
		}
	}
	if made.Load() != 1 {
		t.Errorf("a companion was tried %d times, want once", made.Load())
	}
	for _, got := range primary.requests() {
		p := json.RawMessage(strings.TrimPrefix(got, "tools/call "))
		if m := wire.Get(p, "_meta"); wire.Get(m, MetaProtocolVersion) != nil || wire.Get(m, "progressToken") == nil {
			t.Errorf("the session-era primary got %s: want _meta without the era's members, with the progress token", got)
		}
	}
}
