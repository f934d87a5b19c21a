package telemetry

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// BenchmarkCall is what telemetry adds to one forwarded tools/call: the
// front's request record and the gateway's call record, with everything
// off, with metrics, and with metrics and traces exported over OTLP/HTTP
// (sampling every call) to a receiver that discards them. The upstream's
// share (the trace context in _meta) is in BenchmarkTraceMeta of upstream.
// cpu-ns/op is the process's CPU per call (getrusage), the exporter's
// goroutine, its HTTP requests and the garbage collector included, where
// ns/op is only the caller's wall time; the receiver runs in this process
// too, so its share of each export request counts here (and makes smaller
// batches look dearer than the gateway finds them: docs/benchmarks.md).
func BenchmarkCall(b *testing.B) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer receiver.Close()
	// The gateway's exporter (otlp.go), as NewTracerProvider makes it.
	exporter, err := newOTLPExporter(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.URL + "/v1/traces"}))
	if err != nil {
		b.Fatal(err)
	}
	// The gateway's batch, and a queue no loop fills: with the default 2048,
	// a loop faster than the export drops spans, and their export's cost.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter, sdktrace.WithMaxExportBatchSize(DefaultExportBatch), sdktrace.WithMaxQueueSize(1<<20)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())

	params := json.RawMessage(`{"name":"echo","arguments":{"text":"hello"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)
	result := json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`)
	header := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name string
		tel  *Telemetry
	}{
		{"off", nil},
		{"metrics", &Telemetry{Metrics: NewMetrics()}},
		{"metrics+traces", &Telemetry{Metrics: NewMetrics(), Tracer: tp.Tracer("bench")}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := tc.tel.Observer()
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				ctx, done := tc.tel.StartRequest(context.Background(), Request{Era: "session", Method: "tools/call", ID: json.RawMessage(`7`),
					Params: params, SessionID: "abcd1234", ProtocolVersion: "2025-11-25", Header: header})
				if o != nil {
					_, end := o.StartCall(ctx, gateway.CallInfo{Server: "echo", Method: "tools/call", Name: "echo", ProtocolVersion: "2025-11-25", RequestBytes: len(params)})
					end(gateway.CallEnd{Reply: gateway.Reply{Result: result}})
				}
				done(gateway.Reply{Result: result})
			}
			if tc.tel != nil && tc.tel.Tracer != nil {
				_ = tp.ForceFlush(context.Background()) // the export's CPU belongs to the calls
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
