package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// upstream is a server of fixed tools whose calls echo their arguments.
type upstream struct {
	name  string
	tools []string
	mu    sync.Mutex
	calls []string
}

func (u *upstream) Name() string                                          { return u.name }
func (u *upstream) Start(context.Context) error                           { return nil }
func (u *upstream) Notify(context.Context, string, json.RawMessage) error { return nil }
func (u *upstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"capabilities":{"tools":{}}}`)
}
func (u *upstream) Generation() uint64 { return 1 }
func (u *upstream) Close() error       { return nil }
func (u *upstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "tools/list":
		return &wire.Response{Result: json.RawMessage(`{"tools":[` + strings.Join(u.tools, ",") + `]}`)}, nil
	case "tools/call":
		u.mu.Lock()
		u.calls = append(u.calls, string(params))
		u.mu.Unlock()
		name, _ := wire.GetString(params, "name")
		args := wire.Get(params, "arguments")
		res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": u.name + "/" + name}}, "structuredContent": map[string]json.RawMessage{"args": args}})
		return &wire.Response{Result: res}, nil
	}
	return &wire.Response{Error: wire.Errorf(wire.CodeMethodNotFound, "no %s", method).Marshal()}, nil
}

// guard refuses delete_entities and records what it decided.
type guard struct {
	mu    sync.Mutex
	calls []gateway.GuardCall
}

func (g *guard) Visible(it gateway.GuardItem) bool { return it.Name != "delete_entities" }
func (g *guard) Version() uint64                   { return 1 }
func (g *guard) Admit(ctx context.Context, c *gateway.GuardCall) (func(gateway.Reply), *wire.Error) {
	g.mu.Lock()
	g.calls = append(g.calls, *c)
	g.mu.Unlock()
	if c.Name == "delete_entities" {
		return nil, &wire.Error{Code: -32010, Message: "mcp-gateway policy: tools/call of memory/delete_entities is denied: test", Data: json.RawMessage(`{"policies":["no-delete"]}`)}
	}
	return nil, nil
}

type stream struct {
	mu   sync.Mutex
	msgs []string
}

func (s *stream) Send(msg []byte) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, string(msg))
	s.mu.Unlock()
	return nil
}

func tool(name string) string {
	return fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}`, name)
}

func newGateway(t *testing.T) (*gateway.Gateway, *gateway.Session, *guard, *upstream) {
	t.Helper()
	r := gateway.NewRouter(gateway.RouterOptions{})
	g := gateway.New(r, gateway.Info{Name: "test"})
	mem := &upstream{name: "memory", tools: []string{tool("read_graph"), tool("delete_entities"), tool("echo")}}
	r.Add(mem)
	r.Add(&upstream{name: "everything", tools: []string{tool("echo"), tool("get-sum")}})
	gd := &guard{}
	g.Guard = gd
	if err := r.SetBuiltins([]gateway.Builtin{Builtin(r, Options{Runners: testRunners})}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`))
	if werr != nil {
		t.Fatal(werr)
	}
	t.Cleanup(s.Close)
	return g, s, gd, mem
}

func call(t *testing.T, s *gateway.Session, name string, args any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`7`), Method: "tools/call", Params: b}, &stream{})
	if reply.Error != nil {
		t.Fatalf("%s: error %s", name, reply.Error)
	}
	var res map[string]any
	if err := json.Unmarshal(reply.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func listed(t *testing.T, s *gateway.Session) map[string]string {
	t.Helper()
	reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/list"}, nil)
	var l struct {
		Tools []struct{ Name, Description string }
	}
	_ = json.Unmarshal(reply.Result, &l)
	out := map[string]string{}
	for _, t := range l.Tools {
		out[t.Name] = t.Description
	}
	return out
}

func TestOneShotRunGoesThroughTheGuardLinkedToTheRun(t *testing.T) {
	_, s, gd, mem := newGateway(t)
	res := call(t, s, "code-mode", map[string]any{"servers": []string{"memory", "everything"}, "script": `
		const a = await servers.memory.echo({x: 1});
		const b = await servers.everything["get-sum"]({x: a.args.x + 1});
		let refused;
		try { await servers.memory.delete_entities({x: 3}) } catch (e) { refused = e.name + ": " + e.message }
		return {a, b, refused};`})
	sc, _ := res["structuredContent"].(map[string]any)
	got, _ := json.Marshal(sc["result"])
	if want := `{"a":{"args":{"x":1}},"b":{"args":{"x":2}},"refused":"PolicyDenied: mcp-gateway policy: tools/call of memory/delete_entities is denied: test"}`; string(got) != want {
		t.Fatalf("result %s, want %s (%v)", got, want, res)
	}
	// The server got the tools under their names there; the guard decided
	// code-mode (a built-in) and each inner call, all of one run.
	if want := []string{`{"name":"echo","arguments":{"x":1}}`}; !slices.Equal(mem.calls, want) {
		t.Errorf("memory received %v, want %v", mem.calls, want)
	}
	var decided []string
	run := gd.calls[0].Run
	for _, c := range gd.calls {
		decided = append(decided, c.Kind+":"+c.Server+"/"+c.Name)
		if c.Run != run || run == "" {
			t.Errorf("call %s/%s of run %q, want %q", c.Server, c.Name, c.Run, run)
		}
	}
	if want := []string{"builtin:/code-mode", "tool:memory/echo", "tool:everything/get-sum", "tool:memory/delete_entities"}; !slices.Equal(decided, want) {
		t.Errorf("decided %v, want %v", decided, want)
	}
	meta, _ := res["_meta"].(map[string]any)[MetaKey].(map[string]any)
	if meta["run"] != run || meta["calls"] != float64(3) {
		t.Errorf("_meta %v, want run %s and 3 calls", meta, run)
	}
}

func TestGeneratedToolsAreListedAndCallable(t *testing.T) {
	_, s, _, _ := newGateway(t)
	before := len(listed(t, s))
	res := call(t, s, "code-mode", map[string]any{"name": "mem", "servers": []string{"memory"}})
	if res["isError"] == true {
		t.Fatalf("create: %v", res)
	}
	select {
	case msg := <-s.Outbox():
		if string(msg) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
			t.Errorf("notification %s", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed")
	}
	tools := listed(t, s)
	desc, ok := tools["code-mode-mem"]
	if !ok || len(tools) != before+1 {
		t.Fatalf("tools/list %v lacks code-mode-mem", tools)
	}
	if want := "servers.memory.echo(args: {x: number}): Promise<any>"; !strings.Contains(desc, want) || strings.Contains(desc, "get-sum") || strings.Contains(desc, "delete_entities") {
		t.Errorf("description %q: want %q, no other server's tool and no tool the policy hides", desc, want)
	}
	res = call(t, s, "code-mode-mem", map[string]any{"script": `return (await servers.memory.read_graph({x: 5})).args.x * 2`})
	if sc := res["structuredContent"].(map[string]any); sc["result"] != float64(10) {
		t.Errorf("run: %v", res)
	}
	res = call(t, s, "code-mode-mem", map[string]any{"script": `return typeof servers.everything`})
	if sc := res["structuredContent"].(map[string]any); sc["result"] != "undefined" {
		t.Errorf("a generated tool's program reached another server: %v", res)
	}
	// A limit ends the run with a result saying which.
	res = call(t, s, "code-mode-mem", map[string]any{"script": strings.Repeat(" ", DefaultProgramBytes+1)})
	if sc := res["structuredContent"].(map[string]any); res["isError"] != true || sc["limit"] != LimitProgramBytes {
		t.Errorf("an oversized program: %v", res)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "x", "servers": []string{"nope"}}, `no mcp server "nope"`},
		{map[string]any{"name": "bad name", "servers": []string{"memory"}}, `use 1 to 54 of`},
		{map[string]any{"name": "x"}, "give the servers"},
		{map[string]any{"name": "x", "tools": []string{"memory/nope"}}, `has no tool "nope"`},
		{map[string]any{"name": "x", "script": "1", "servers": []string{"memory"}}, "not both"},
	} {
		res := call(t, s, "code-mode", bad.args)
		text := res["content"].([]any)[0].(map[string]any)["text"].(string)
		if res["isError"] != true || !strings.Contains(text, bad.want) {
			t.Errorf("code-mode %v: %v, want an error with %q", bad.args, res, bad.want)
		}
	}
}

func TestGeneratedToolOverSingleTools(t *testing.T) {
	_, s, _, _ := newGateway(t)
	res := call(t, s, "code-mode", map[string]any{"name": "sum", "tools": []string{"everything/get-sum", "memory/echo"}})
	if res["isError"] == true {
		t.Fatalf("create: %v", res)
	}
	desc := listed(t, s)["code-mode-sum"]
	for _, want := range []string{`servers.everything["get-sum"](args: {x: number})`, "servers.memory.echo("} {
		if !strings.Contains(desc, want) {
			t.Errorf("description lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "servers.everything.echo") || strings.Contains(desc, "read_graph") {
		t.Errorf("description names a tool not selected:\n%s", desc)
	}
	res = call(t, s, "code-mode-sum", map[string]any{"script": `return [typeof servers.everything.echo, (await servers.everything["get-sum"]({x: 2})).args.x]`})
	if got, _ := json.Marshal(res["structuredContent"].(map[string]any)["result"]); string(got) != `["undefined",2]` {
		t.Errorf("run: %s", got)
	}
	res = call(t, s, "code-mode", map[string]any{"name": "x", "tools": []string{"memory/delete_entities"}})
	if text := res["content"].([]any)[0].(map[string]any)["text"].(string); res["isError"] != true || !strings.Contains(text, `has no tool "delete_entities" that you may see`) {
		t.Errorf("a tool the policy hides: %v", res)
	}
}
