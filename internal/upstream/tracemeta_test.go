package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func traceMetaContext(state string) context.Context {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState(state)
	return trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}))
}

const wantTraceparent = `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`

// The call's trace context lands in params._meta, the rest of params and of
// a _meta already there kept byte for byte; a client's tracestate goes when
// the span has none.
func TestWithTraceMeta(t *testing.T) {
	for _, tc := range []struct{ state, in, want string }{
		{"", `{"name":"echo","arguments":{"text":"hi"}}`, `{"name":"echo","arguments":{"text":"hi"},"_meta":{` + wantTraceparent + `}}`},
		{"", `{}`, `{"_meta":{` + wantTraceparent + `}}`},
		{"", ` { "name" : "echo" } `, ` { "name" : "echo" ,"_meta":{` + wantTraceparent + `}} `},
		{"", `{"name":"echo","_meta":{"progressToken":1}}`, `{"name":"echo","_meta":{"progressToken":1,` + wantTraceparent + `}}`},
		{"", `{"_meta":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01","tracestate":"a=b"}}`, `{"_meta":{` + wantTraceparent + `}}`},
		{"vendor=x", `{"name":"echo"}`, `{"name":"echo","_meta":{` + wantTraceparent + `,"tracestate":"vendor=x"}}`},
	} {
		got := withTraceMeta(traceMetaContext(tc.state), json.RawMessage(tc.in))
		if string(got) != tc.want {
			t.Errorf("withTraceMeta(%s) with tracestate %q\n = %s\nwant %s", tc.in, tc.state, got, tc.want)
		}
	}
	if in := json.RawMessage(`{"name":"echo"}`); string(withTraceMeta(context.Background(), in)) != string(in) {
		t.Errorf("without a span context the params must stay as they are")
	}
}

// The usual traced call (its params without _meta, no tracestate) costs one
// allocation: the new params.
func TestWithTraceMetaAllocations(t *testing.T) {
	ctx := traceMetaContext("")
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	if n := testing.AllocsPerRun(100, func() { _ = withTraceMeta(ctx, params) }); n != 1 {
		t.Errorf("withTraceMeta allocates %v objects a call, want 1", n)
	}
}

// BenchmarkTraceMeta is the upstream's share of a traced call: its trace
// context written into the params._meta sent to the server.
func BenchmarkTraceMeta(b *testing.B) {
	ctx := traceMetaContext("")
	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)
	b.ReportAllocs()
	for b.Loop() {
		_ = withTraceMeta(ctx, params)
	}
}
