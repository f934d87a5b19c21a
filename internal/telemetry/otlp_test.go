package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestOTLPConfig(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		endpoint string
		err      string
	}{
		{nil, "http://localhost:4318/v1/traces", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"}, "https://c/otlp/v1/traces", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}, "http://t:1/custom", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1"}, "http://t:1/", ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, "", `OTEL_EXPORTER_OTLP_ENDPOINT="c:4318": want an http:// or https:// URL`},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "", `OTEL_EXPORTER_OTLP_TIMEOUT="soon": want a number of milliseconds`},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "zstd"}, "", `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION="zstd": want gzip or none`},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "", `OTEL_EXPORTER_OTLP_HEADERS: "novalue" is not key=value`},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, "", "OTEL_EXPORTER_OTLP_CERTIFICATE: open /nonexistent/ca.pem"},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/k.pem"}, "", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together"},
	} {
		c, err := readOTLPConfig(envOf(tc.env))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one containing %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if c.endpoint != tc.endpoint {
			t.Errorf("%v: endpoint %q, want %q", tc.env, c.endpoint, tc.endpoint)
		}
	}
	c, err := readOTLPConfig(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":        "api-key=a%20b, x-tenant=one",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-tenant=two",
		"OTEL_EXPORTER_OTLP_TIMEOUT":        "2500",
		"OTEL_EXPORTER_OTLP_COMPRESSION":    "gzip",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.headers["Api-Key"] != "a b" || c.headers["X-Tenant"] != "two" || c.timeout != 2500*time.Millisecond || !c.gzip {
		t.Errorf("headers %v, timeout %v, gzip %v", c.headers, c.timeout, c.gzip)
	}
}

// receiver is an OTLP/HTTP receiver answering with the statuses given, in
// turn, then 200.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	requests int
	headers  []http.Header
	exports  []*coltracepb.ExportTraceServiceRequest
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	if len(r.statuses) > 0 {
		st := r.statuses[0]
		r.statuses = r.statuses[1:]
		http.Error(w, "not now", st)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.exports = append(r.exports, &ex)
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// recordSpans makes a parent span (remote parent, server) and a child
// (client, error status, an event, a link) with attributes of every type.
func recordSpans(t *testing.T) (spans []sdktrace.ReadOnlySpan, parent trace.SpanContext) {
	t.Helper()
	rec := sdktrace.NewSimpleSpanProcessor(&collect{out: &spans})
	res := resource.NewSchemaless(attribute.String("service.name", "mcp-gateway"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	psid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	tr := tp.Tracer("gw", trace.WithInstrumentationVersion("1.2"))
	ctx, server := tr.Start(ctx, "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
	_, client := tr.Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.String("why", "cause")}}))
	client.SetAttributes(attribute.Bool("b", true), attribute.Int64("i", -7), attribute.Float64("f", 1.5),
		attribute.String("s", "x"), attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}))
	client.AddEvent("retry", trace.WithAttributes(attribute.Int("n", 2)))
	client.SetStatus(codes.Error, "upstream failed")
	client.End()
	server.SetStatus(codes.Ok, "")
	server.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return spans, parent
}

type collect struct{ out *[]sdktrace.ReadOnlySpan }

func (c *collect) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	*c.out = append(*c.out, s...)
	return nil
}
func (c *collect) Shutdown(context.Context) error { return nil }

func TestOTLPExportEncodes(t *testing.T) {
	spans, parent := recordSpans(t)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	e, err := newOTLPExporter(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20k", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if len(rcv.exports) != 1 {
		t.Fatalf("%d exports decoded (%d requests), want 1", len(rcv.exports), rcv.requests)
	}
	if h := rcv.headers[0]; h.Get("Authorization") != "Bearer k" || h.Get("Content-Type") != "application/x-protobuf" || h.Get("Content-Encoding") != "gzip" {
		t.Errorf("request headers %v", h)
	}
	rs := rcv.exports[0].ResourceSpans
	if len(rs) != 1 || len(rs[0].ScopeSpans) != 1 {
		t.Fatalf("resource spans %v", rs)
	}
	if a := rs[0].Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "mcp-gateway" {
		t.Errorf("resource attributes %v", a)
	}
	ss := rs[0].ScopeSpans[0]
	if ss.Scope.Name != "gw" || ss.Scope.Version != "1.2" || len(ss.Spans) != 2 {
		t.Fatalf("scope %v with %d spans", ss.Scope, len(ss.Spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range ss.Spans {
		byName[s.Name] = s
	}
	server, client := byName["POST /mcp"], byName["tools/call echo"]
	if server == nil || client == nil {
		t.Fatalf("spans %v", byName)
	}
	if hex.EncodeToString(server.TraceId) != parent.TraceID().String() || hex.EncodeToString(server.ParentSpanId) != parent.SpanID().String() {
		t.Errorf("server span trace %x parent %x, want %s %s", server.TraceId, server.ParentSpanId, parent.TraceID(), parent.SpanID())
	}
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER || client.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds %v %v", server.Kind, client.Kind)
	}
	if server.Flags != 0x301 || client.Flags != 0x101 { // sampled; the server's parent remote, the client's local
		t.Errorf("flags %#x %#x, want 0x301 0x101", server.Flags, client.Flags)
	}
	if string(client.ParentSpanId) != string(server.SpanId) {
		t.Errorf("client's parent %x, want the server span %x", client.ParentSpanId, server.SpanId)
	}
	if server.Status.Code != tracepb.Status_STATUS_CODE_OK || client.Status.Code != tracepb.Status_STATUS_CODE_ERROR || client.Status.Message != "upstream failed" {
		t.Errorf("statuses %v %v", server.Status, client.Status)
	}
	if server.StartTimeUnixNano == 0 || server.EndTimeUnixNano < server.StartTimeUnixNano {
		t.Errorf("server span times %d %d", server.StartTimeUnixNano, server.EndTimeUnixNano)
	}
	got := map[string]string{}
	for _, kv := range client.Attributes {
		got[kv.Key] = kv.Value.String()
	}
	for k, want := range map[string]string{"b": "bool_value:true", "i": "int_value:-7", "f": "double_value:1.5", "s": `string_value:"x"`,
		"ss": `array_value:{values:{string_value:"a"} values:{string_value:"b"}}`, "is": "array_value:{values:{int_value:1} values:{int_value:2}}"} {
		if strings.Join(strings.Fields(got[k]), " ") != want {
			t.Errorf("attribute %s = %s, want %s", k, got[k], want)
		}
	}
	if len(client.Events) != 1 || client.Events[0].Name != "retry" || client.Events[0].Attributes[0].Value.GetIntValue() != 2 {
		t.Errorf("events %v", client.Events)
	}
	if len(client.Links) != 1 || hex.EncodeToString(client.Links[0].SpanId) != parent.SpanID().String() || client.Links[0].Attributes[0].Key != "why" {
		t.Errorf("links %v", client.Links)
	}
}

func TestOTLPExportRetries(t *testing.T) {
	spans, _ := recordSpans(t)
	rcv := &receiver{statuses: []int{http.StatusServiceUnavailable}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	e, err := newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/v1/traces"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if rcv.requests != 2 || len(rcv.exports) != 1 {
		t.Errorf("%d requests, %d exports; want 2 (503, then 200) and 1", rcv.requests, len(rcv.exports))
	}

	// Not retryable: one request, the receiver's answer in the error.
	rcv = &receiver{statuses: []int{http.StatusBadRequest}}
	srv2 := httptest.NewServer(rcv)
	defer srv2.Close()
	e, _ = newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv2.URL + "/v1/traces"}))
	err = e.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: not now") || rcv.requests != 1 {
		t.Errorf("error %v after %d requests; want the 400 and its body after 1", err, rcv.requests)
	}

	// Retryable until the timeout.
	rcv = &receiver{statuses: []int{503, 503, 503, 503, 503, 503, 503, 503}}
	srv3 := httptest.NewServer(rcv)
	defer srv3.Close()
	e, _ = newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv3.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "700"}))
	err = e.ExportSpans(context.Background(), spans)
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") || !strings.Contains(err.Error(), "gave up") {
		t.Errorf("error %v, want the 503 and that it gave up", err)
	}
	_ = e.Shutdown(context.Background())
	if err := e.ExportSpans(context.Background(), spans); err != nil {
		t.Errorf("export after Shutdown: %v, want a quiet drop", err)
	}
}

// TestOTLPEncodeValues: every attribute type, zero values (a set oneof
// member is sent even when zero) and lengths past one and two varint bytes
// read back as they were, by the generated decoder.
func TestOTLPEncodeValues(t *testing.T) {
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&collect{out: &spans})))
	long := strings.Repeat("ü", 10000) // 20000 bytes: a three-byte length inside four nested lengths
	_, span := tp.Tracer("gw").Start(context.Background(), "s")
	span.SetAttributes(attribute.Bool("f", false), attribute.Int64("zero", 0), attribute.Float64("fz", 0), attribute.String("empty", ""),
		attribute.String("long", long), attribute.BoolSlice("bs", []bool{true, false}), attribute.Float64Slice("fs", []float64{-2.5}),
		attribute.Int("neg", -1))
	span.End()
	_ = tp.Shutdown(context.Background())

	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeExport(spans, 0), &ex); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range ex.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes {
		if kv.Key == "long" {
			if kv.Value.GetStringValue() != long {
				t.Errorf("long: %d bytes back, want %d", len(kv.Value.GetStringValue()), len(long))
			}
			continue
		}
		got[kv.Key] = strings.Join(strings.Fields(kv.Value.String()), " ")
	}
	for k, want := range map[string]string{"f": "bool_value:false", "zero": "int_value:0", "fz": "double_value:0", "empty": `string_value:""`,
		"bs": "array_value:{values:{bool_value:true} values:{bool_value:false}}", "fs": "array_value:{values:{double_value:-2.5}}", "neg": "int_value:-1"} {
		if got[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, got[k], want)
		}
	}
}

// gatewaySpans are 2n spans as the gateway makes them for n traced calls.
func gatewaySpans(n int) []sdktrace.ReadOnlySpan {
	var spans []sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&collect{out: &spans})))
	for range n {
		ctx, s := tp.Tracer("gw").Start(context.Background(), "tools/call echo", trace.WithSpanKind(trace.SpanKindServer))
		s.SetAttributes(attribute.String(attrMethod, "tools/call"), attribute.String(attrRequestID, "7"),
			attribute.String(attrSessionID, "0123456789abcdef"), attribute.String(attrProtocolVersion, "2025-11-25"), attribute.String(attrToolName, "echo"))
		_, c := tp.Tracer("gw").Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient))
		c.SetAttributes(attribute.String(attrMethod, "tools/call"), attribute.String(attrServer, "echo"), attribute.String(attrToolName, "echo"))
		c.End()
		s.End()
	}
	return spans
}

// A default batch of the gateway's spans, with the request's headers, fits
// the write buffer of the exporter's connections: net/http writes it from
// there, where a larger body is copied through a buffer allocated for each
// export.
func TestOTLPBatchFitsWriteBuffer(t *testing.T) {
	e, err := newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.client.Transport.(*http.Transport).WriteBufferSize; got != exportWriteBuffer {
		t.Errorf("the exporter's write buffer is %d bytes, want %d", got, exportWriteBuffer)
	}
	body := (&otlpExporter{}).encode(gatewaySpans(DefaultExportBatch / 2))
	if len(body)+1<<10 > exportWriteBuffer {
		t.Errorf("a batch of %d spans is %d bytes: it and its headers do not fit a write buffer of %d", DefaultExportBatch, len(body), exportWriteBuffer)
	}
}

// BenchmarkOTLPEncode encodes a batch of 64 of the gateway's spans.
func BenchmarkOTLPEncode(b *testing.B) {
	spans := gatewaySpans(32)
	e := &otlpExporter{}
	b.ReportAllocs()
	for b.Loop() {
		_ = e.encode(spans)
	}
}

// A body is made of about the size it needs from the second export on, and
// reads the same as one made with room to spare.
func TestOTLPExportBodySized(t *testing.T) {
	spans, _ := recordSpans(t)
	e := &otlpExporter{}
	first := e.encode(spans)
	for range 3 {
		body := e.encode(spans)
		if !bytes.Equal(body, first) {
			t.Fatalf("the body changed between exports of the same spans")
		}
		if room := len(body)/8 + 2*len(spans) + 256; cap(body)-len(body) > room {
			t.Errorf("body of %d bytes in a buffer of %d: want at most %d spare", len(body), cap(body), room)
		}
	}
	if want := encodeExport(spans, 1<<16); !bytes.Equal(first, want) {
		t.Errorf("the body depends on the buffer's first size")
	}
}

// An endpoint's password never reaches an error (the log).
func TestOTLPExportErrorHidesPassword(t *testing.T) {
	rcv := &receiver{statuses: []int{http.StatusUnauthorized}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	e, err := newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)}))
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := recordSpans(t)
	err = e.ExportSpans(context.Background(), spans)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("error %v: want the 401, without the password", err)
	}
}

func TestOTLPAnswerText(t *testing.T) {
	for _, tc := range []struct{ ct, body, want string }{
		{"text/plain", "bad batch\n", ": bad batch"},
		{"application/x-protobuf", "\x08\x03\x12\x03bad", ""},
		{"", "", ""},
		{"text/plain", "a\x00b", `: "a\x00b"`},
		{"text/plain", strings.Repeat("x", 300), ": " + strings.Repeat("x", 200) + "…"},
	} {
		if got := answerText(tc.ct, []byte(tc.body)); got != tc.want {
			t.Errorf("answerText(%q, %q) = %q, want %q", tc.ct, tc.body, got, tc.want)
		}
	}
}
