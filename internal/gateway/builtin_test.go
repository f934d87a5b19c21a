package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func TestBuiltinsKeepTheirNamesAndCallToolsByName(t *testing.T) {
	r := NewRouter(RouterOptions{Prefix: PrefixAlways})
	g := New(r, Info{})
	// A server offering a tool of a built-in's name: it is renamed.
	a := &fakeUpstream{name: "a", tools: []string{tool("mcp-exec"), tool("echo")}}
	r.Add(a)
	exec := Builtin{
		Tool: json.RawMessage(`{"name":"mcp-exec","inputSchema":{"type":"object"}}`),
		Call: func(ctx context.Context, c *BuiltinCall) (json.RawMessage, error) {
			name, _ := wire.GetString(c.Arguments, "name")
			return c.CallTool(ctx, name, wire.Get(c.Arguments, "arguments"))
		},
	}
	if err := r.SetBuiltins([]Builtin{exec}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := names(listAll(t, r)), []string{"mcp-exec", "a_mcp-exec", "a_echo"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if got := r.Servers(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Servers() = %v: the built-in tools are not a server", got)
	}
	s := newSession(t, g)
	call := func(params string) Reply {
		return s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}, &recorder{})
	}
	reply := call(`{"name":"mcp-exec","arguments":{"name":"a_echo","arguments":{"x":1}}}`)
	if want := `{"content":[{"type":"text","text":"from a"}],"x-extra":1}`; string(reply.Result) != want {
		t.Errorf("mcp-exec result %s, want %s", reply.Result, want)
	}
	if want := `{"name":"echo","arguments":{"x":1}}`; len(a.calls) != 1 || a.calls[0] != want {
		t.Errorf("server received %v, want [%s]", a.calls, want)
	}
	reply = call(`{"name":"mcp-exec","arguments":{"name":"nope"}}`)
	if !strings.Contains(string(reply.Result), `"isError":true`) || !strings.Contains(string(reply.Result), "Unknown tool: nope") {
		t.Errorf("mcp-exec of an unknown tool: %s", reply.Result)
	}
	reply = call(`{"name":"mcp-exec","arguments":{"name":"mcp-exec"}}`)
	if !strings.Contains(string(reply.Result), "one of the gateway's own tools") {
		t.Errorf("mcp-exec of itself: %s", reply.Result)
	}
}

func TestServersAddedAndRemovedLive(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(&fakeUpstream{name: "a", tools: []string{tool("one")}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	expectListChanged := func(what string) {
		t.Helper()
		select {
		case msg := <-s.Outbox():
			if string(msg) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
				t.Errorf("%s: notification %s", what, msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no list_changed", what)
		}
	}

	b := &fakeUpstream{name: "b", tools: []string{tool("one"), tool("two")}}
	r.Add(b)
	if got := names(listAll(t, r)); !slices.Equal(got, []string{"one"}) {
		t.Errorf("an added server offers nothing before it starts: %v", got)
	}
	if err := r.StartServer(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	expectListChanged("after StartServer")
	if got, want := names(listAll(t, r)), []string{"one", "b_one", "two"}; !slices.Equal(got, want) {
		t.Errorf("after StartServer: %v, want %v", got, want)
	}
	if got := r.Tools("b"); !slices.Equal(names(got), []string{"b_one", "two"}) {
		t.Errorf("Tools(b) = %v", names(got))
	}

	if err := r.Remove("a"); err != nil {
		t.Fatal(err)
	}
	expectListChanged("after Remove")
	if got, want := names(listAll(t, r)), []string{"b_one", "two"}; !slices.Equal(got, want) {
		t.Errorf("after removing a: %v, want %v (b's names stay as they were exposed)", got, want)
	}
	if err := r.Remove("a"); err == nil || !strings.Contains(err.Error(), `"a" is not added`) {
		t.Errorf("removing twice: %v", err)
	}
	if err := r.StartServer(context.Background(), "zzz"); err == nil {
		t.Error("starting an unknown server succeeded")
	}
}
