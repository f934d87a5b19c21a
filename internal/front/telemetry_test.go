package front

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func tracedGateway(t *testing.T) (*gateway.Gateway, *telemetry.Telemetry, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tel := &telemetry.Telemetry{Metrics: telemetry.NewMetrics(), Tracer: tp.Tracer("test")}
	r := gateway.NewRouter(gateway.RouterOptions{Logger: slog.New(slog.DiscardHandler)})
	gw := gateway.New(r, gateway.Info{Name: "t", Version: "1"})
	r.Add(echoUpstream{})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	gw.Observer = tel.Observer()
	t.Cleanup(func() { gw.Close(); _ = r.Close() })
	return gw, tel, rec
}

// checkTrace: the request span is the client's span's child, the call
// span the request span's.
func checkTrace(t *testing.T, rec *tracetest.SpanRecorder) {
	t.Helper()
	var server, client sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindClient:
			client = s
		}
	}
	if server == nil || client == nil {
		t.Fatalf("spans %v, want a request span and a call span", rec.Ended())
	}
	if server.Parent().SpanID().String() != "00f067aa0ba902b7" || server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("request span's parent %v, want the client's span", server.Parent())
	}
	if client.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("call span's parent %v, want the request span", client.Parent())
	}
}

// Over HTTP, a session-era tools/call makes both spans under the client's.
func TestHTTPRequestSpans(t *testing.T) {
	gw, tel, rec := tracedGateway(t)
	h := &Handler{Gateway: gw, Telemetry: tel}
	defer h.Close()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)))
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"traceparent":"`+clientTraceparent+`"}}}`))
	req.Header.Set("Mcp-Session-Id", w.Header().Get("Mcp-Session-Id"))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatal(w.Code, w.Body)
	}
	checkTrace(t, rec)
}

// The stdio front makes the same spans.
func TestStdioRequestSpans(t *testing.T) {
	gw, tel, rec := tracedGateway(t)
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"traceparent":"` + clientTraceparent + `"}}}` + "\n"
	var out bytes.Buffer
	if err := ServeStdioWith(context.Background(), gw, strings.NewReader(in), &out, StdioOptions{Telemetry: tel}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) {
		t.Fatalf("no answer to the call:\n%s", out.String())
	}
	checkTrace(t, rec)
}
