package gateway

import (
	"sync/atomic"
	"testing"
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
