package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

// fakeTools are a memory-like and an echo-like server's tools.
var fakeTools = []proto.Func{
	{Server: "memory", Name: "read_graph"},
	{Server: "everything", Name: "echo"},
	{Server: "everything", Name: "get-tiny-image"},
	{Server: "memory", Name: "delete_entities"},
	{Server: "memory", Name: "broken"},
	{Server: "memory", Name: "gone"},
	{Server: "everything", Name: "slow"},
	{Server: "everything", Name: "huge"},
}

// fakeCall answers like the real servers would, through the gateway.
func fakeCall(ctx context.Context, i int, args json.RawMessage) (json.RawMessage, error) {
	switch fakeTools[i].Name {
	case "read_graph":
		return json.RawMessage(`{"content":[{"type":"text","text":"{...}"}],"structuredContent":{"entities":[{"name":"Ada","entityType":"person"}],"relations":[]}}`), nil
	case "echo":
		var a struct{ Message string }
		_ = json.Unmarshal(args, &a)
		return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "Echo: " + a.Message}}})
	case "get-tiny-image":
		return json.RawMessage(`{"content":[{"type":"text","text":"a tiny image:"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}`), nil
	case "delete_entities":
		return json.RawMessage(`{"content":[{"type":"text","text":"mcp-gateway policy: tools/call of memory/delete_entities is denied: forbidden by policy no-destructive"}],"isError":true,"_meta":{"io.github.mcp-gateway/denied":{"code":-32010,"message":"mcp-gateway policy: tools/call of memory/delete_entities is denied: forbidden by policy no-destructive","data":{"policies":["no-destructive"]}}}}`), nil
	case "broken":
		return json.RawMessage(`{"content":[{"type":"text","text":"the graph is locked"}],"isError":true}`), nil
	case "gone":
		return nil, errors.New("Unknown tool: gone")
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	case "huge":
		return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": strings.Repeat("x", 4096)}}})
	}
	return nil, fmt.Errorf("no tool %s", fakeTools[i].Name)
}

func runFake(t *testing.T, src string, lim proto.Limits) Outcome {
	t.Helper()
	return Run(context.Background(), Program{Source: src, Tools: fakeTools, Call: fakeCall, Limits: lim})
}

func TestProgramsCallToolsAndReturnJSON(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"structured content is an object, text a string",
			`const g = await servers.memory.read_graph();
			 const e = await servers.everything.echo({message: g.entities[0].name});
			 return {who: g.entities[0].name, echo: e};`,
			`{"who":"Ada","echo":"Echo: Ada"}`},
		{"an image is a descriptor; several items an array",
			`return await servers.everything["get-tiny-image"]()`,
			`["a tiny image:",{"bytes":8,"mimeType":"image/png","type":"image"}]`},
		{"calls at once", `const r = await Promise.all(["a","b","c"].map(m => servers.everything.echo({message: m}))); return r`,
			`["Echo: a","Echo: b","Echo: c"]`},
		{"a refusal is a PolicyDenied exception with the policy's reason",
			`try { await servers.memory.delete_entities({entityNames: ["Ada"]}); return "ran" }
			 catch (e) { return {name: e.name, message: e.message, code: e.code, policies: e.policies, tool: e.server + "/" + e.tool} }`,
			`{"name":"PolicyDenied","message":"mcp-gateway policy: tools/call of memory/delete_entities is denied: forbidden by policy no-destructive","code":-32010,"policies":["no-destructive"],"tool":"memory/delete_entities"}`},
		{"a tool error is a ToolError carrying the content",
			`try { await servers.memory.broken({}) } catch (e) { return [e.name, e.message, e.content] }`,
			`["ToolError","the graph is locked","the graph is locked"]`},
		{"no result is a CallError",
			`try { await servers.memory.gone({}) } catch (e) { return [e.name, e.message] }`,
			`["CallError","memory.gone: Unknown tool: gone"]`},
		{"arguments that cannot be JSON are a TypeError", `const o = {}; o.o = o; try { await servers.everything.echo(o) } catch (e) { return e.name + ": " + e.message }`,
			`"TypeError: Converting circular structure to JSON"`},
		{"undefined is null", `const x = 1`, `null`},
		{"servers and their tools can be listed", `return [Object.keys(servers).sort(), Object.keys(servers.everything), typeof servers.nope, typeof servers.memory.nope, "echo" in servers.everything]`,
			`[["everything","memory"],["echo","get-tiny-image","slow","huge"],"undefined","undefined",true]`},
		{"no timers, no buffers, no require",
			`return [typeof setTimeout, typeof setInterval, typeof ArrayBuffer, typeof Uint8Array, typeof require, typeof process, typeof fetch]`,
			`["undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runFake(t, tc.src, proto.Limits{})
			if out.Err != nil {
				t.Fatalf("err %v", out.Err)
			}
			if string(out.Value) != tc.want {
				t.Errorf("value %s, want %s", out.Value, tc.want)
			}
		})
	}
}

func TestProgramErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"a throw", `throw new Error("boom")`, "Error: boom"},
		{"a syntax error", `return {`, "does not compile"},
		{"an awaited promise nothing settles", `await new Promise(() => {})`, "nothing settles"},
		{"arguments that are not an object", `await servers.everything.echo("hi")`, "takes one object"},
		{"deep recursion", `function f(n) { return f(n+1) + 1 } return f(0)`, "recursion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runFake(t, tc.src, proto.Limits{})
			var ex *Exception
			if !errors.As(out.Err, &ex) || !strings.Contains(ex.Message, tc.want) {
				t.Fatalf("err %v, want an Exception with %q", out.Err, tc.want)
			}
		})
	}
}

func TestLimitsEndTheRunSayingWhich(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		lim       proto.Limits
		limit     string
		detail    string
	}{
		{"wall clock", `await servers.everything.slow({})`, proto.Limits{Timeout: 200 * time.Millisecond}, proto.LimitTimeout, "longer than 200ms"},
		{"cpu", `for (;;) {}`, proto.Limits{CPU: 200 * time.Millisecond}, proto.LimitCPU, "more than 200ms"},
		{"cpu across awaits", `for (;;) { await servers.everything.echo({message: "x"}) ; for (let i = 0; i < 1e5; i++) {} }`, proto.Limits{CPU: 200 * time.Millisecond, Calls: 1e6}, proto.LimitCPU, "more than 200ms"},
		{"calls", `for (;;) servers.everything.echo({message: "x"})`, proto.Limits{Calls: 50}, proto.LimitCalls, "more than 50 inner calls"},
		{"program size", strings.Repeat(" ", 2000), proto.Limits{ProgramBytes: 1000}, proto.LimitProgramBytes, "2000 bytes"},
		{"inner result", `return await servers.everything.huge({})`, proto.Limits{ResultBytes: 1000}, proto.LimitResultBytes, "everything.huge returned"},
		{"returned value", `return "x".repeat(5000)`, proto.Limits{ReturnBytes: 1000}, proto.LimitReturnBytes, "5002 bytes"},
		{"memory", `let s = "0123456789abcdef"; for (let i = 0; i < 16; i++) s = s + s; const keep = []; for (let i = 0; ; i++) keep.push(s + i)`, proto.Limits{MemoryBytes: 32 << 20}, proto.LimitMemory, "heap grew"},
		{"one huge string", `return "x".repeat(1 << 30).length`, proto.Limits{MemoryBytes: 32 << 20}, proto.LimitMemory, "String.prototype.repeat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runFake(t, tc.src, tc.lim)
			var le *LimitError
			if !errors.As(out.Err, &le) || le.Limit != tc.limit || !strings.Contains(le.Error(), tc.detail) {
				t.Fatalf("err %v, want the %s limit saying %q", out.Err, tc.limit, tc.detail)
			}
			if !strings.Contains(le.Error(), "--code-mode-") {
				t.Errorf("%q does not name the flag %s", le.Error(), "--code-mode-")
			}
		})
	}
}

func TestConcurrentCallsAreBounded(t *testing.T) {
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	call := func(ctx context.Context, _ int, args json.RawMessage) (json.RawMessage, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{"content":[]}`), nil
	}
	out := Run(context.Background(), Program{Source: `await Promise.all(Array.from({length: 20}, () => servers.everything.echo({}))); return "done"`,
		Tools: fakeTools, Call: call, Limits: proto.Limits{Concurrent: 3}})
	if out.Err != nil || string(out.Value) != `"done"` {
		t.Fatalf("%s %v", out.Value, out.Err)
	}
	if most.Load() != 3 || out.Calls != 20 {
		t.Errorf("at most %d calls in flight of %d, want 3 of 20", most.Load(), out.Calls)
	}
}

func TestCancellingTheRunCancelsItsCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	ended := make(chan error, 1)
	call := func(ctx context.Context, _ int, args json.RawMessage) (json.RawMessage, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
	go func() { <-started; cancel() }()
	out := Run(ctx, Program{Source: `return await servers.everything.slow({})`, Tools: fakeTools, Call: call})
	if !errors.Is(out.Err, ErrCancelled) {
		t.Fatalf("err %v, want ErrCancelled", out.Err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the inner call ended with %v", err)
	}
}

func TestConsoleLogComesBack(t *testing.T) {
	out := runFake(t, `console.log("a", 1, {b: 2}); console.error(new Error("e")); return 1`, proto.Limits{})
	if want := []string{`a 1 {"b":2}`, `Error: e`}; fmt.Sprint(out.Logs) != fmt.Sprint(want) {
		t.Errorf("logs %q, want %q", out.Logs, want)
	}
}
