package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
