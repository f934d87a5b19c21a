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

// BenchmarkEmptyRun is a run's own cost over 1 280 tools: the trip to a
// warm runner and back, the engine, the program's compilation, its
// functions (made when first reached).
func BenchmarkEmptyRun(b *testing.B) {
	var tools []Tool
	for s := range 64 {
		for t := range 20 {
			tools = append(tools, Tool{Server: fmt.Sprintf("s%02d", s), Name: fmt.Sprintf("echo_%d", t), Def: json.RawMessage(`{}`)})
		}
	}
	for b.Loop() {
		out := testRunners.Run(context.Background(), "bench", Program{Source: `return 0`, Tools: tools})
		if out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}

// BenchmarkGeneratedToolRun is a run of a generated tool over 64 servers ×
// 20 tools that calls none, through the gateway's tools/call path.
func BenchmarkGeneratedToolRun(b *testing.B) {
	benchGenerated(b, 64, "return 0", `"result":0`)
}

// BenchmarkGeneratedToolRunOneCall is a run of one inner call, over 1 and
// over 64 servers × 20 tools, and a direct tools/call of the same tool: a
// run's cost, and an inner call's, should not grow with the tools.
func BenchmarkGeneratedToolRunOneCall(b *testing.B) {
	for _, servers := range []int{1, 64} {
		b.Run(fmt.Sprintf("servers=%d/empty", servers), func(b *testing.B) {
			benchGenerated(b, servers, "return 0", `"result":0`)
		})
		b.Run(fmt.Sprintf("servers=%d/run", servers), func(b *testing.B) {
			benchGenerated(b, servers, "return await servers.s00.echo_7({x: 1})", `"calls":1`)
		})
		b.Run(fmt.Sprintf("servers=%d/direct", servers), func(b *testing.B) {
			benchGenerated(b, servers, "", `s00/echo_7`)
		})
	}
}

func benchGenerated(b *testing.B, n int, script, want string) {
	r := gateway.NewRouter(gateway.RouterOptions{})
	g := gateway.New(r, gateway.Info{Name: "bench"})
	servers := addEchoServers(r, n)
	if err := r.SetBuiltins([]gateway.Builtin{Builtin(r, Options{Logger: slog.New(slog.DiscardHandler), Runners: testRunners})}); err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	s, _, _ := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`))
	defer s.Close()
	args, _ := json.Marshal(map[string]any{"name": "code-mode", "arguments": map[string]any{"name": "all", "servers": servers}})
	s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: args}, nil)
	params, _ := json.Marshal(map[string]any{"name": "code-mode-all", "arguments": map[string]any{"script": script}})
	if script == "" {
		params = json.RawMessage(`{"name":"echo_7","arguments":{"x":1}}`) // s00's: the first server keeps its names
	}
	for b.Loop() {
		reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`2`), Method: "tools/call", Params: params}, nil)
		if !strings.Contains(string(reply.Result), want) {
			b.Fatalf("%s %s", reply.Result, reply.Error)
		}
	}
}
