package upstream

import (
	"context"
	"encoding/hex"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Trace context: a call whose context carries a span context (the
// gateway's span of the call, or with tracing off but the call log on, the
// client's own) passes it on to the server as W3C traceparent and
// tracestate: in the request's params._meta, as the OpenTelemetry MCP
// conventions say, and for HTTP servers in the HTTP headers too.

var traceContext = propagation.TraceContext{}

// withTraceMeta returns params with the span context of ctx in its _meta,
// replacing a traceparent and tracestate already there; params unchanged
// when ctx carries none.
func withTraceMeta(ctx context.Context, params json.RawMessage) json.RawMessage {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return params
	}
	// The value is built in a buffer on the stack: wire.Set copies it into
	// the one new params, where building it on the heap (the traceparent,
	// then the _meta object around it) cost three allocations a call more.
	var buf [128]byte
	meta := wire.Get(params, "_meta")
	ts := sc.TraceState().String()
	if meta == nil && ts == "" { // the usual call: a _meta of the traceparent alone
		v := append(buf[:0], `{"traceparent":`...)
		v = append(appendTraceparent(v, sc), '}')
		if out, err := wire.Set(params, "_meta", v); err == nil {
			return out
		}
		return params
	}
	meta, err := wire.Set(meta, "traceparent", appendTraceparent(buf[:0], sc))
	if err != nil {
		return params
	}
	if ts != "" {
		meta, err = wire.Set(meta, "tracestate", wire.AppendString(nil, ts))
	} else {
		meta, _ = wire.Delete(meta, "tracestate") // the client's, of another span
	}
	if err != nil {
		return params
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// appendTraceparent appends the W3C traceparent of sc as a JSON string.
func appendTraceparent(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, `"00-`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return append(b, '"')
}

// withSpanContext returns dst carrying the span context of src, if any.
func withSpanContext(dst, src context.Context) context.Context {
	if sc := trace.SpanContextFromContext(src); sc.IsValid() {
		return trace.ContextWithSpanContext(dst, sc)
	}
	return dst
}
