package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/proto"
)

// manyTools are 64 servers × 20 tools.
func manyTools() []proto.Func {
	var tools []proto.Func
	for s := range 64 {
		for t := range 20 {
			tools = append(tools, proto.Func{Server: fmt.Sprintf("s%02d", s), Name: fmt.Sprintf("echo_%d", t)})
		}
	}
	return tools
}

// BenchmarkRunOneCallOfManyTools is the engine's run of one inner call
// over 1 280 tools (the call answered at once, without a process), their
// index kept across runs as a runner keeps it.
func BenchmarkRunOneCallOfManyTools(b *testing.B) {
	tools := manyTools()
	index := NewIndex(tools)
	call := func(ctx context.Context, i int, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`), nil
	}
	for b.Loop() {
		out := Run(context.Background(), Program{Source: `return await servers.s33.echo_7({message: "hi"})`, Tools: tools, Index: index, Call: call})
		if out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}
