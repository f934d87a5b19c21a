// Command otelsdk is the benchmark's baseline for what tracing costs: the
// OpenTelemetry SDK alone doing what the gateway does for one traced call,
// with nothing else in the process. For each call it starts the request's
// server span and the forwarded call's client span, with the gateway's
// attributes, and ends both; a batch span processor exports them over
// OTLP/HTTP with the SDK's own exporter (otlptracehttp), in batches of 64
// (the gateway's default) unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE says
// otherwise, to the collector the OTEL_EXPORTER_OTLP_* variables name, with
// a queue that holds every span (none dropped) unless OTEL_BSP_MAX_QUEUE_SIZE
// says otherwise.
//
// It runs -calls calls on -conc goroutines, flushes, and prints one line:
// its own CPU time (getrusage: user + system) per call, in microseconds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	calls := flag.Int("calls", 6000, "traced calls")
	conc := flag.Int("conc", 16, "goroutines making them")
	flag.Parse()
	if err := run(*calls, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "otelsdk:", err)
		os.Exit(1)
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(calls, conc int) error {
	ctx := context.Background()
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcp-gateway"), attribute.String("service.version", "bench")),
		resource.WithFromEnv(), resource.WithProcessPID(), resource.WithHost())
	if err != nil {
		return err
	}
	var opts []sdktrace.BatchSpanProcessorOption
	if strings.TrimSpace(os.Getenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) == "" {
		opts = append(opts, sdktrace.WithMaxExportBatchSize(64))
	}
	if strings.TrimSpace(os.Getenv("OTEL_BSP_MAX_QUEUE_SIZE")) == "" {
		// A queue every span fits in: the loop makes spans faster than
		// they are exported, and with the default queue (2 048) the SDK
		// drops the rest, and with them the cost of exporting them (its
		// CPU per call then falls the more calls a run makes: 10.3 µs at
		// 3 000 calls, 5.5 at 20 000, against 14–17 with every span kept).
		// The gateway, at its load, exports every span it makes.
		opts = append(opts, sdktrace.WithMaxQueueSize(2*calls+1024))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter, opts...), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tracer := tp.Tracer("github.com/mcp-gateway/mcp-gateway")
	server := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	client := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

	began := cpu()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(calls) {
					return
				}
				// The request's span, as the front starts it.
				rctx, rspan := tracer.Start(ctx, "tools/call echo", server...)
				rspan.SetAttributes(attribute.String("mcp.method.name", "tools/call"),
					attribute.String("jsonrpc.request.id", strconv.FormatInt(i, 10)),
					attribute.String("mcp.session.id", "bench-session"),
					attribute.String("mcp.protocol.version", "2025-11-25"),
					attribute.String("gen_ai.tool.name", "echo"))
				// The forwarded call's span, as the gateway starts it.
				_, cspan := tracer.Start(rctx, "tools/call echo", client...)
				cspan.SetAttributes(attribute.String("mcp.method.name", "tools/call"),
					attribute.String("mcp_gateway.server", "echo"),
					attribute.String("gen_ai.tool.name", "echo"))
				cspan.End()
				rspan.End()
			}
		})
	}
	wg.Wait()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		return fmt.Errorf("flushing the spans: %w", err)
	}
	fmt.Printf("cpu_us_per_call %.2f\n", float64(cpu()-began)/float64(calls)/1e3)
	return nil
}
