package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes what the gateway
// exports and keeps the spans, and each export with its headers.
type otlpReceiver struct {
	url string

	mu      sync.Mutex
	spans   []*tracepb.Span
	exports []otlpExport
	errs    []string
}

// otlpExport is one export request as the receiver got it.
type otlpExport struct {
	header http.Header
	req    *coltracepb.ExportTraceServiceRequest
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
			http.NotFound(w, req)
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
		b, err := io.ReadAll(body)
		var export coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &export)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.errs = append(r.errs, fmt.Sprintf("%s: %v", req.Header.Get("Content-Type"), err))
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range export.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.exports = append(r.exports, otlpExport{req.Header.Clone(), &export})
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(ts.Close)
	r.url = ts.URL
	return r
}

// waitSpans waits until the trace has n spans, and returns them.
func (r *otlpReceiver) waitSpans(t *testing.T, traceID string, n int) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		var got []*tracepb.Span
		for _, s := range r.spans {
			if hex.EncodeToString(s.TraceId) == traceID {
				got = append(got, s)
			}
		}
		errs := r.errs
		r.mu.Unlock()
		if len(errs) > 0 {
			t.Fatalf("the receiver could not decode an export: %v", errs)
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans after 30s, want %d", traceID, len(got), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// traceServer is a Go SDK MCP server over streamable HTTP that records the
// trace context each tools/call reached it with.
type traceServer struct {
	url string

	mu      sync.Mutex
	meta    []string // _meta.traceparent of each call
	headers []string // the traceparent header of each POST carrying a tools/call
}

func startTraceServer(t *testing.T) *traceServer {
	t.Helper()
	ts := &traceServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "traced", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "traced", Description: "Records the trace context it was called with."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.Meta["traceparent"].(string)
			if token := req.Params.GetProgressToken(); token != nil { // a progress and a request the gateway takes back to the client
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 1})
				if _, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1,
					Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}); err != nil {
					return nil, nil, err
				}
			}
			ts.mu.Lock()
			ts.meta = append(ts.meta, tp)
			ts.headers = append(ts.headers, req.Extra.Header.Get("Traceparent"))
			ts.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "traced"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	ts.url = hs.URL + "/mcp"
	return ts
}

func (ts *traceServer) last() (meta, header string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.meta[len(ts.meta)-1], ts.headers[len(ts.headers)-1]
}

// headerTransport adds a traceparent header to every request.
type headerTransport struct {
	traceparent string
	base        http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", h.traceparent)
	return h.base.RoundTrip(r)
}

// One trace from the agent through the gateway into an HTTP MCP server:
// the client's span is the parent of the gateway's request span, whose
// child is the gateway's call span, and the server receives that span's
// context in _meta and in its HTTP headers; the gateway exports its spans
// over OTLP/HTTP, configured by the standard environment variables.
func TestTracingEndToEnd(t *testing.T) {
	receiver := startOTLPReceiver(t)
	server := startTraceServer(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_SERVICE_NAME", "gateway-under-test")
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"remote": {"url": %q, "transport": "http"}}`, server.url), "--log-calls")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan  = "00f067aa0ba902b7"
	)
	t.Run("traceparent in _meta", func(t *testing.T) {
		progress, sampling := make(chan string, 1), make(chan string, 1)
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				tp, _ := req.Params.Meta["traceparent"].(string)
				select {
				case progress <- tp:
				default:
				}
			},
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				tp, _ := req.Params.Meta["traceparent"].(string)
				select {
				case sampling <- tp:
				default:
				}
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hello"}, Model: "m"}, nil
			}})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url,
			HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "traced", Arguments: map[string]any{},
			Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01", "progressToken": "p1"}})
		if err != nil {
			t.Fatal(err)
		}
		spans := receiver.waitSpans(t, clientTrace, 2)
		byKind := map[tracepb.Span_SpanKind]*tracepb.Span{}
		for _, s := range spans {
			byKind[s.Kind] = s
		}
		front, call := byKind[tracepb.Span_SPAN_KIND_SERVER], byKind[tracepb.Span_SPAN_KIND_CLIENT]
		if front == nil || call == nil {
			t.Fatalf("spans %v, want a server span and a client span", spans)
		}
		if got := hex.EncodeToString(front.ParentSpanId); got != clientSpan {
			t.Errorf("the gateway's request span has parent %s, want the client's span %s", got, clientSpan)
		}
		if string(call.ParentSpanId) != string(front.SpanId) {
			t.Errorf("the call span's parent is %x, want the request span %x", call.ParentSpanId, front.SpanId)
		}
		if front.Name != "tools/call traced" || call.Name != "tools/call traced" {
			t.Errorf("span names %q and %q, want \"tools/call traced\"", front.Name, call.Name)
		}
		frontAttrs, callAttrs := attrs(front), attrs(call)
		for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "traced", "mcp.protocol.version": "2025-11-25"} {
			if frontAttrs[k] != v {
				t.Errorf("request span %s = %q, want %q (all: %v)", k, frontAttrs[k], v, frontAttrs)
			}
		}
		if frontAttrs["mcp.session.id"] == "" {
			t.Errorf("request span without mcp.session.id: %v", frontAttrs)
		}
		if callAttrs["mcp_gateway.server"] != "remote" || callAttrs["gen_ai.tool.name"] != "traced" || callAttrs["error.type"] != "" {
			t.Errorf("call span attributes %v", callAttrs)
		}

		want := "00-" + clientTrace + "-" + hex.EncodeToString(call.SpanId) + "-01"
		meta, header := server.last()
		if meta != want {
			t.Errorf("the server got _meta.traceparent %q, want %q (the gateway's call span)", meta, want)
		}
		if header != want {
			t.Errorf("the server got the traceparent header %q, want %q", header, want)
		}
		select {
		case tp := <-progress:
			if tp != want {
				t.Errorf("the server's progress reached the client with traceparent %q, want the call span's %q", tp, want)
			}
		case <-time.After(10 * time.Second):
			t.Error("no progress notification reached the client")
		}
		select {
		case tp := <-sampling:
			if tp != want {
				t.Errorf("the server's sampling request reached the client with traceparent %q, want the call span's %q", tp, want)
			}
		case <-time.After(10 * time.Second):
			t.Error("no sampling request reached the client")
		}
		if log := g.log(); !containsLine(log, "msg=call", "server=remote", "trace_id="+clientTrace, "span_id="+hex.EncodeToString(call.SpanId)) {
			t.Errorf("no call log line with the trace id:\n%s", log)
		}
	})

	t.Run("traceparent header, 2026-07-28", func(t *testing.T) {
		const headerTrace = "0af7651916cd43dd8448eb211c80319c"
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		transport := &mcp.StreamableClientTransport{
			Endpoint: g.url,
			HTTPClient: &http.Client{Transport: headerTransport{traceparent: "00-" + headerTrace + "-b7ad6b7169203331-01",
				base: bearer{token: g.token, base: http.DefaultTransport}}},
			MaxRetries: -1,
		}
		cs, err := client.Connect(ctx, transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "traced", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		spans := receiver.waitSpans(t, headerTrace, 2)
		var call *tracepb.Span
		for _, s := range spans {
			if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && s.Name == "tools/call traced" {
				call = s
			}
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "tools/call traced" && attrs(s)["mcp.protocol.version"] != "2026-07-28" {
				t.Errorf("2026-07-28 request span attributes %v", attrs(s))
			}
		}
		if call == nil {
			t.Fatalf("no call span in %v", spans)
		}
		meta, header := server.last()
		want := "00-" + headerTrace + "-" + hex.EncodeToString(call.SpanId) + "-01"
		if meta != want || header != want {
			t.Errorf("the server got _meta %q and header %q, want %q", meta, header, want)
		}
	})
}

func attrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// containsLine reports whether one line of log holds every part.
func containsLine(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
