package front

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// echoUpstream answers tools/call at once, in memory: the gateway's own
// path is all that is measured.
type echoUpstream struct{}

func (echoUpstream) Name() string                    { return "echo" }
func (echoUpstream) Start(ctx context.Context) error { return nil }
func (echoUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	if method == "tools/list" {
		return &wire.Response{Result: json.RawMessage(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)}, nil
	}
	return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`)}, nil
}
func (echoUpstream) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return nil
}
func (echoUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echo","version":"1"}}`)
}
func (echoUpstream) Generation() uint64 { return 1 }
func (echoUpstream) Close() error       { return nil }

// BenchmarkToolCallTelemetry is a session-era tools/call through the front
// and the gateway to an in-memory server, with telemetry off, metrics on,
// and metrics and traces (every call sampled, exported over OTLP/HTTP).
func BenchmarkToolCallTelemetry(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer receiver.Close()
	exporter, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(receiver.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())

	for _, tc := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"off", nil},
		{"metrics", &telemetry.Telemetry{Metrics: telemetry.NewMetrics()}},
		{"metrics+traces", &telemetry.Telemetry{Metrics: telemetry.NewMetrics(), Tracer: tp.Tracer("bench")}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := gateway.NewRouter(gateway.RouterOptions{Logger: slog.New(slog.DiscardHandler)})
			gw := gateway.New(r, gateway.Info{Name: "b", Version: "1"})
			r.Add(echoUpstream{})
			if err := r.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			gw.Observer = tc.tel.Observer()
			h := &Handler{Gateway: gw, Telemetry: tc.tel}
			defer h.Close()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)))
			sid := w.Header().Get("Mcp-Session-Id")
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
				req.Header.Set("Mcp-Session-Id", sid)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body)
				}
			}
		})
	}
}
