package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

func toolsOf(servers, each int) []proto.Func {
	var tools []proto.Func
	for s := range servers {
		for t := range each {
			tools = append(tools, proto.Func{Server: fmt.Sprintf("s%02d", s), Name: fmt.Sprintf("echo_%d", t)})
		}
	}
	return tools
}

// A runner's run over 1 280 tools, after the first run of those tools,
// allocates no more than a run over 20: its setup does not go through
// every tool (the index is kept across runs of the same tools).
func TestRunnerRunOfManyToolsDoesNotGrowWithThem(t *testing.T) {
	allocs := func(tools []proto.Func) float64 {
		s := &server{enc: json.NewEncoder(io.Discard), flush: func() error { return nil }, waiting: map[uint64]func(proto.Reply){}}
		if out := s.run(&proto.RunRequest{Source: `return 0`, Tools: tools}); out.Err != nil {
			t.Fatal(out.Err)
		}
		return testing.AllocsPerRun(20, func() {
			if out := s.run(&proto.RunRequest{Source: `return 0`, SameTools: true}); out.Err != nil {
				t.Fatal(out.Err)
			}
		})
	}
	few, many := allocs(toolsOf(1, 20)), allocs(toolsOf(64, 20))
	if many > few+40 {
		t.Errorf("a run over 1280 tools made %.0f allocations, one over 20 made %.0f: its setup goes through every tool", many, few)
	}
}

// The index is what the program sees: servers and their tools in order,
// each tool its own function, a name given twice its first.
func TestIndexServesTheToolsByName(t *testing.T) {
	tools := []proto.Func{{Server: "a", Name: "x"}, {Server: "b", Name: "y"}, {Server: "a", Name: "z"}, {Server: "a", Name: "x"}}
	var called []int
	out := Run(t.Context(), Program{
		Source: `const a = await servers.a.z({}); const b = await servers["b"].y({});
			return {servers: Object.keys(servers), a: Object.keys(servers.a), has: ["x" in servers.a, "y" in servers.a, "c" in servers], a2: a, b2: b, none: typeof servers.a.q}`,
		Tools: tools, Index: NewIndex(tools),
		Call: func(_ context.Context, i int, _ json.RawMessage) (json.RawMessage, error) {
			called = append(called, i)
			return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"%d"}]}`, i)), nil
		},
	})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	want := `{"servers":["a","b"],"a":["x","z"],"has":[true,false,false],"a2":"2","b2":"1","none":"undefined"}`
	if string(out.Value) != want {
		t.Errorf("got %s, want %s", out.Value, want)
	}
	if fmt.Sprint(called) != "[2 1]" {
		t.Errorf("calls of tools %v, want [2 1]", called)
	}
}
