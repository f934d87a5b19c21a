package gateway

import (
	"encoding/json"
	"testing"
)

// A session-era server's result reaches a 2026-07-28 client marked as that
// era marks results: input_required when it carries inputRequests (a dual-era
// server's later round), complete otherwise; a mark the server set stays.
func TestCompleteMarksResultType(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain result", `{"content":[]}`, `{"content":[],"resultType":"complete"}`},
		{"input requests", `{"content":[],"inputRequests":{"step2":{"method":"elicitation/create","params":{}}},"requestState":"round=2"}`,
			`{"content":[],"inputRequests":{"step2":{"method":"elicitation/create","params":{}}},"requestState":"round=2","resultType":"input_required"}`},
		{"null input requests", `{"content":[],"inputRequests":null}`, `{"content":[],"inputRequests":null,"resultType":"complete"}`},
		{"marked by the server", `{"content":[],"resultType":"complete"}`, `{"content":[],"resultType":"complete"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := complete(Reply{Result: json.RawMessage(tt.in)})
			if string(got.Result) != tt.want {
				t.Errorf("complete(%s) = %s, want %s", tt.in, got.Result, tt.want)
			}
		})
	}
	if got := complete(Reply{}); got.Result != nil {
		t.Errorf("an error reply got a result: %s", got.Result)
	}
}
