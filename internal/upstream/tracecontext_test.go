package upstream_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// A call whose context carries a span passes its trace context on in
// params._meta and, to an HTTP server, in the traceparent header; a call
// without one sends neither.
func TestTraceContextPassedOn(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=x")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, TraceState: ts})
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			srv := newSDKServer(t, mode)
			metas := make(chan map[string]any, 4)
			srv.server.AddTool(&mcp.Tool{Name: "meta", InputSchema: anyObject()}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				metas <- req.Params.Meta
				return textResult("ok"), nil
			})
			fx := newRemote(t, srv.url, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := fx.up.Call(ctx, "tools/call", json.RawMessage(`{"name":"meta","arguments":{},"_meta":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01","mine":1}}`)); err != nil {
				t.Fatal(err)
			}
			meta := <-metas
			if meta["traceparent"] != "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01" || meta["mine"] == nil {
				t.Errorf("without a span the client's _meta passes unchanged: %v", meta)
			}
			before := len(srv.requests())
			if _, err := fx.up.Call(trace.ContextWithSpanContext(ctx, sc), "tools/call", json.RawMessage(`{"name":"meta","arguments":{},"_meta":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01","mine":1}}`)); err != nil {
				t.Fatal(err)
			}
			meta = <-metas
			if meta["traceparent"] != want || meta["tracestate"] != "vendor=x" || meta["mine"] == nil {
				t.Errorf("_meta = %v, want traceparent %s, tracestate vendor=x and the client's own member", meta, want)
			}
			found := false
			for _, r := range srv.requests()[before:] {
				if r.method == "POST" && r.header.Get("Traceparent") == want {
					found = true
					if !strings.Contains(r.header.Get("Tracestate"), "vendor=x") {
						t.Errorf("tracestate header %q", r.header.Get("Tracestate"))
					}
				}
			}
			if !found {
				t.Errorf("no POST carried the traceparent header %s", want)
			}
		})
	}
}
