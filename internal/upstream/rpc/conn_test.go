package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// sent records what a Conn sends; the transports' own tests (stdio lines,
// streamable HTTP, legacy SSE against real servers) prove the rest.
type sent struct {
	mu   sync.Mutex
	msgs []string
	more chan struct{}
	fail error // returned by every Send when set
}

func newSent() *sent { return &sent{more: make(chan struct{}, 100)} }

func (s *sent) Send(_ context.Context, what string, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.msgs = append(s.msgs, what+" "+string(msg))
	s.more <- struct{}{}
	return nil
}

// next waits for the next message sent.
func (s *sent) next(t *testing.T) string {
	t.Helper()
	select {
	case <-s.more:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing was sent")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m
}

func (s *sent) none(t *testing.T) {
	t.Helper()
	select {
	case <-s.more:
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Fatalf("sent %q, want nothing", s.msgs[0])
	case <-time.After(50 * time.Millisecond):
	}
}

// messages is a Reader over fixed messages.
type messages struct {
	list []string
	msg  wire.Message
}

func (m *messages) Read() (*wire.Message, error) {
	if len(m.list) == 0 {
		return nil, io.EOF
	}
	line := m.list[0]
	m.list = m.list[1:]
	if err := wire.ParseInto(&m.msg, []byte(line)); err != nil {
		return nil, err
	}
	return &m.msg, nil
}

func newConn(t *testing.T, h Handler) (*Conn, *sent, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newSent()
	c := New(ctx, "srv", slog.New(slog.DiscardHandler), h, out, 1<<20)
	t.Cleanup(func() {
		cancel()
		c.FailPending(func(string) error { return errors.New("test over") })
		c.Wait()
	})
	return c, out, cancel
}

func response(id uint64, result string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.FormatUint(id, 10) + `,"result":` + result + `}`
}

func TestCallsGetTheirOwnResponses(t *testing.T) {
	c, _, _ := newConn(t, Hooks{Server: "srv"})
	calls := make([]*Call, 50)
	for i := range calls {
		k, ok := c.Begin("tools/call")
		if !ok {
			t.Fatal("Begin refused on a fresh Conn")
		}
		calls[i] = k
	}
	// Answer in reverse order, one quoting its id as a string.
	var list []string
	for i := len(calls) - 1; i >= 0; i-- {
		list = append(list, response(calls[i].ID(), `{"n":`+strconv.Itoa(i)+`}`))
	}
	list[0] = strings.Replace(list[0], `"id":`+strconv.FormatUint(calls[len(calls)-1].ID(), 10), `"id":"`+strconv.FormatUint(calls[len(calls)-1].ID(), 10)+`"`, 1)
	if answered, err := c.Serve(&messages{list: list}, 0); answered || err != io.EOF {
		t.Fatalf("Serve = %v, %v; want false, EOF", answered, err)
	}
	for i, k := range calls {
		resp, err := k.Wait(context.Background(), true)
		if err != nil || string(resp.Result) != `{"n":`+strconv.Itoa(i)+`}` {
			t.Fatalf("call %d got %s, %v", i, resp.Result, err)
		}
	}
}

func TestServeStopsAtTheAwaitedResponse(t *testing.T) {
	c, _, _ := newConn(t, Hooks{})
	a, _ := c.Begin("a")
	b, _ := c.Begin("b")
	r := &messages{list: []string{response(b.ID(), `1`), response(a.ID(), `2`), response(99, `3`)}}
	if answered, err := c.Serve(r, a.ID()); !answered || err != nil {
		t.Fatalf("Serve = %v, %v; want answered", answered, err)
	}
	if len(r.list) != 1 {
		t.Fatalf("Serve read past the awaited response: %d left", len(r.list))
	}
	if resp, _ := b.Wait(context.Background(), true); string(resp.Result) != "1" {
		t.Fatalf("b got %s", resp.Result)
	}
	if resp, _ := a.Wait(context.Background(), true); string(resp.Result) != "2" {
		t.Fatalf("a got %s", resp.Result)
	}
}

func TestAbandonTellsTheServer(t *testing.T) {
	for _, tc := range []struct {
		method string
		sent   bool
		want   bool
	}{
		{"tools/call", true, true},
		{"tools/call", false, false}, // never seen by the server
		{"initialize", true, false},  // a client must not cancel it
	} {
		t.Run(tc.method+"/"+strconv.FormatBool(tc.sent), func(t *testing.T) {
			c, out, _ := newConn(t, Hooks{})
			k, _ := c.Begin(tc.method)
			id := k.ID()
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("the client went away"))
			if _, err := k.Wait(ctx, tc.sent); !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait = %v, want context.Canceled", err)
			}
			if !tc.want {
				out.none(t)
				return
			}
			got := out.next(t)
			want := `notifications/cancelled {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + strconv.FormatUint(id, 10) + `,"reason":"the client went away"}}`
			if got != want {
				t.Fatalf("sent %s\nwant %s", got, want)
			}
			// Its late answer is dropped, and no other call is disturbed.
			if c.Dispatch(mustParse(t, response(id, `{}`))) != 0 {
				t.Fatal("a late answer was delivered")
			}
		})
	}
}

func TestAbandonReturnsAnAnswerAlreadyIn(t *testing.T) {
	c, out, _ := newConn(t, Hooks{})
	k, _ := c.Begin("tools/call")
	c.Dispatch(mustParse(t, response(k.ID(), `{"ok":true}`)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := k.Abandon(ctx, true)
	if err != nil || string(resp.Result) != `{"ok":true}` {
		t.Fatalf("Abandon = %s, %v; want the answer", resp.Result, err)
	}
	out.none(t)
}

func TestServerRequestsAreAnswered(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan struct{}, 1)
	h := Hooks{OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
		switch method {
		case "roots/list":
			return json.RawMessage(`{"roots":[]}`), nil
		case "slow":
			started <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
			return json.RawMessage(`{}`), nil
		}
		return nil, wire.Errorf(wire.CodeMethodNotFound, "no %s", method)
	}}
	c, out, _ := newConn(t, h)

	c.Dispatch(mustParse(t, `{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`))
	if got := out.next(t); got != `the answer to roots/list {"jsonrpc":"2.0","id":"r1","result":{"roots":[]}}` {
		t.Fatalf("sent %s", got)
	}
	c.Dispatch(mustParse(t, `{"jsonrpc":"2.0","id":7,"method":"other"}`))
	if got := out.next(t); !strings.Contains(got, `"id":7,"error":{"code":-32601`) {
		t.Fatalf("sent %s", got)
	}
	// A request the server cancels ends its handler and gets no answer.
	c.Dispatch(mustParse(t, `{"jsonrpc":"2.0","id":8,"method":"slow"}`))
	<-started
	c.Dispatch(mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`))
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's cancellation did not end the handler")
	}
	out.none(t)
}

func TestDefaultHooks(t *testing.T) {
	h := Hooks{Server: "srv"}
	if res, err := h.Request(context.Background(), "ping", nil); err != nil || string(res) != "{}" {
		t.Fatalf("ping = %s, %v", res, err)
	}
	if _, err := h.Request(context.Background(), "sampling/createMessage", nil); err == nil || err.Code != wire.CodeMethodNotFound || !strings.Contains(err.Message, `"srv"`) {
		t.Fatalf("sampling = %v, want method-not-found naming the server", err)
	}
	h.Notification("notifications/message", nil) // dropped, no panic
}

func TestNotificationsReachTheHandler(t *testing.T) {
	var got []string
	h := Hooks{OnNotification: func(method string, params json.RawMessage) { got = append(got, method+" "+string(params)) }}
	c, _, _ := newConn(t, h)
	c.Serve(&messages{list: []string{ //nolint:errcheck // ends with EOF
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		// A cancellation of no request being served is the handler's too.
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
	}}, 0)
	want := []string{"notifications/tools/list_changed ", `notifications/cancelled {"requestId":5}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("handler got %q, want %q", got, want)
	}
}

// invalidOnce refuses its first message as ErrInvalidMessage.
type invalidOnce struct {
	*sent
	once sync.Once
}

func (s *invalidOnce) Send(ctx context.Context, what string, msg []byte) error {
	refused := false
	s.once.Do(func() { refused = true })
	if refused {
		return ErrInvalidMessage
	}
	return s.sent.Send(ctx, what, msg)
}

func TestAnInvalidAnswerBecomesAnError(t *testing.T) {
	out := &invalidOnce{sent: newSent()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := Hooks{OnRequest: func(context.Context, string, json.RawMessage) (json.RawMessage, *wire.Error) {
		return json.RawMessage("{\n"), nil
	}}
	c := New(ctx, "srv", slog.New(slog.DiscardHandler), h, out, 1<<20)
	c.Dispatch(mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"roots/list"}`))
	if got := out.next(t); !strings.Contains(got, `"id":3,"error":{"code":-32603`) {
		t.Fatalf("sent %s, want an internal error for id 3", got)
	}
	cancel()
	c.Wait()
}

func TestFailPendingAndRefuse(t *testing.T) {
	c, _, _ := newConn(t, Hooks{})
	a, _ := c.Begin("tools/call")
	b, _ := c.Begin("initialize")
	if got := c.InFlight(); len(got) != 1 || got[0] != a.ID() {
		t.Fatalf("InFlight = %v, want only %d", got, a.ID())
	}
	if c.method(b.ID()) != "initialize" {
		t.Fatalf("Method = %q", c.method(b.ID()))
	}
	idle := make(chan struct{})
	go func() { c.WaitIdle(); close(idle) }()
	if !c.Refuse() || c.Refuse() {
		t.Fatal("Refuse should report the first refusal only")
	}
	if _, ok := c.Begin("tools/call"); ok {
		t.Fatal("Begin accepted a call after Refuse")
	}
	if c.Go(func() {}) {
		t.Fatal("Go accepted work after Refuse")
	}
	select {
	case <-idle:
		t.Fatal("WaitIdle returned with calls pending")
	case <-time.After(20 * time.Millisecond):
	}
	c.FailPending(func(method string) error { return errors.New("down during " + method) })
	c.FailPending(func(string) error { t.Fatal("FailPending failed calls twice"); return nil })
	<-idle
	if _, err := a.Wait(context.Background(), true); err == nil || err.Error() != "down during tools/call" {
		t.Fatalf("a: %v", err)
	}
	if _, err := b.Wait(context.Background(), true); err == nil || err.Error() != "down during initialize" {
		t.Fatalf("b: %v", err)
	}
}

func TestResolveFailsOneCall(t *testing.T) {
	c, _, _ := newConn(t, Hooks{})
	a, _ := c.Begin("tools/call")
	b, _ := c.Begin("tools/call")
	tooLarge := errors.New("too large")
	if !c.Resolve(a.ID(), wire.Response{}, tooLarge) || c.Resolve(a.ID(), wire.Response{}, tooLarge) {
		t.Fatal("Resolve should deliver once")
	}
	if _, err := a.Wait(context.Background(), true); err != tooLarge {
		t.Fatalf("a: %v", err)
	}
	if r, ok := b.Take(); ok {
		t.Fatalf("b was delivered %v", r)
	}
}

func TestParseID(t *testing.T) {
	for raw, want := range map[string]uint64{`12`: 12, `"12"`: 12, ` 7 `: 7} {
		if got, ok := ParseID(json.RawMessage(raw)); !ok || got != want {
			t.Errorf("ParseID(%s) = %d, %v", raw, got, ok)
		}
	}
	for _, raw := range []string{``, `""`, `-1`, `1.5`, `"a"`, `99999999999999999999999`, `null`} {
		if _, ok := ParseID(json.RawMessage(raw)); ok {
			t.Errorf("ParseID(%s) accepted", raw)
		}
	}
}

func mustParse(t *testing.T, s string) *wire.Message {
	t.Helper()
	m, err := wire.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOversizeFailsTheCallItAnswers(t *testing.T) {
	c, out, _ := newConn(t, Hooks{})
	k, _ := c.Begin("resources/read")
	id := k.ID()
	if c.Oversize(0) || c.Oversize(id+1) {
		t.Fatal("Oversize failed a call no message answered")
	}
	if !c.Oversize(id) {
		t.Fatal("Oversize did not find the pending call")
	}
	_, err := k.Wait(context.Background(), true)
	if !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), `"srv" answered resources/read with more than 1048576 bytes`) {
		t.Fatalf("Wait = %v, want ErrResponseTooLarge naming the server, method and limit", err)
	}
	if got := out.next(t); !strings.Contains(got, `"requestId":`+strconv.FormatUint(id, 10)) {
		t.Fatalf("sent %s, want the cancellation of %d", got, id)
	}
}

// A call resolved but not yet taken may see its id drawn again for another
// call; taking it must not remove the other call.
func TestTakeAfterTheIDWasDrawnAgain(t *testing.T) {
	c, _, _ := newConn(t, Hooks{})
	a, _ := c.Begin("tools/call")
	if !c.Resolve(a.ID(), wire.Response{Result: json.RawMessage(`"a"`)}, nil) {
		t.Fatal("Resolve found no call")
	}
	b, _ := c.Begin("tools/call")
	c.mu.Lock() // as if b had drawn a's id
	delete(c.pending, b.id)
	b.id = a.id
	c.pending[b.id] = b
	c.mu.Unlock()

	r, ok := a.Take()
	if !ok || string(r.Response.Result) != `"a"` {
		t.Fatalf("Take = %v, %v; want a's own outcome", r, ok)
	}
	if c.method(b.ID()) != "tools/call" {
		t.Fatal("taking a removed b, which drew the same id")
	}
	c.Dispatch(mustParse(t, response(b.ID(), `"b"`)))
	if resp, _ := b.Wait(context.Background(), true); string(resp.Result) != `"b"` {
		t.Fatalf("b got %s", resp.Result)
	}
}
