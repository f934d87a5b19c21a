package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Instrumentation names the gateway's spans' instrumentation scope.
const Instrumentation = "github.com/mcp-gateway/mcp-gateway"

// TracingConfigured reports whether the environment asks for traces: an
// OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is "otlp",
// and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says no.
func TracingConfigured(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// NewTracerProvider builds a tracer provider exporting over OTLP/HTTP as
// the standard OTEL_* variables say (endpoint, headers, timeout,
// compression, OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES). Its Shutdown flushes the spans still queued.
func NewTracerProvider(ctx context.Context, version string, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: the gateway exports traces over OTLP only; set it to otlp or none", exp)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: the gateway exports traces over OTLP/HTTP with protobuf only; set it to http/protobuf (and the endpoint to the collector's HTTP port, usually 4318)", proto)
	}
	exporter, err := newOTLPExporter(getenv)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w; check the OTEL_EXPORTER_OTLP_* variables", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "mcp-gateway"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithProcessPID(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("the trace resource: %w; check OTEL_RESOURCE_ATTRIBUTES", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter, batchOptions(getenv)...), sdktrace.WithResource(res)), nil
}

// DefaultExportBatch is the most spans the gateway exports in one OTLP
// request unless OTEL_BSP_MAX_EXPORT_BATCH_SIZE says otherwise (the SDK's
// default is 512). Measured with the benchmark's telemetry phase, smaller
// batches cost the gateway less CPU per call under load: fewer spans wait
// in the queue (the garbage collector marks them on every cycle) and each
// export's burst of protobuf objects is smaller. Below 64 the HTTP request
// per batch costs more than that saves; with little traffic a batch goes
// out after OTEL_BSP_SCHEDULE_DELAY (5 s) as before.
const DefaultExportBatch = 64

// batchOptions are the batch span processor's options beyond what the SDK
// reads from OTEL_BSP_* itself (options given here win over the variables,
// so each is given only where its variable is unset).
func batchOptions(getenv func(string) string) []sdktrace.BatchSpanProcessorOption {
	if strings.TrimSpace(getenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")) != "" {
		return nil
	}
	return []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxExportBatchSize(DefaultExportBatch)}
}

// Getenv is os.Getenv, the default source of the OTEL_* variables.
var Getenv = os.Getenv

// traceContext reads and writes W3C traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// metaCarrier holds the traceparent and tracestate of a request's _meta.
type metaCarrier struct{ traceparent, tracestate string }

func (c *metaCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}
func (c *metaCarrier) Set(key, v string) {}
func (c *metaCarrier) Keys() []string    { return []string{"traceparent", "tracestate"} }

// remoteParent returns ctx with the span context a client sent: from its
// request's _meta (traceparent, tracestate) when there, else from the HTTP
// headers (nil for the stdio front).
func remoteParent(ctx context.Context, traceparent, tracestate string, header propagation.TextMapCarrier) context.Context {
	if traceparent != "" {
		if out := traceContext.Extract(ctx, &metaCarrier{traceparent, tracestate}); trace.SpanContextFromContext(out).IsValid() {
			return out
		}
	}
	if header != nil {
		return traceContext.Extract(ctx, header)
	}
	return ctx
}
