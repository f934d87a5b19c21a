package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		end          gateway.CallEnd
		outcome      string
		errorType    string
	}{
		{"ok", "tools/call", gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{"content":[]}`)}}, OutcomeOK, ""},
		{"isError false", "tools/call", gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{"isError":false}`)}}, OutcomeOK, ""},
		{"tool error", "tools/call", gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{"content":[],"isError":true}`)}}, OutcomeToolError, "tool_error"},
		{"isError outside tools/call", "prompts/get", gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{"isError":true}`)}}, OutcomeOK, ""},
		{"rpc error", "tools/call", gateway.CallEnd{Reply: gateway.Reply{Error: json.RawMessage(`{"code":-32602,"message":"x"}`)}}, OutcomeRPCError, "-32602"},
		{"transport", "tools/call", gateway.CallEnd{Err: errors.New("exited"), Reply: gateway.Reply{Error: json.RawMessage(`{"code":-32603,"message":"x"}`)}}, OutcomeTransportError, "transport_error"},
		{"timeout", "tools/call", gateway.CallEnd{Err: context.DeadlineExceeded, Timeout: true}, OutcomeTimeout, "timeout"},
		{"denied", "tools/call", gateway.CallEnd{Denied: true}, OutcomeDenied, "denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outcome, errorType := classify(tc.method, tc.end)
			if outcome != tc.outcome || errorType != tc.errorType {
				t.Errorf("classify = %q, %q; want %q, %q", outcome, errorType, tc.outcome, tc.errorType)
			}
		})
	}
}

func TestObserverMetrics(t *testing.T) {
	m := NewMetrics()
	tel := &Telemetry{Metrics: m}
	o := tel.Observer()
	info := gateway.CallInfo{Server: "mem", Method: "tools/call", Name: "read_graph", RequestBytes: 10}

	ctx, done := tel.StartRequest(context.Background(), Request{Era: "session", Method: "tools/call"})
	_, end := o.StartCall(ctx, info)
	if got := testutil.ToFloat64(m.inFlight.WithLabelValues("mem")); got != 1 {
		t.Errorf("in flight during the call = %v, want 1", got)
	}
	end(gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{"isError":true}`)}, Upstream: time.Millisecond})
	done(gateway.Reply{})
	if got := testutil.ToFloat64(m.inFlight.WithLabelValues("mem")); got != 0 {
		t.Errorf("in flight after the call = %v, want 0", got)
	}
	_, end = o.StartCall(context.Background(), info)
	end(gateway.CallEnd{Err: errors.New("gone"), Reply: gateway.Reply{Error: json.RawMessage(`{"code":-32603,"message":"x"}`)}})

	for _, c := range []struct {
		outcome string
		want    float64
	}{{OutcomeToolError, 1}, {OutcomeTransportError, 1}, {OutcomeOK, 0}} {
		if got := testutil.ToFloat64(m.calls.WithLabelValues("mem", "tools/call", "read_graph", c.outcome)); got != c.want {
			t.Errorf("calls_total{outcome=%q} = %v, want %v", c.outcome, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.requestBytes.WithLabelValues("mem")); got != 20 {
		t.Errorf("request bytes = %v, want 20", got)
	}
	if got := testutil.ToFloat64(m.responseBytes.WithLabelValues("mem")); got != float64(len(`{"isError":true}`)+len(`{"code":-32603,"message":"x"}`)) {
		t.Errorf("response bytes = %v", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("session", "tools/call")); got != 1 {
		t.Errorf("requests_total = %v, want 1", got)
	}
	o.ListRefetched("mem", "tools/list")
	if got := testutil.ToFloat64(m.refetches.WithLabelValues("mem", "tools/list")); got != 1 {
		t.Errorf("list_refetches_total = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.overhead); n != 1 {
		t.Errorf("overhead series = %d, want 1", n)
	}
}

func TestMethodLabelBounded(t *testing.T) {
	m := NewMetrics()
	m.request("session", "made/up/"+strings.Repeat("x", 10))
	if got := testutil.ToFloat64(m.requests.WithLabelValues("session", "other")); got != 1 {
		t.Errorf("an unknown method counts as other: got %v", got)
	}
}

func TestScrape(t *testing.T) {
	m := NewMetrics()
	started := time.Unix(1700000000, 0)
	m.WatchServers(func() map[string]gateway.ServerStatus {
		return map[string]gateway.ServerStatus{"mem": {State: "ready", Tools: 9, Restarts: 2, Started: started}}
	})
	m.WatchSessions(func() map[string]int { return map[string]int{"2025-11-25": 3} })
	m.SlowClientDisconnect()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`mcp_gateway_upstream_state{server="mem",state="ready"} 1`,
		`mcp_gateway_upstream_state{server="mem",state="failed"} 0`,
		`mcp_gateway_upstream_restarts_total{server="mem"} 2`,
		`mcp_gateway_upstream_start_time_seconds{server="mem"} 1.7e+09`,
		`mcp_gateway_upstream_tools{server="mem"} 9`,
		`mcp_gateway_sessions{protocol_version="2025-11-25"} 3`,
		`mcp_gateway_slow_client_disconnects_total 1`,
		`go_goroutines `,
		`process_start_time_seconds `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
}

func TestLintClean(t *testing.T) {
	m := NewMetrics()
	o := (&Telemetry{Metrics: m}).Observer()
	_, end := o.StartCall(context.Background(), gateway.CallInfo{Server: "a", Method: "tools/call", Name: "t"})
	end(gateway.CallEnd{})
	o.ListRefetched("a", "tools/list")
	m.request("session", "tools/call")
	problems, err := testutil.GatherAndLint(m.gat)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "mcp_gateway_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

func newRecorder() (*tracetest.SpanRecorder, trace.Tracer) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	return rec, tp.Tracer("test")
}

func TestTraceFromMeta(t *testing.T) {
	rec, tracer := newRecorder()
	var logged strings.Builder
	tel := &Telemetry{Tracer: tracer, CallLog: slog.New(slog.NewTextHandler(&logged, nil))}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	params := json.RawMessage(`{"name":"echo","arguments":{"secret":"hunter2"},"_meta":{"traceparent":"` + parent + `"}}`)
	header := http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}
	ctx, done := tel.StartRequest(context.Background(), Request{Era: "session", Method: "tools/call", ID: json.RawMessage(`7`), Params: params,
		SessionID: "abcd1234", ProtocolVersion: "2025-11-25", Header: header})
	callCtx, end := tel.Observer().StartCall(ctx, gateway.CallInfo{Server: "everything", Method: "tools/call", Name: "echo", RequestBytes: len(params)})
	if sc := trace.SpanContextFromContext(callCtx); sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("the call's trace id = %s, want the one of _meta (which wins over the header)", sc.TraceID())
	}
	end(gateway.CallEnd{Reply: gateway.Reply{Error: json.RawMessage(`{"code":-32602,"message":"bad"}`)}})
	done(gateway.Reply{Error: json.RawMessage(`{"code":-32602,"message":"bad"}`)})

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	call, req := spans[0], spans[1]
	if req.Name() != "tools/call echo" || req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span %q kind %v", req.Name(), req.SpanKind())
	}
	if req.Parent().SpanID().String() != "00f067aa0ba902b7" || !req.Parent().IsRemote() {
		t.Errorf("request span's parent = %v, want the client's span", req.Parent())
	}
	if call.Parent().SpanID() != req.SpanContext().SpanID() || call.SpanKind() != trace.SpanKindClient {
		t.Errorf("call span is not the request span's client child")
	}
	attrs := map[string]string{}
	for _, kv := range req.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	for k, v := range map[string]string{attrMethod: "tools/call", attrToolName: "echo", attrSessionID: "abcd1234",
		attrProtocolVersion: "2025-11-25", attrRequestID: "7", attrErrorType: "-32602"} {
		if attrs[k] != v {
			t.Errorf("request span %s = %q, want %q", k, attrs[k], v)
		}
	}
	callAttrs := map[string]string{}
	for _, kv := range call.Attributes() {
		callAttrs[string(kv.Key)] = kv.Value.Emit()
	}
	if callAttrs[attrServer] != "everything" || callAttrs[attrErrorType] != "-32602" || callAttrs[attrToolName] != "echo" {
		t.Errorf("call span attributes %v", callAttrs)
	}
	line := logged.String()
	for _, want := range []string{"msg=call", "server=everything", "name=echo", "outcome=rpc_error", "trace_id=4bf92f3577b34da6a3ce929d0e0e4736", "request_bytes="} {
		if !strings.Contains(line, want) {
			t.Errorf("call log line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, "hunter2") {
		t.Errorf("the call log holds the arguments: %s", line)
	}
}

func TestTraceFromHeader(t *testing.T) {
	rec, tracer := newRecorder()
	tel := &Telemetry{Tracer: tracer}
	header := http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}
	_, done := tel.StartRequest(context.Background(), Request{Era: "stateless", Method: "tools/list", Params: json.RawMessage(`{}`), Header: header})
	done(gateway.Reply{Result: json.RawMessage(`{}`)})
	span := rec.Ended()[0]
	if span.SpanContext().TraceID().String() != "11111111111111111111111111111111" {
		t.Errorf("trace id %s, want the header's", span.SpanContext().TraceID())
	}
}

func TestCallLogWithoutTracing(t *testing.T) {
	var logged strings.Builder
	tel := &Telemetry{CallLog: slog.New(slog.NewJSONHandler(&logged, nil))}
	ctx, _ := tel.StartRequest(context.Background(), Request{Method: "tools/call",
		Params: json.RawMessage(`{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)})
	_, end := tel.Observer().StartCall(ctx, gateway.CallInfo{Server: "s", Method: "tools/call", Name: "t"})
	end(gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{}`)}})
	var rec map[string]any
	if err := json.Unmarshal([]byte(logged.String()), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || rec["outcome"] != "ok" || rec["level"] != "INFO" {
		t.Errorf("call log line %v", rec)
	}
}

func TestOffCostsNothing(t *testing.T) {
	var tel *Telemetry
	if tel.Observer() != nil || (&Telemetry{}).Observer() != nil {
		t.Error("an observer with everything off")
	}
	ctx := context.Background()
	if got, _ := tel.StartRequest(ctx, Request{}); got != ctx {
		t.Error("a nil Telemetry changed the context")
	}
	tel.SlowClientDisconnect()
}

func TestTracingConfigured(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := TracingConfigured(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.env, got, tc.want)
		}
	}
	_, err := NewTracerProvider(context.Background(), "v", func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc protocol: %v, want an error naming http/protobuf", err)
	}
}

// The gateway's export batch is DefaultExportBatch spans unless
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE names one (the SDK reads it then).
func TestBatchOptions(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int // 0: the SDK's own from the variable
	}{
		{"", DefaultExportBatch},
		{"  ", DefaultExportBatch},
		{"512", 0},
		{"16", 0},
	} {
		var o sdktrace.BatchSpanProcessorOptions
		for _, opt := range batchOptions(func(k string) string {
			return map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": tc.env}[k]
		}) {
			opt(&o)
		}
		if o.MaxExportBatchSize != tc.want {
			t.Errorf("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=%q: batch %d, want %d", tc.env, o.MaxExportBatchSize, tc.want)
		}
	}
}

// In host mode each sandbox's calls and servers carry its name, and a
// removed sandbox's series go with it.
func TestForSandbox(t *testing.T) {
	m := NewHostMetrics()
	tel := &Telemetry{Metrics: m}
	if (&Telemetry{Metrics: m}).Observer() == nil {
		t.Fatal("no observer")
	}
	a, forgetA := tel.ForSandbox("a")
	b, _ := tel.ForSandbox("b")
	for _, s := range []*Telemetry{a, b} {
		s.Metrics.WatchServers(func() map[string]gateway.ServerStatus {
			return map[string]gateway.ServerStatus{"mem": {State: "ready"}}
		})
	}
	_, end := a.Observer().StartCall(context.Background(), gateway.CallInfo{Server: "mem", Method: "tools/call", Name: "read_graph"})
	end(gateway.CallEnd{Reply: gateway.Reply{Result: json.RawMessage(`{}`)}})
	// The host's own Metrics count no calls (they have no call set): no panic.
	_, end = tel.Observer().StartCall(context.Background(), gateway.CallInfo{Server: "mem", Method: "tools/call"})
	end(gateway.CallEnd{})

	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{
		`mcp_gateway_calls_total{method="tools/call",outcome="ok",sandbox="a",server="mem",tool="read_graph"} 1`,
		`mcp_gateway_upstream_state{sandbox="a",server="mem",state="ready"} 1`,
		`mcp_gateway_upstream_state{sandbox="b",server="mem",state="ready"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, `sandbox="b",server="mem",tool`) {
		t.Error("sandbox b counts a's call")
	}
	forgetA()
	if body := scrape(); strings.Contains(body, `sandbox="a"`) || !strings.Contains(body, `sandbox="b"`) {
		t.Errorf("after forgetting a:\n%s", body)
	}
	if again, _ := tel.ForSandbox("a"); again == nil { // a sandbox of the same name again
		t.Error("a sandbox of a forgotten name")
	}
}

func TestTraceBack(t *testing.T) {
	_, tracer := newRecorder()
	o := (&Telemetry{Tracer: tracer}).Observer()
	ctx, end := o.StartCall(context.Background(), gateway.CallInfo{Server: "s", Method: "tools/call", Name: "t"})
	defer end(gateway.CallEnd{})
	sc := trace.SpanContextFromContext(ctx)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	for _, tc := range []struct{ in, want string }{
		{`{"progressToken":7,"progress":1}`, `{"progressToken":7,"progress":1,"_meta":{"traceparent":"` + want + `"}}`},
		{`{"messages":[],"_meta":{"x":1}}`, `{"messages":[],"_meta":{"x":1,"traceparent":"` + want + `"}}`},
		{`{"_meta":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"}}`, `{"_meta":{"traceparent":"00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01"}}`}, // the server's own
	} {
		if got := o.TraceBack(ctx, json.RawMessage(tc.in)); string(got) != tc.want {
			t.Errorf("TraceBack(%s)\n = %s\nwant %s", tc.in, got, tc.want)
		}
	}
	if got := o.TraceBack(context.Background(), json.RawMessage(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("without a span: %s", got)
	}
}

// A client's request span is named and labelled with what the client sent
// before anything checked it: an unknown method counts as "other", a long
// tool name or id is cut, so one client cannot make span names without
// end, nor spans megabytes long in everyone's export batch.
func TestRequestSpanBoundsClientStrings(t *testing.T) {
	rec, tracer := newRecorder()
	tel := &Telemetry{Tracer: tracer}
	long := strings.Repeat("x", 1<<20)
	cases := []struct {
		method, name, id string
		wantName         string
	}{
		{"tools/call", long, `"` + long + `"`, "tools/call " + long[:128]},
		{"x/" + long, "", "1", "other"},
	}
	for _, c := range cases {
		params, _ := json.Marshal(map[string]string{"name": c.name})
		_, done := tel.StartRequest(context.Background(), Request{Era: "session", Method: c.method, ID: json.RawMessage(c.id), Params: params})
		done(gateway.Reply{Result: json.RawMessage(`{}`)})
	}
	for i, span := range rec.Ended() {
		if span.Name() != cases[i].wantName {
			t.Errorf("span %d is named %.80q… (%d bytes), want %.80q", i, span.Name(), len(span.Name()), cases[i].wantName)
		}
		for _, kv := range span.Attributes() {
			if v := kv.Value.Emit(); len(v) > 128 {
				t.Errorf("span %d: attribute %s is %d bytes long", i, kv.Key, len(v))
			}
		}
	}
}

// With metrics on, a request's record costs one allocation (the context
// carrying its start to its calls); a client's trace context read from its
// headers costs less than one read from its _meta (a string to unquote).
func TestStartRequestAllocations(t *testing.T) {
	tel := &Telemetry{Metrics: NewMetrics()}
	req := Request{Era: "session", Method: "tools/call", ID: json.RawMessage(`7`), Params: json.RawMessage(`{"name":"echo"}`)}
	if n := testing.AllocsPerRun(100, func() {
		_, done := tel.StartRequest(context.Background(), req)
		done(gateway.Reply{})
	}); n != 1 {
		t.Errorf("StartRequest with metrics allocates %v objects, want 1", n)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tel.Tracer = tp.Tracer("test")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	inMeta := req
	inMeta.Params = json.RawMessage(`{"name":"echo","_meta":{"traceparent":"` + parent + `"}}`)
	inHeader := req
	inHeader.Header = http.Header{"Traceparent": {parent}}
	count := func(r Request) float64 {
		return testing.AllocsPerRun(100, func() {
			ctx, done := tel.StartRequest(context.Background(), r)
			if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Fatalf("trace id %s, want the client's", got)
			}
			done(gateway.Reply{})
		})
	}
	if h, m := count(inHeader), count(inMeta); h >= m {
		t.Errorf("a traceparent header costs %v allocations, in _meta %v: want fewer (no string to unquote, no key to canonicalise)", h, m)
	}
}
