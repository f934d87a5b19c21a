// Package telemetry is the gateway's observability: Prometheus metrics
// (client_golang), OpenTelemetry traces exported over OTLP/HTTP, and the
// call log. docs/observability.md lists every metric, span attribute and
// log field.
//
// It sits beside the call path (front → session → router → upstream) at
// two points: the front calls Telemetry.StartRequest as each client request
// arrives (the request span, its parent taken from the request's _meta or
// HTTP headers) and ends it with the answer; the gateway calls the
// gateway.Observer that Telemetry.Observer returns where a request is
// forwarded to its server and answered (the call span, the call metrics,
// the call log line). The upstream passes the call span's context on to the
// server. Each part is off when its field is nil; a nil *Telemetry costs
// nothing.
//
// Metrics.ForSandbox gives each sandbox of the host daemon its own labelled
// series. Tracing is configured from the standard OTEL_* variables
// (TracingConfigured, NewTracerProvider).
package telemetry
