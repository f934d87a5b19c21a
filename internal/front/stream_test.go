package front

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// stuckWriter is the ResponseWriter of a client that never reads: a write
// blocks until its write deadline (os.ErrDeadlineExceeded) or, without
// one, until release is closed.
type stuckWriter struct {
	header   http.Header
	release  chan struct{}
	deadline bool // SetWriteDeadline is supported

	mu     sync.Mutex
	until  time.Time
	writes int
}

func newStuckWriter(deadline bool) *stuckWriter {
	return &stuckWriter{header: http.Header{}, release: make(chan struct{}), deadline: deadline}
}

func (w *stuckWriter) Header() http.Header { return w.header }
func (w *stuckWriter) WriteHeader(int)     {}
func (w *stuckWriter) Flush()              {}

func (w *stuckWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	w.writes++
	until := w.until
	w.mu.Unlock()
	var timeout <-chan time.Time
	if !until.IsZero() {
		timeout = time.After(time.Until(until))
	}
	select {
	case <-timeout:
		return 0, os.ErrDeadlineExceeded
	case <-w.release:
		return len(p), nil
	}
}

func (w *stuckWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.until = t
	w.mu.Unlock()
	return nil
}

func (w *stuckWriter) rw() http.ResponseWriter {
	if w.deadline {
		return w
	}
	return struct {
		http.ResponseWriter
		http.Flusher
	}{w, w} // SetWriteDeadline hidden
}

// logBuffer collects a Handler's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testHandler(timeout time.Duration) (*Handler, *logBuffer) {
	logs := &logBuffer{}
	return &Handler{SlowClientTimeout: timeout, Logger: slog.New(slog.NewTextHandler(logs, nil))}, logs
}

// within fails the test when f has not returned after a minute: f must not
// block (the bound only turns a hang into a failure).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s blocked", what)
	}
}

func progress(i int) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":` + string(rune('0'+i%10)) + `}}`)
}

// A client that never reads: Send keeps returning at once, the stream's
// write times out, the stream is closed with a log line naming the reason,
// the call is cancelled, and the answer does not wait for the client.
func TestStreamStuckWriteClosesOnlyThatStream(t *testing.T) {
	h, logs := testHandler(50 * time.Millisecond)
	w := newStuckWriter(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &stream{h: h, w: w, ctx: context.Background(), cancel: cancel, reqID: json.RawMessage(`7`)}
	within(t, "Send to a client that does not read", func() {
		for i := range 2 * streamBuffer {
			_ = st.Send(progress(i))
		}
	})
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the call was not cancelled when its stream was closed")
	}
	within(t, "the answer after the stream was closed", func() { st.reply(json.RawMessage(`7`), gateway.Reply{Result: json.RawMessage(`{}`)}) })
	log := logs.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "slow client") || !strings.Contains(log, "request=7") ||
		!strings.Contains(log, "a write made no progress within 50ms") {
		t.Errorf("log = %q, want a warning naming the request and the write that made no progress", log)
	}
	if err := st.Send(progress(0)); !errors.Is(err, errStreamClosed) {
		t.Errorf("Send after the answer: %v, want errStreamClosed", err)
	}
}

// A connection that takes writes but never finishes one, without write
// deadlines: its queue fills, Send refuses more without blocking, and once
// the queue has been full for the timeout the stream is given up.
func TestStreamFullQueueClosesStream(t *testing.T) {
	h, logs := testHandler(50 * time.Millisecond)
	w := newStuckWriter(false)
	defer close(w.release)
	st := &stream{h: h, w: w.rw(), ctx: context.Background(), reqID: json.RawMessage(`"a"`)}
	var full int
	within(t, "Send to a full queue", func() {
		for i := range streamBuffer + 10 {
			if errors.Is(st.Send(progress(i)), errStreamFull) {
				full++
			}
		}
	})
	if full == 0 {
		t.Fatalf("no Send saw a full queue")
	}
	// Poll: the queue must stay full for the timeout before the stream goes.
	for !strings.Contains(logs.String(), "stayed full") {
		time.Sleep(20 * time.Millisecond)
		if err := st.Send(progress(1)); err != nil && !errors.Is(err, errStreamFull) {
			t.Fatalf("Send: %v", err)
		}
	}
	if log := logs.String(); !strings.Contains(log, `request=`) {
		t.Errorf("log = %q, want the request named", log)
	}
}

// Interim messages come as events in order, the answer as the last one;
// without any, the answer is plain JSON.
func TestStreamOrderAndPlainJSON(t *testing.T) {
	h, _ := testHandler(0)
	t.Run("plain", func(t *testing.T) {
		w := httptest.NewRecorder()
		st := &stream{h: h, w: w, ctx: context.Background()}
		st.reply(json.RawMessage(`1`), gateway.Reply{Result: json.RawMessage(`{"ok":true}`)})
		if ct := w.Header().Get("Content-Type"); ct != "application/json" || w.Body.String() != `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}` {
			t.Errorf("plain answer: %s %q", ct, w.Body)
		}
	})
	t.Run("events", func(t *testing.T) {
		w := httptest.NewRecorder()
		st := &stream{h: h, w: w, ctx: context.Background()}
		for i := range 5 {
			if err := st.Send(progress(i)); err != nil {
				t.Fatal(err)
			}
		}
		st.reply(json.RawMessage(`1`), gateway.Reply{Result: json.RawMessage(`{}`)})
		var want strings.Builder
		for i := range 5 {
			want.WriteString("event: message\ndata: " + string(progress(i)) + "\n\n")
		}
		want.WriteString("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" || w.Body.String() != want.String() {
			t.Errorf("stream: %s\n%s\nwant\n%s", ct, w.Body, want.String())
		}
	})
}

func TestParseEventID(t *testing.T) {
	tests := []struct {
		id     string
		stream string
		seq    uint64
		ok     bool
	}{
		{"p1-0", "p1", 0, true},
		{"g12-345", "g12", 345, true},
		{"p1", "", 0, false},
		{"x1-2", "", 0, false},
		{"p-2", "", 0, false},
		{"pa-2", "", 0, false},
		{"p1-", "", 0, false},
		{"p1--2", "", 0, false},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		stream, seq, ok := parseEventID(tt.id)
		if stream != tt.stream || seq != tt.seq || ok != tt.ok {
			t.Errorf("parseEventID(%q) = %q, %d, %v; want %q, %d, %v", tt.id, stream, seq, ok, tt.stream, tt.seq, tt.ok)
		}
	}
}

// cutWriter is a connection that takes its first write and then breaks,
// as when a client's network drops mid-stream.
type cutWriter struct {
	header http.Header
	mu     sync.Mutex
	got    bytes.Buffer // what the client received
	writes int
}

func (w *cutWriter) Header() http.Header { return w.header }
func (w *cutWriter) WriteHeader(int)     {}
func (w *cutWriter) Flush()              {}
func (w *cutWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.writes > 1 {
		return 0, errors.New("connection reset by peer")
	}
	return w.got.Write(p)
}

// A session-era call whose connection breaks goes on; a GET with the last
// event id the client received gets the rest of its events, the answer
// last, and then the stream is over: resuming it again is refused.
func TestResumeCutPOSTStream(t *testing.T) {
	h := &Handler{Gateway: newGateway()}
	defer h.Close()
	sid := initSession(t, h)
	h.mu.Lock()
	sess := h.sessions[sid]
	h.mu.Unlock()

	cw := &cutWriter{header: http.Header{}}
	st := &stream{h: h, w: cw, ctx: context.Background(), sess: sess, reqID: json.RawMessage(`5`)}
	var sent []string
	send := func() {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d}}`, len(sent))
		if err := st.Send([]byte(msg)); err != nil {
			t.Fatalf("Send after the connection broke: %v", err)
		}
		sent = append(sent, msg)
	}
	send()
	for done := false; !done; {
		send()
		select {
		case <-st.done: // the pump saw the connection break
			done = true
		case <-time.After(5 * time.Millisecond):
		}
	}
	send()
	st.reply(json.RawMessage(`5`), gateway.Reply{Result: json.RawMessage(`{"content":[]}`)})
	want := append(sent, `{"jsonrpc":"2.0","id":5,"result":{"content":[]}}`)

	cw.mu.Lock()
	ids, data := parseSSE(t, cw.got.String())
	cw.mu.Unlock()
	if len(ids) == 0 || data[0] != "" || !strings.HasPrefix(cw.got.String(), "id: p1-0\nretry: 1000\ndata: \n\n") {
		t.Fatalf("the stream did not start with its priming event: %q", cw.got.String())
	}
	last := ids[len(ids)-1]

	resume := func() *httptest.ResponseRecorder {
		return do(h, "GET", "", "Mcp-Session-Id", sid, "Last-Event-ID", last)
	}
	var w *httptest.ResponseRecorder
	within(t, "the resumed stream", func() { w = resume() })
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET with Last-Event-ID %s: %d %s", last, w.Code, w.Body)
	}
	rids, rdata := parseSSE(t, w.Body.String())
	all := append(data[1:], rdata...)
	if strings.Join(all, "\n") != strings.Join(want, "\n") {
		t.Errorf("received before the cut %v and after resuming %v; want every message once, in order, the answer last:\n%v", data[1:], rdata, want)
	}
	allIDs := append(ids, rids...)
	for i, id := range allIDs {
		if id != fmt.Sprintf("p1-%d", i) {
			t.Errorf("event %d has id %q, want p1-%d", i, id, i)
		}
	}
	if w := resume(); w.Code != http.StatusBadRequest {
		t.Errorf("resuming a delivered stream again: %d, want 400", w.Code)
	}
}

// parseSSE returns the ids and data of the events in an SSE body.
func parseSSE(t *testing.T, body string) (ids, data []string) {
	t.Helper()
	for _, ev := range strings.Split(body, "\n\n") {
		if ev == "" {
			continue
		}
		var id, d string
		for _, line := range strings.Split(ev, "\n") {
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				d = v
			}
		}
		ids, data = append(ids, id), append(data, d)
	}
	return ids, data
}

// A session-era response still unanswered after PrimeAfter becomes a
// resumable stream opening with its priming event; the answer is its last
// event. One answered first stays plain JSON.
func TestStreamPrime(t *testing.T) {
	h := &Handler{Gateway: newGateway()}
	defer h.Close()
	sid := initSession(t, h)
	h.mu.Lock()
	sess := h.sessions[sid]
	h.mu.Unlock()

	w := httptest.NewRecorder()
	st := &stream{h: h, w: w, ctx: context.Background(), sess: sess, reqID: json.RawMessage(`4`)}
	st.prime()
	st.reply(json.RawMessage(`4`), gateway.Reply{Result: json.RawMessage(`{}`)})
	want := "id: p1-0\nretry: 1000\ndata: \n\nid: p1-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n"
	if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" || w.Body.String() != want {
		t.Errorf("a primed response: %s %q\nwant text/event-stream %q", ct, w.Body, want)
	}

	w = httptest.NewRecorder()
	st = &stream{h: h, w: w, ctx: context.Background(), sess: sess, reqID: json.RawMessage(`5`)}
	st.reply(json.RawMessage(`5`), gateway.Reply{Result: json.RawMessage(`{}`)})
	st.prime() // too late: the timer fired after the answer
	if ct := w.Header().Get("Content-Type"); ct != "application/json" || w.Body.String() != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Errorf("a response answered before priming: %s %q, want plain JSON", ct, w.Body)
	}
}

// heldWriter is a connection whose client has gone away before the server
// notices: the first write gets through, the next one blocks until cut is
// closed and then fails.
type heldWriter struct {
	header http.Header
	first  chan struct{} // closed when the first write got through
	held   chan struct{} // closed when a later write is blocked
	cut    chan struct{} // close to make the blocked write fail

	mu     sync.Mutex
	got    bytes.Buffer
	writes int
}

func newHeldWriter() *heldWriter {
	return &heldWriter{header: http.Header{}, first: make(chan struct{}), held: make(chan struct{}), cut: make(chan struct{})}
}

func (w *heldWriter) Header() http.Header { return w.header }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Flush()              {}
func (w *heldWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	w.writes++
	n := w.writes
	if n == 1 {
		w.got.Write(p)
	}
	w.mu.Unlock()
	switch n {
	case 1:
		close(w.first)
		return len(p), nil
	case 2:
		close(w.held)
	}
	<-w.cut
	return 0, errors.New("broken pipe")
}

// A client cuts a call's stream and resumes it with Last-Event-ID before
// the server has noticed the cut: the old connection's write failing
// afterwards must not end the resumed one, which gets the rest of the
// events and the answer.
func TestResumeBeforeTheCutIsNoticed(t *testing.T) {
	h := &Handler{Gateway: newGateway()}
	defer h.Close()
	sid := initSession(t, h)
	h.mu.Lock()
	sess := h.sessions[sid]
	h.mu.Unlock()

	hw := newHeldWriter()
	st := &stream{h: h, w: hw, ctx: context.Background(), sess: sess, reqID: json.RawMessage(`5`)}
	msg := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d}}`, i)
	}
	send := func(i int) {
		if err := st.Send([]byte(msg(i))); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	send(1)
	<-hw.first // the client got the priming event, maybe progress 1 too
	send(2)
	<-hw.held // the old connection's next write is under way; it will fail

	hw.mu.Lock()
	ids, data := parseSSE(t, hw.got.String())
	hw.mu.Unlock()
	stream, seq, ok := parseEventID(ids[len(ids)-1])
	ev := sess.lookup(stream)
	if !ok || ev == nil {
		t.Fatalf("last event id %q names no stream of the session", ids[len(ids)-1])
	}
	// What serveGet does with Last-Event-ID, then the old write fails.
	wr := ev.attach(seq + 1)
	close(hw.cut)
	<-st.done

	resumed := httptest.NewRecorder()
	var complete bool
	served := make(chan struct{})
	go func() {
		defer close(served)
		complete, _ = ev.serve(context.Background(), resumed, wr, nil, nil, nil)
	}()
	send(3)
	st.reply(json.RawMessage(`5`), gateway.Reply{Result: json.RawMessage(`{}`)})
	within(t, "the resumed stream", func() { <-served })

	rids, rdata := parseSSE(t, resumed.Body.String())
	all := append(data[1:], rdata...)
	want := []string{msg(1), msg(2), msg(3), `{"jsonrpc":"2.0","id":5,"result":{}}`}
	if !complete || strings.Join(all, "\n") != strings.Join(want, "\n") {
		t.Errorf("complete %v; received before the cut %v (ids %v) and after resuming %v (ids %v); want every message once, in order, the answer last:\n%v",
			complete, data[1:], ids, rdata, rids, want)
	}
}

// resumeOnDone is the request context of a connection its client has cut:
// the first time the writing goroutine looks at Done, a resuming connection
// takes the stream over (as serveGet's attach does), and Done is closed:
// both the given-up writer's gone and the context are ready when serve
// selects.
type resumeOnDone struct {
	context.Context
	once    sync.Once
	attach  func()
	closedC chan struct{}
}

func (c *resumeOnDone) Done() <-chan struct{} {
	c.once.Do(func() {
		c.attach()
		close(c.closedC)
	})
	return c.closedC
}

// The old connection's context ending after a resume must not end the
// resumed connection either. serve's select picks at random between the
// given-up writer and the ended context, so each round has even odds of
// taking the context's way; 64 rounds take it with certainty but for 2^-64.
func TestResumeBeforeTheContextEnds(t *testing.T) {
	h, _ := testHandler(time.Minute)
	answer := `{"jsonrpc":"2.0","id":5,"result":{}}`
	for round := range 64 {
		e := h.newEvents("p1", "s")
		old := e.attach(0)
		if err := e.add(progress(1), false); err != nil {
			t.Fatal(err)
		}
		var resumed *writer
		ctx := &resumeOnDone{Context: context.Background(), attach: func() { resumed = e.attach(2) }, closedC: make(chan struct{})}
		within(t, "the old connection's serve", func() { e.serve(ctx, httptest.NewRecorder(), old, nil, nil, nil) })

		if err := e.add(progress(2), false); err != nil {
			t.Fatal(err)
		}
		if err := e.add([]byte(answer), true); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		var complete bool
		within(t, "the resumed connection's serve", func() { complete, _ = e.serve(context.Background(), w, resumed, nil, nil, nil) })
		_, data := parseSSE(t, w.Body.String())
		if want := []string{string(progress(2)), answer}; !complete || strings.Join(data, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d: the resumed connection wrote %q (complete %v), want %q", round, data, complete, want)
		}
	}
}

// An SSE stream with nothing to send gets a comment line every
// StreamKeepalive, so that a proxy's read timeout does not close it.
func TestStreamKeepalive(t *testing.T) {
	h := &Handler{Gateway: newGateway(), StreamKeepalive: 20 * time.Millisecond}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	sid := initSession(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var got []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the idle stream ended (%v) without a keepalive comment: %q", err, got)
		}
		if line == ": keepalive\n" {
			return
		}
		got = append(got, line)
	}
}
