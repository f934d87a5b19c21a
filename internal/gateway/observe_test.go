package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
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
	srv.handle = func(ctx context.Context, method string, params json.RawMessage) (*upstream.Response, error) {
		sawObserved = ctx.Value(ctxKey{}) == "observed"
		if string(params) == `{"name":"echo","arguments":{"fail":true}}` {
			return nil, fail
		}
		time.Sleep(5 * time.Millisecond)
		return &upstream.Response{Result: json.RawMessage(`{"content":[],"isError":true}`)}, nil
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
	srv.handle = func(ctx context.Context, method string, params json.RawMessage) (*upstream.Response, error) {
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
