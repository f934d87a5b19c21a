package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func TestInnerCallProgressNamesTheCallAndKeepsIncreasing(t *testing.T) {
	rec := &recorder{}
	var seq atomic.Uint64
	p := &labelledProgress{Stream: rec, label: "memory.read_graph", seq: &seq}
	_ = p.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2,"total":4,"message":"half"}}`))
	_ = p.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`))
	_ = p.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`))
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"memory.read_graph: half (2/4)"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2,"message":"memory.read_graph (1)"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
	}
	got := rec.msgs
	if len(got) != len(want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// parentObserver records each observed call with the call it runs under.
type parentObserver struct {
	recordingObserver
	mu      sync.Mutex
	parents []string // "name under parent"
}

type parentKey struct{}

func (o *parentObserver) StartCall(ctx context.Context, c CallInfo) (context.Context, func(CallEnd)) {
	parent, _ := ctx.Value(parentKey{}).(string)
	o.mu.Lock()
	o.parents = append(o.parents, c.Server+"/"+c.Name+" under "+parent)
	o.mu.Unlock()
	return context.WithValue(ctx, parentKey{}, c.Server+"/"+c.Name), func(CallEnd) {}
}

// A built-in's inner calls run under its own observed call (a span per
// inner call under the run's), each with an id of its own, and cancelling
// the built-in's call cancels them at their servers.
func TestInnerCallsAreObservedUnderTheRunAndCancelledWithIt(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	obs := &parentObserver{}
	g.Observer = obs
	started := make(chan struct{}, 1)
	srv := &scripted{fakeUpstream: fakeUpstream{name: "srv", tools: []string{tool("echo"), tool("wait")}}}
	srv.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		if name, _ := wire.GetString(params, "name"); name == "wait" {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}
	r.Add(srv)
	var runs []string
	run := Builtin{Observed: true, Tool: json.RawMessage(`{"name":"run","inputSchema":{"type":"object"}}`),
		Call: func(ctx context.Context, c *BuiltinCall) (json.RawMessage, error) {
			runs = append(runs, c.Run())
			var seq atomic.Uint64
			for _, name := range []string{"echo", "echo"} {
				if _, err := c.CallInner(ctx, name, "srv."+name, nil, &seq); err != nil {
					return nil, err
				}
			}
			if wire.Get(c.Arguments, "wait") != nil {
				_, err := c.CallInner(ctx, "wait", "srv.wait", nil, &seq)
				return nil, err
			}
			return json.RawMessage(`{"content":[]}`), nil
		}}
	if err := r.SetBuiltins([]Builtin{run}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`5`), Method: "tools/call", Params: json.RawMessage(`{"name":"run"}`)}, &recorder{})
	if string(reply.Result) != `{"content":[]}` {
		t.Fatalf("run: %s %s", reply.Result, reply.Error)
	}
	want := []string{"mcp-gateway/run under ", "srv/echo under mcp-gateway/run", "srv/echo under mcp-gateway/run"}
	if fmt.Sprint(obs.parents) != fmt.Sprint(want) {
		t.Errorf("observed %q, want %q", obs.parents, want)
	}
	if len(runs) != 1 || !strings.HasPrefix(runs[0], "run-") {
		t.Errorf("run ids %v", runs)
	}

	// Cancelled by its client while an inner call is in flight.
	done := make(chan Reply, 1)
	go func() {
		done <- s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`6`), Method: "tools/call", Params: json.RawMessage(`{"name":"run","arguments":{"wait":true}}`)}, &recorder{})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the inner call never reached its server")
	}
	s.HandleNotification(context.Background(), &wire.Message{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":6}`)})
	select {
	case reply := <-done:
		if !strings.Contains(string(reply.Result), `"isError":true`) {
			t.Errorf("the cancelled run answered %s", reply.Result)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the run did not end its inner call")
	}
}

// A built-in's Tools are the same slice from call to call while the
// gateway's tools and their visibility are unchanged (a code-mode run over
// a thousand tools does not list them again), and a new one saying what
// changed once they change.
func TestBuiltinToolsAreKeptUntilTheToolsChange(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(&fakeUpstream{name: "a", tools: []string{tool("one"), tool("two")}})
	r.Add(&fakeUpstream{name: "b", tools: []string{tool("one")}})
	var got [][]ToolRef
	list := Builtin{Tool: json.RawMessage(`{"name":"list","inputSchema":{"type":"object"}}`),
		Call: func(ctx context.Context, c *BuiltinCall) (json.RawMessage, error) {
			var servers []string
			if s, ok := wire.GetString(c.Arguments, "server"); ok {
				servers = []string{s}
			}
			got = append(got, c.Tools(servers))
			return json.RawMessage(`{"content":[]}`), nil
		}}
	if err := r.SetBuiltins([]Builtin{list}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	call := func(args string) []ToolRef {
		t.Helper()
		reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"list","arguments":` + args + `}`)}, &recorder{})
		if reply.Error != nil {
			t.Fatalf("list: %s", reply.Error)
		}
		return got[len(got)-1]
	}
	names := func(refs []ToolRef) string {
		var out []string
		for _, ref := range refs {
			out = append(out, ref.Server+"/"+ref.Name+"="+ref.Exposed)
		}
		return strings.Join(out, " ")
	}
	first := call(`{}`)
	if want := "a/one=one a/two=two b/one=b_one"; names(first) != want {
		t.Fatalf("tools %s, want %s", names(first), want)
	}
	if again := call(`{}`); &again[0] != &first[0] {
		t.Errorf("unchanged tools were listed again")
	}
	if only := call(`{"server":"b"}`); names(only) != "b/one=b_one" {
		t.Errorf("b's tools: %s", names(only))
	}
	if err := r.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if after := call(`{}`); names(after) != "a/one=one a/two=two" {
		t.Errorf("after b was removed: %s", names(after))
	}
}
