package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Runs of a generated tool over 64 servers × 20 tools whose tools have not
// changed do not go through them one by one: the runner is told they are
// its last run's by the tools' identity, listed and compared once only.
func TestRunsOfUnchangedToolsAreNotListedAgain(t *testing.T) {
	runners := newTestRunners(RunnerOptions{MaxTotal: 1})
	defer runners.Close()
	r := gateway.NewRouter(gateway.RouterOptions{})
	g := gateway.New(r, gateway.Info{Name: "test"})
	servers := addEchoServers(r, 64)
	if err := r.SetBuiltins([]gateway.Builtin{Builtin(r, Options{Logger: slog.New(slog.DiscardHandler), Runners: runners})}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, _, _ := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`))
	defer s.Close()
	call := func(params string) string {
		t.Helper()
		reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}, nil)
		if reply.Error != nil {
			t.Fatalf("%s: %s", params, reply.Error)
		}
		return string(reply.Result)
	}
	args, _ := json.Marshal(map[string]any{"name": "code-mode", "arguments": map[string]any{"name": "all", "servers": servers}})
	call(string(args))
	for i := range 3 {
		res := call(`{"name":"code-mode-all","arguments":{"script":"return await servers.s42.echo_7({x: ` + fmt.Sprint(i) + `})"}}`)
		if !strings.Contains(res, `"structuredContent":{"calls":1,"result":{"args":{"x":`+fmt.Sprint(i)+`}}}`) {
			t.Fatalf("run %d: %s", i, res)
		}
	}
	runners.mu.Lock()
	idle := runners.idle
	runners.mu.Unlock()
	if len(idle) != 1 {
		t.Fatalf("%d idle runners, want the 1", len(idle))
	}
	if n := idle[0].listed; n != 1 {
		t.Errorf("the runner's 3 runs of unchanged tools had them listed %d times, want once", n)
	}
	// A one-shot run over every tool is another selection: listed (and
	// found the same) once more, then not again.
	for range 2 {
		if res := call(`{"name":"code-mode","arguments":{"script":"return Object.keys(servers).length"}}`); !strings.Contains(res, `"result":64`) {
			t.Fatalf("one-shot run: %s", res)
		}
	}
	if n := idle[0].listed; n != 2 {
		t.Errorf("after 2 one-shot runs the tools were listed %d times in all, want 2", n)
	}
}

// The kept tools are returned only when the selected refs are exactly
// them: a tool hidden, renamed, redefined, added or taken away makes a
// new resolution.
func TestToolsCacheKeepsOnlyTheSameTools(t *testing.T) {
	def := json.RawMessage(`{"name":"a"}`)
	refs := []gateway.ToolRef{{Server: "s", Name: "a", Exposed: "a", Def: def}, {Server: "s", Name: "b", Exposed: "b", Def: def[:5]}}
	all := func(gateway.ToolRef) bool { return true }
	var tc toolsCache
	if tc.get(refs, all) != nil {
		t.Fatal("an empty cache returned tools")
	}
	kept := []Tool{{Server: "s", Name: "a", Exposed: "a", Def: def}, {Server: "s", Name: "b", Exposed: "b", Def: def[:5]}}
	tc.put(nil, kept)
	if got := tc.get(refs, all); len(got) != 2 || &got[0] != &kept[0] {
		t.Fatalf("the same refs did not return the kept tools: %v", got)
	}
	change := map[string]func(r []gateway.ToolRef) []gateway.ToolRef{
		"hidden":    func(r []gateway.ToolRef) []gateway.ToolRef { r[1].Hidden = true; return r },
		"renamed":   func(r []gateway.ToolRef) []gateway.ToolRef { r[1].Exposed = "s_b"; return r },
		"redefined": func(r []gateway.ToolRef) []gateway.ToolRef { r[0].Def = json.RawMessage(`{"name":"a"}`); return r },
		"added":     func(r []gateway.ToolRef) []gateway.ToolRef { return append(r, gateway.ToolRef{Server: "s", Name: "c"}) },
		"removed":   func(r []gateway.ToolRef) []gateway.ToolRef { return r[:1] },
	}
	for what, f := range change {
		if got := tc.get(f(append([]gateway.ToolRef(nil), refs...)), all); got != nil {
			t.Errorf("a tool %s: the kept tools were returned", what)
		}
	}
	onlyA := func(r gateway.ToolRef) bool { return r.Name == "a" }
	if got := tc.get(refs, onlyA); got != nil {
		t.Errorf("a smaller selection returned the kept tools")
	}
}

// addEchoServers adds n servers (s00, s01, ...) of 20 echo tools each to r
// and returns their names.
func addEchoServers(r *gateway.Router, n int) []string {
	var servers []string
	for s := range n {
		name := fmt.Sprintf("s%02d", s)
		servers = append(servers, name)
		var tools []string
		for i := range 20 {
			tools = append(tools, tool(fmt.Sprintf("echo_%d", i)))
		}
		r.Add(&upstream{name: name, tools: tools})
	}
	return servers
}
