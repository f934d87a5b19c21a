package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Telemetry is the gateway's observability. Each field left nil is off; a
// nil *Telemetry is entirely off and costs nothing.
type Telemetry struct {
	// Metrics, when set, counts and times every request and call.
	Metrics *Metrics
	// Tracer, when set, makes a span per client request and per call
	// forwarded to a server, and passes the trace context on.
	Tracer trace.Tracer
	// CallLog, when set, receives one info line per forwarded call.
	CallLog *slog.Logger
}

// Attribute keys of the OpenTelemetry MCP semantic conventions, and the
// gateway's own (mcp_gateway.*) where they name nothing.
const (
	attrMethod          = "mcp.method.name"
	attrSessionID       = "mcp.session.id"
	attrProtocolVersion = "mcp.protocol.version"
	attrRequestID       = "jsonrpc.request.id"
	attrToolName        = "gen_ai.tool.name"
	attrPromptName      = "gen_ai.prompt.name"
	attrErrorType       = "error.type"
	attrServer          = "mcp_gateway.server"
)

// Request is what the front knows of a client request as it arrives.
type Request struct {
	Era             string // "session" (2025-11-25 and earlier) or "stateless" (2026-07-28)
	Method          string
	ID              json.RawMessage
	Params          json.RawMessage
	SessionID       string      // the session's id as the front logs it; "" without one
	ProtocolVersion string      // "" when unknown
	Header          http.Header // nil for the stdio front
}

type requestKey struct{}

// requestContext is a request's context, carrying when it began to the
// calls it makes: one allocation, where a context.WithValue of a
// *requestState was two on every request telemetry records.
type requestContext struct {
	context.Context
	start time.Time
}

func (c *requestContext) Value(key any) any {
	if key == (requestKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func noop(gateway.Reply) {}

// StartRequest records a client request as the front receives it. It
// returns the context to handle it in (carrying its span) and a function
// the front calls with the answer.
func (t *Telemetry) StartRequest(ctx context.Context, r Request) (context.Context, func(gateway.Reply)) {
	if t == nil {
		return ctx, noop
	}
	ctx = &requestContext{Context: ctx, start: time.Now()}
	if t.Metrics != nil {
		t.Metrics.request(r.Era, r.Method)
	}
	if t.Tracer == nil && t.CallLog == nil {
		return ctx, noop
	}
	meta := wire.Get(r.Params, "_meta")
	traceparent, _ := wire.GetString(meta, "traceparent")
	tracestate, _ := wire.GetString(meta, "tracestate")
	var header propagation.TextMapCarrier
	if r.Header != nil {
		header = headerCarrier(r.Header)
	}
	ctx = remoteParent(ctx, traceparent, tracestate, header)
	if t.Tracer == nil {
		return ctx, noop // the client's trace id reaches the call log
	}
	// The method, the name and the id are the client's, unchecked yet (an
	// unknown method or tool is refused later): bounded here, so that one
	// client cannot make span names without end, nor a span (and the
	// export batch holding it) megabytes long.
	method := boundedMethod(r.Method)
	name, _ := wire.GetString(r.Params, "name")
	name = clip(name)
	ctx, span := t.Tracer.Start(ctx, spanName(method, name), serverSpan...)
	// Few attributes: each costs at the span's start, its end and its export.
	a := getAttrs()
	attrs := append(a[:0], attribute.String(attrMethod, method))
	if len(r.ID) > 0 {
		attrs = append(attrs, attribute.String(attrRequestID, clip(requestID(r.ID))))
	}
	if r.SessionID != "" {
		attrs = append(attrs, attribute.String(attrSessionID, r.SessionID))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String(attrProtocolVersion, r.ProtocolVersion))
	}
	attrs = appendTarget(attrs, r.Method, name)
	span.SetAttributes(attrs...)
	putAttrs(a)
	rmethod := r.Method // the closure holds this, not the whole Request
	return ctx, func(reply gateway.Reply) {
		if et := replyErrorType(rmethod, reply); et != "" {
			span.SetAttributes(attribute.String(attrErrorType, et))
			span.SetStatus(codes.Error, et)
		}
		span.End()
	}
}

// ForSandbox returns the telemetry of one sandbox's gateway (host mode):
// its metrics labelled sandbox="<name>" (see Metrics.ForSandbox), its call
// log lines naming it. forget removes its metrics when the sandbox goes.
func (t *Telemetry) ForSandbox(name string) (_ *Telemetry, forget func()) {
	if t == nil {
		return nil, func() {}
	}
	out := *t
	forget = func() {}
	if t.Metrics != nil {
		out.Metrics, forget = t.Metrics.ForSandbox(name)
	}
	if t.CallLog != nil {
		out.CallLog = t.CallLog.With("sandbox", name)
	}
	return &out, forget
}

// SlowClientDisconnect counts a client stream given up as too slow.
func (t *Telemetry) SlowClientDisconnect() {
	if t != nil {
		t.Metrics.SlowClientDisconnect()
	}
}

// Observer returns the gateway.Observer that records the calls of a
// gateway, or nil when nothing is on.
func (t *Telemetry) Observer() gateway.Observer {
	if t == nil || (t.Metrics == nil && t.Tracer == nil && t.CallLog == nil) {
		return nil
	}
	return observer{t}
}

type observer struct{ t *Telemetry }

// TraceBack puts the call's trace context in the _meta of what its server
// sends the client during the call, unless the server put its own there
// (its span, a child of the call's, says more).
func (o observer) TraceBack(ctx context.Context, params json.RawMessage) json.RawMessage {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return params
	}
	meta := wire.Get(params, "_meta")
	if wire.Get(meta, "traceparent") != nil {
		return params
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	tp := "00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-" + hex.EncodeToString([]byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	meta, err := wire.Set(meta, "traceparent", wire.AppendString(nil, tp))
	if err == nil && sc.TraceState().Len() > 0 {
		meta, err = wire.Set(meta, "tracestate", wire.AppendString(nil, sc.TraceState().String()))
	}
	if err != nil {
		return params
	}
	if out, err := wire.Set(params, "_meta", meta); err == nil {
		return out
	}
	return params
}

func (o observer) ListRefetched(server, method string) {
	if m := o.t.Metrics; m != nil && m.callSet != nil {
		m.refetches.WithLabelValues(server, method).Inc()
	}
}

func (o observer) StartCall(ctx context.Context, c gateway.CallInfo) (context.Context, func(gateway.CallEnd)) {
	began := time.Now()
	if st, ok := ctx.Value(requestKey{}).(*requestContext); ok {
		began = st.start // the total runs from the client's request
	}
	t := o.t
	var sm *serverMetrics
	if t.Metrics != nil && t.Metrics.callSet != nil {
		sm = t.Metrics.callStarted(c.Server, c.RequestBytes)
	}
	var span trace.Span
	if t.Tracer != nil {
		ctx, span = t.Tracer.Start(ctx, spanName(c.Method, c.Name), clientSpan...)
		a := getAttrs()
		attrs := append(a[:0], attribute.String(attrMethod, c.Method), attribute.String(attrServer, c.Server))
		span.SetAttributes(appendTarget(attrs, c.Method, c.Name)...)
		putAttrs(a)
	}
	return ctx, func(e gateway.CallEnd) {
		total := time.Since(began)
		outcome, errorType := classify(c.Method, e)
		responseBytes := len(e.Reply.Result) + len(e.Reply.Error)
		if sm != nil {
			t.Metrics.callEnded(sm, c, outcome, total, e.Upstream, responseBytes)
		}
		if span != nil {
			if errorType != "" { // the outcome, for a failure: error.type tells it
				span.SetAttributes(attribute.String(attrErrorType, errorType))
				span.SetStatus(codes.Error, errorType)
			}
			span.End()
		}
		if t.CallLog != nil {
			attrs := make([]slog.Attr, 0, 10)
			attrs = append(attrs, slog.String("server", c.Server), slog.String("method", c.Method))
			if c.Name != "" {
				attrs = append(attrs, slog.String("name", c.Name))
			}
			attrs = append(attrs, slog.String("outcome", outcome), slog.Duration("duration", total),
				slog.Duration("upstream", e.Upstream), slog.Int("request_bytes", c.RequestBytes), slog.Int("response_bytes", responseBytes))
			if errorType != "" && errorType != outcome {
				attrs = append(attrs, slog.String("error_type", errorType))
			}
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
				if span != nil { // the call's own span; without tracing, ctx holds the client's
					attrs = append(attrs, slog.String("span_id", sc.SpanID().String()))
				}
			}
			t.CallLog.LogAttrs(ctx, slog.LevelInfo, "call", attrs...)
		}
	}
}

// classify tells a call's outcome and its error.type ("" for none).
func classify(method string, e gateway.CallEnd) (outcome, errorType string) {
	switch {
	case e.Denied:
		return OutcomeDenied, OutcomeDenied
	case e.Timeout:
		return OutcomeTimeout, OutcomeTimeout
	case e.Err != nil:
		return OutcomeTransportError, OutcomeTransportError
	}
	if et := replyErrorType(method, e.Reply); et != "" {
		if et == OutcomeToolError {
			return OutcomeToolError, et
		}
		return OutcomeRPCError, et
	}
	return OutcomeOK, ""
}

// replyErrorType is the error.type of an answer: the JSON-RPC error code,
// "tool_error" for a tool result with isError, "" for success.
func replyErrorType(method string, r gateway.Reply) string {
	if r.Error != nil {
		code := wire.Get(r.Error, "code")
		if code == nil {
			return "_OTHER"
		}
		return string(code)
	}
	if method == "tools/call" && string(wire.Get(r.Result, "isError")) == "true" {
		return OutcomeToolError
	}
	return ""
}

// The options of the gateway's spans, made once: options built per call
// cost three allocations (the variadic slice, the attributes' interface,
// the SDK's copy of them).
var (
	serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// A span's attributes are set just after its start, from a pooled array:
// the SDK copies them into the span (Span.SetAttributes), so the array is
// free again at once. Given at the start instead (trace.WithAttributes)
// they would reach the sampler, but none of those OTEL_TRACES_SAMPLER
// names reads attributes, and they would cost two more allocations.
var attrPool = sync.Pool{New: func() any { return new([6]attribute.KeyValue) }}

func getAttrs() *[6]attribute.KeyValue { return attrPool.Get().(*[6]attribute.KeyValue) }

func putAttrs(a *[6]attribute.KeyValue) {
	*a = [6]attribute.KeyValue{} // the strings they hold may go
	attrPool.Put(a)
}

// spanName is "{mcp.method.name} {target}", the target being the tool or
// prompt name where there is one.
func spanName(method, name string) string {
	if name == "" || (method != "tools/call" && method != "prompts/get") {
		return method
	}
	k := [2]string{method, name}
	if v, ok := spanNames.Load(k); ok {
		return v.(string)
	}
	s := method + " " + name
	if spanNameCount.Load() < maxSpanNames {
		if _, loaded := spanNames.LoadOrStore(k, s); !loaded {
			spanNameCount.Add(1)
		}
	}
	return s
}

// spanNames keeps the span names made (two spans a call name each the same
// way), at most maxSpanNames: names come from clients, and past the bound a
// name is made for each span again.
var (
	spanNames     sync.Map // [2]string{method, name} → string
	spanNameCount atomic.Int32
)

const maxSpanNames = 4096

func appendTarget(attrs []attribute.KeyValue, method, name string) []attribute.KeyValue {
	switch {
	case name == "":
	case method == "tools/call":
		attrs = append(attrs, attribute.String(attrToolName, name))
	case method == "prompts/get":
		attrs = append(attrs, attribute.String(attrPromptName, name))
	}
	return attrs
}

// maxClientString bounds a client's string (a tool's name, a request id)
// in a span: longer ones are cut, on a rune boundary.
const maxClientString = 128

func clip(s string) string {
	if len(s) <= maxClientString {
		return s
	}
	return strings.ToValidUTF8(s[:maxClientString], "")
}

// requestID is a JSON-RPC id as a span attribute: a string's value, a number's digits.
func requestID(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// headerCarrier reads a request's traceparent and tracestate headers by
// their canonical keys: propagation.HeaderCarrier's Get canonicalises the
// lower-case names the propagator asks for, an allocation each request.
type headerCarrier http.Header

func (h headerCarrier) Get(key string) string {
	var v []string
	switch key {
	case "traceparent":
		v = h["Traceparent"]
	case "tracestate":
		v = h["Tracestate"]
	default:
		return http.Header(h).Get(key)
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
func (h headerCarrier) Set(key, v string) {}
func (h headerCarrier) Keys() []string    { return propagation.HeaderCarrier(h).Keys() }
