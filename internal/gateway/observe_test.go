package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

type ctxKey struct{}

// recordingObserver keeps what the gateway told it.
type recordingObserver struct {
	mu      sync.Mutex
	starts  []CallInfo
	ends    []CallEnd
	refetch []string
}

func (o *recordingObserver) StartCall(ctx context.Context, c CallInfo) (context.Context, func(CallEnd)) {
	o.mu.Lock()
	o.starts = append(o.starts, c)
	o.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, "observed"), func(e CallEnd) {
		o.mu.Lock()
		o.ends = append(o.ends, e)
		o.mu.Unlock()
	}
}

func (o *recordingObserver) TraceBack(ctx context.Context, params json.RawMessage) json.RawMessage {
	if ctx.Value(ctxKey{}) != "observed" {
		return params
	}
	out, _ := wire.Set(params, "traced", json.RawMessage(`true`))
	return out
}

func (o *recordingObserver) ListRefetched(server, method string) {
	o.mu.Lock()
	o.refetch = append(o.refetch, server+" "+method)
	o.mu.Unlock()
}

// Every forwarded call passes the Observer once: it is told the server and
// the tool's original name, the call runs in the context it returns, and
// it learns how the call ended.
func TestObserver(t *testing.T) {
	srv := &scripted{fakeUpstream: fakeUpstream{name: "srv", tools: []string{tool("echo")}}}
	var sawObserved bool
	fail := errors.New("pipe broken")
	srv.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		sawObserved = ctx.Value(ctxKey{}) == "observed"
		if string(params) == `{"name":"echo","arguments":{"fail":true}}` {
			return nil, fail
		}
		time.Sleep(5 * time.Millisecond)
		return &wire.Response{Result: json.RawMessage(`{"content":[],"isError":true}`)}, nil
	}
	other := &fakeUpstream{name: "other", tools: []string{tool("echo")}} // first in order: srv's echo is srv_echo
	g := gatewayWith(t, RouterOptions{}, srv, other)
	o := &recordingObserver{}
	g.Observer = o
	s := sessionWith(t, g, `{}`)

	reply := s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"echo","arguments":{}}`), nil)
	if reply.Error != nil {
		t.Fatalf("echo: %s", reply.Error)
	}
	s.Handle(context.Background(), msg(`2`, "tools/call", `{"name":"srv_echo","arguments":{}}`), nil)
	s.Handle(context.Background(), msg(`3`, "tools/call", `{"name":"srv_echo","arguments":{"fail":true}}`), nil)
	s.Handle(context.Background(), msg(`4`, "tools/call", `{"name":"unknown","arguments":{}}`), nil)

	if len(o.starts) != 3 || len(o.ends) != 3 {
		t.Fatalf("%d starts and %d ends, want 3 of each (an unknown tool is never forwarded)", len(o.starts), len(o.ends))
	}
	if c := o.starts[0]; c.Server != "other" || c.Name != "echo" || c.Method != "tools/call" || c.ProtocolVersion != "2025-11-25" {
		t.Errorf("first call %+v, want server other, original name echo", c)
	}
	if !sawObserved {
		t.Error("the upstream did not get the context StartCall returned")
	}
	if e := o.ends[1]; e.Err != nil || e.Upstream < 5*time.Millisecond || string(e.Reply.Result) != `{"content":[],"isError":true}` {
		t.Errorf("second call ended %+v", e)
	}
	if e := o.ends[2]; !errors.Is(e.Err, fail) || e.Reply.Error == nil || e.Timeout {
		t.Errorf("third call ended %+v, want the transport error", e)
	}

	srv.gen.Add(1) // a restart: the next call re-lists
	s.Handle(context.Background(), msg(`5`, "tools/call", `{"name":"srv_echo","arguments":{}}`), nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		o.mu.Lock()
		n := len(o.refetch)
		o.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.refetch) == 0 || o.refetch[0] != "srv tools/list" {
		t.Errorf("re-fetches %v, want srv tools/list first", o.refetch)
	}
}

// A call that outlives its timeout ends with Timeout.
func TestObserverTimeout(t *testing.T) {
	srv := &scripted{fakeUpstream: fakeUpstream{name: "srv", tools: []string{tool("slow")}}}
	srv.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	g := gatewayWith(t, RouterOptions{CallTimeout: 20 * time.Millisecond}, srv)
	o := &recordingObserver{}
	g.Observer = o
	s := sessionWith(t, g, `{}`)
	s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"slow","arguments":{}}`), nil)
	if len(o.ends) != 1 || !o.ends[0].Timeout {
		t.Fatalf("ends %+v, want one with Timeout", o.ends)
	}
}

// What a server sends the client during a call (progress, a request) goes
// through the Observer's TraceBack with the call's context.
func TestObserverTraceBack(t *testing.T) {
	f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo")}}}
	g := gatewayWith(t, RouterOptions{}, f)
	g.Observer = &recordingObserver{}
	hooks := hooksOf(g, "a")
	var sampled json.RawMessage
	f.handle = func(ctx context.Context, _ string, params json.RawMessage) (*wire.Response, error) {
		token := wire.Get(wire.Get(params, "_meta"), "progressToken")
		hooks.OnNotification("notifications/progress", json.RawMessage(`{"progressToken":`+string(token)+`,"progress":1}`))
		res, werr := hooks.OnRequest(ctx, "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":1}`))
		if werr != nil {
			return nil, werr
		}
		sampled = res
		return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}
	s := sessionWith(t, g, `{"sampling":{}}`)
	stream := &answeringStream{s: s, answer: `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`}
	if reply := s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"echo","_meta":{"progressToken":7}}`), stream); reply.Error != nil {
		t.Fatal(string(reply.Error))
	}
	if sampled == nil {
		t.Fatal("the sampling request was not answered")
	}
	stream.mu.Lock()
	got := append([]string(nil), stream.got...)
	stream.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the client got %v, want a progress and a request", got)
	}
	for _, m := range got {
		if !strings.Contains(m, `"traced":true`) {
			t.Errorf("sent without the call's trace context: %s", m)
		}
	}
}
