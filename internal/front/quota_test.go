package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

func initAs(t *testing.T, h http.Handler, client string, headers ...string) string {
	t.Helper()
	body := strings.Replace(initBody, `"name":"t"`, `"name":"`+client+`"`, 1)
	w := do(h, "POST", body, headers...)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize as %q: %d %s", client, w.Code, w.Body)
	}
	return sid
}

func pingStatus(h http.Handler, sid string, headers ...string) (int, string) {
	w := do(h, "POST", pingBody, append([]string{"Mcp-Session-Id", sid}, headers...)...)
	return w.Code, w.Body.String()
}

// tenantCounts is how many sessions each client identity holds.
func (h *Handler) tenantCounts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, t := range h.tenants {
		out[k.client] = len(t.members)
	}
	return out
}

// busy marks a session as having a call in progress until the test ends.
func (h *Handler) busy(t *testing.T, sid string) {
	h.mu.Lock()
	s := h.sessions[sid]
	h.mu.Unlock()
	s.begin(true)
	t.Cleanup(func() { s.end(true) })
}

// At its own limit a client identity loses its own idlest session (which
// then gets a 404 saying why); another identity is untouched. When every
// one of its sessions has a call in progress, it is refused with 503.
func TestMaxSessionsPerTenant(t *testing.T) {
	m := telemetry.NewMetrics()
	h := &Handler{Gateway: newGateway(), MaxSessionsPerTenant: 2, Telemetry: &telemetry.Telemetry{Metrics: m}}
	defer h.Close()
	b1 := initAs(t, h, "b")
	a1 := initAs(t, h, "a")
	a2 := initAs(t, h, "a")
	if code, body := pingStatus(h, a1); code != http.StatusOK { // a2 is now a's idlest
		t.Fatalf("ping a1: %d %s", code, body)
	}
	a3 := initAs(t, h, "a")
	code, body := pingStatus(h, a2)
	if code != http.StatusNotFound || !strings.Contains(body, `the client \"a\" (its clientInfo.name) reached its limit of 2 sessions (--max-sessions-per-tenant)`) {
		t.Errorf("ping the evicted a2: %d %s; want 404 saying why", code, body)
	}
	for _, sid := range []string{a1, a3, b1} {
		if code, body := pingStatus(h, sid); code != http.StatusOK {
			t.Errorf("ping %s: %d %s", sid[:8], code, body)
		}
	}
	if got := h.tenantCounts(); got["a"] != 2 || got["b"] != 1 {
		t.Errorf("sessions by tenant %v, want a:2 b:1", got)
	}

	h.busy(t, a1)
	h.busy(t, a3)
	w := do(h, "POST", strings.Replace(initBody, `"name":"t"`, `"name":"a"`, 1))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "holds its limit of 2 sessions (--max-sessions-per-tenant) and each has a call in progress") {
		t.Errorf("initialize with every session of a busy: %d %s; want 503", w.Code, w.Body)
	}
	initAs(t, h, "b") // b under its limit is not refused

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`mcp_gateway_sessions_evicted_total{limit="per_tenant"} 1`, `mcp_gateway_sessions_refused_total{limit="per_tenant"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// At the total limit the tenant holding the most loses its idlest session
// (even one with a call in progress), and a tenant holding no fewer than
// every other loses its own: no tenant is refused while another holds more.
func TestMaxSessionsFairShare(t *testing.T) {
	h := &Handler{Gateway: newGateway(), MaxSessions: 3}
	defer h.Close()
	a := []string{initAs(t, h, "a"), initAs(t, h, "a"), initAs(t, h, "a")}
	for _, sid := range a {
		h.busy(t, sid)
	}
	b1 := initAs(t, h, "b") // takes from a (3 > 0), busy as a's sessions are
	b2 := initAs(t, h, "b") // a 2 > b 1
	if got := h.tenantCounts(); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("sessions by tenant %v, want a:1 b:2", got)
	}
	if code, body := pingStatus(h, b1); code != http.StatusOK { // b2 is b's idlest
		t.Fatalf("ping b1: %d %s", code, body)
	}
	b3 := initAs(t, h, "b") // b holds the most: its own idlest goes
	if code, _ := pingStatus(h, b2); code != http.StatusNotFound {
		t.Errorf("b's idlest session after b's third initialize: %d, want 404", code)
	}
	if got := h.tenantCounts(); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("sessions by tenant %v, want a:1 b:2", got)
	}
	initAs(t, h, "c") // c holds none: b (the most) pays
	if got := h.tenantCounts(); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
		t.Fatalf("sessions by tenant %v, want one each", got)
	}
	// Every tenant holds one; a, whose only session is busy, may not
	// take its own: refused.
	w := do(h, "POST", strings.Replace(initBody, `"name":"t"`, `"name":"a"`, 1))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "limit of 3 sessions (--max-sessions)") {
		t.Errorf("initialize of a, whose only session is busy, with all tenants even: %d %s; want 503", w.Code, w.Body)
	}
	_ = b3
}

// In host mode the tenant is the sandbox (the token's gateway), whatever
// clientInfo.name its clients send.
func TestMaxSessionsPerSandbox(t *testing.T) {
	ga, gb := newGateway(), newGateway()
	h := &Handler{MaxSessionsPerTenant: 1, Tenants: func(token string) *gateway.Gateway {
		return map[string]*gateway.Gateway{"ta": ga, "tb": gb}[token]
	}}
	defer h.Close()
	auth := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	a1 := initAs(t, h, "x", auth("ta")...)
	b1 := initAs(t, h, "x", auth("tb")...)
	a2 := initAs(t, h, "y", auth("ta")...) // another name, same sandbox
	if code, body := pingStatus(h, a1, auth("ta")...); code != http.StatusNotFound || !strings.Contains(body, "this sandbox reached its limit of 1 sessions") {
		t.Errorf("sandbox a's first session: %d %s, want 404", code, body)
	}
	for _, c := range []struct{ sid, tok string }{{a2, "ta"}, {b1, "tb"}} {
		if code, body := pingStatus(h, c.sid, auth(c.tok)...); code != http.StatusOK {
			t.Errorf("ping: %d %s", code, body)
		}
	}
}

// failWriter is a connection that is gone: every write fails.
type failWriter struct{ header http.Header }

func (w *failWriter) Header() http.Header         { return w.header }
func (w *failWriter) WriteHeader(int)             {}
func (w *failWriter) Flush()                      {}
func (w *failWriter) Write(p []byte) (int, error) { return 0, errors.New("broken pipe") }

// abandoned opens a call's SSE stream in session sid whose client went away.
func abandoned(t *testing.T, h *Handler, sid string, id int) *stream {
	t.Helper()
	h.mu.Lock()
	sess := h.sessions[sid]
	h.mu.Unlock()
	st := &stream{h: h, w: &failWriter{header: http.Header{}}, ctx: context.Background(), sess: sess, reqID: json.RawMessage(fmt.Sprint(id))}
	if err := st.Send(logMsg(0, 10)); err != nil {
		t.Fatal(err)
	}
	<-st.done // the pump saw the connection fail
	return st
}

// logMsg is a log notification of about size bytes.
func logMsg(i, size int) []byte {
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%d %s"}}`, i, strings.Repeat("x", size)))
}

// Abandoned streams hold no more than their budgets; a resume asking for a
// dropped event gets 409 naming the limit; resuming from the oldest kept
// event gets the rest, answer last; ending the session frees its bytes.
func TestReplayBudgets(t *testing.T) {
	m := telemetry.NewMetrics()
	h := &Handler{Gateway: newGateway(), ReplayBytesPerStream: 20 << 10, ReplayBytesPerSession: 50 << 10, ReplayBytes: 120 << 10,
		Telemetry: &telemetry.Telemetry{Metrics: m}}
	defer h.Close()

	// One stream beyond its own budget.
	sid := initAs(t, h, "a")
	st := abandoned(t, h, sid, 5)
	for i := 1; i <= 100; i++ {
		if err := st.Send(logMsg(i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	st.reply(json.RawMessage(`5`), gateway.Reply{Result: json.RawMessage(`{"content":[]}`)})
	if held := h.ReplayBytesHeld(); held > 20<<10 || held < 10<<10 {
		t.Errorf("replay bytes held %d, want at most the stream's budget %d and most of it", held, 20<<10)
	}
	w := do(h, "GET", "", "Mcp-Session-Id", sid, "Last-Event-ID", "p1-0")
	var msg struct {
		Error struct {
			Code    int
			Message string
			Data    struct{ OldestKeptEventID string }
		}
	}
	_ = json.Unmarshal(w.Body.Bytes(), &msg)
	if w.Code != http.StatusConflict || msg.Error.Code != -32600 ||
		!strings.Contains(msg.Error.Message, `Last-Event-ID "p1-0" cannot be resumed: events after it were dropped by the replay budget of 20480 bytes per stream (--replay-bytes-per-stream)`) {
		t.Fatalf("resume past dropped events: %d %s; want 409 naming the limit", w.Code, w.Body)
	}
	streamID, first, _ := parseEventID(msg.Error.Data.OldestKeptEventID)
	w = do(h, "GET", "", "Mcp-Session-Id", sid, "Last-Event-ID", fmt.Sprintf("%s-%d", streamID, first-1))
	ids, data := parseSSE(t, w.Body.String())
	if w.Code != http.StatusOK || len(data) < 10 || ids[0] != msg.Error.Data.OldestKeptEventID || data[len(data)-1] != `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}` {
		t.Fatalf("resume from the oldest kept event: %d, %d events from %v; want the rest, the answer last", w.Code, len(data), ids[:min(1, len(ids))])
	}
	if held := h.ReplayBytesHeld(); held != 0 {
		t.Errorf("replay bytes held after the stream was delivered: %d, want 0", held)
	}

	// Many streams of one session, then of a second tenant: the session's
	// and the total budget hold, and the tenant holding the most pays.
	for i := range 5 {
		st := abandoned(t, h, sid, 10+i)
		for j := range 30 {
			_ = st.Send(logMsg(j, 1000))
		}
	}
	if got := h.ReplayBytesHeld(); got > 50<<10 {
		t.Errorf("one session holds %d replay bytes, want at most its budget %d", got, 50<<10)
	}
	var others []string
	for i := range 4 {
		other := initAs(t, h, "b")
		others = append(others, other)
		for k := range 3 {
			st := abandoned(t, h, other, 100+10*i+k)
			for j := range 15 {
				_ = st.Send(logMsg(j, 1000))
			}
		}
	}
	if got := h.ReplayBytesHeld(); got > 120<<10 {
		t.Errorf("the front holds %d replay bytes, want at most its budget %d", got, 120<<10)
	}
	h.mu.Lock()
	a, b := h.sessions[sid].tenant.bytes.Load(), h.sessions[others[0]].tenant.bytes.Load()
	h.mu.Unlock()
	if b > 120<<10 || a > 50<<10 || a+b != h.ReplayBytesHeld() {
		t.Errorf("tenant a holds %d, b %d, in all %d", a, b, h.ReplayBytesHeld())
	}
	for _, s := range append(others, sid) {
		if w := do(h, "DELETE", "", "Mcp-Session-Id", s); w.Code != http.StatusOK {
			t.Fatal(w.Code)
		}
	}
	if held := h.ReplayBytesHeld(); held != 0 {
		t.Errorf("replay bytes held after every session ended: %d, want 0", held)
	}

	// Many sessions at once, each with streams its client abandoned: at no
	// moment does the front hold more than its budget.
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sessions []string
	for i := range 4 {
		sid := initAs(t, h, fmt.Sprint("c", i%2))
		sessions = append(sessions, sid)
		streams := []*stream{abandoned(t, h, sid, 1000+2*i), abandoned(t, h, sid, 1001+2*i)}
		wg.Go(func() {
			for j := range 200 {
				_ = streams[j%2].Send(logMsg(j, 500+j*7%1500))
			}
		})
	}
	var most int64
	go func() {
		defer close(done)
		for {
			held := h.ReplayBytesHeld()
			mu.Lock()
			most = max(most, held)
			mu.Unlock()
			runtime.Gosched()
			if h.mu.TryLock() {
				all := 0
				for _, s := range h.sessions {
					if b := s.bytes.Load(); b > 50<<10 {
						t.Errorf("a session holds %d replay bytes, beyond its budget", b)
					}
					all++
				}
				h.mu.Unlock()
				if all == 0 {
					return
				}
			}
		}
	}()
	wg.Wait()
	for _, sid := range sessions {
		do(h, "DELETE", "", "Mcp-Session-Id", sid)
	}
	<-done
	if most > 120<<10 || most < 60<<10 {
		t.Errorf("with four sessions filling their streams at once the front held up to %d replay bytes; want at most its budget %d, and most of it", most, 120<<10)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{"mcp_gateway_replay_bytes 0\n", `mcp_gateway_replay_events_dropped_total{limit="stream"}`,
		`mcp_gateway_replay_events_dropped_total{limit="session"}`, `mcp_gateway_replay_events_dropped_total{limit="total"}`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s:\n%s", want, rec.Body)
		}
	}
}
