package upstream

import (
	"context"
	"encoding/json"
	"net/http"

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
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	meta := wire.Get(params, "_meta")
	var err error
	for _, key := range []string{"traceparent", "tracestate"} {
		v, ok := c[key]
		if !ok {
			meta, _ = wire.Delete(meta, key)
			continue
		}
		if meta, err = wire.Set(meta, key, wire.AppendString(nil, v)); err != nil {
			return params
		}
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// withSpanContext returns dst carrying the span context of src, if any.
func withSpanContext(dst, src context.Context) context.Context {
	if sc := trace.SpanContextFromContext(src); sc.IsValid() {
		return trace.ContextWithSpanContext(dst, sc)
	}
	return dst
}

// traceHeaders returns header with the span context of ctx as traceparent
// and tracestate headers (a copy), or header itself when ctx carries none.
func traceHeaders(ctx context.Context, header http.Header) http.Header {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return header
	}
	header = header.Clone()
	traceContext.Inject(ctx, propagation.HeaderCarrier(header))
	return header
}
