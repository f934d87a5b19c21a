package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkEmptyRun is a run's own cost over 1 280 tools: the engine, the
// program's compilation, its functions (made when first reached).
func BenchmarkEmptyRun(b *testing.B) {
	var tools []Tool
	for s := range 64 {
		for t := range 20 {
			tools = append(tools, Tool{Server: fmt.Sprintf("s%02d", s), Name: fmt.Sprintf("echo_%d", t), Def: json.RawMessage(`{}`)})
		}
	}
	for b.Loop() {
		out := Run(context.Background(), Program{Source: `return 0`, Tools: tools})
		if out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}
