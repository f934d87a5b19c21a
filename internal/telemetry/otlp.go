package telemetry

// The gateway's OTLP/HTTP trace exporter. The SDK's own
// (otlptrace/otlptracehttp) links all of gRPC through the configuration and
// collector packages it shares with its gRPC sibling
// (open-telemetry/opentelemetry-go#2579, #8385): about 4 MiB of the
// gateway's resident memory at rest, whether tracing is on or not. This one
// speaks the same protocol (protobuf over HTTP POST, the messages of
// go.opentelemetry.io/proto/otlp/trace/v1) with the same OTEL_EXPORTER_OTLP_*
// variables, and nothing else.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpConfig is what the OTEL_EXPORTER_OTLP_* variables say about the
// trace export.
type otlpConfig struct {
	endpoint string // the full URL spans are POSTed to
	headers  map[string]string
	timeout  time.Duration // of one export, retries included
	gzip     bool
	tls      *tls.Config // nil: the transport's default
}

// traceVar returns the traces-specific variable OTEL_EXPORTER_OTLP_TRACES_<name>
// if set, else the general OTEL_EXPORTER_OTLP_<name>, and which one it was.
func traceVar(getenv func(string) string, name string) (value, key string) {
	key = "OTEL_EXPORTER_OTLP_TRACES_" + name
	if v := strings.TrimSpace(getenv(key)); v != "" {
		return v, key
	}
	key = "OTEL_EXPORTER_OTLP_" + name
	return strings.TrimSpace(getenv(key)), key
}

// readOTLPConfig reads the exporter's variables as the OTLP exporter
// specification says: a traces-specific endpoint is used as it is, the
// general one gets /v1/traces appended to its path, the default being
// http://localhost:4318/v1/traces.
func readOTLPConfig(getenv func(string) string) (*otlpConfig, error) {
	c := &otlpConfig{endpoint: "http://localhost:4318/v1/traces", headers: map[string]string{}, timeout: 10 * time.Second}
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		u, err := parseEndpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v)
		if err != nil {
			return nil, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
		c.endpoint = u.String()
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		u, err := parseEndpoint("OTEL_EXPORTER_OTLP_ENDPOINT", v)
		if err != nil {
			return nil, err
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		c.endpoint = u.String()
	}
	// Headers: the general list, then the traces-specific one over it.
	for _, key := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(key, getenv(key), c.headers); err != nil {
			return nil, err
		}
	}
	if v, key := traceVar(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%s=%q: want a number of milliseconds", key, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, key := traceVar(getenv, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("%s=%q: want gzip or none", key, v)
	}
	var err error
	if c.tls, err = readOTLPTLS(getenv); err != nil {
		return nil, err
	}
	return c, nil
}

func parseEndpoint(key, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL, e.g. http://otel-collector:4318", key, v)
	}
	return u, nil
}

// parseHeaders reads a list of key=value pairs separated by commas, the
// values URL-encoded (the W3C baggage format the specification names).
func parseHeaders(key, v string, into map[string]string) error {
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%s: %q is not key=value", key, strings.TrimSpace(pair))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s: the value of %q: %v", key, name, err)
		}
		into[http.CanonicalHeaderKey(name)] = dec
	}
	return nil
}

// readOTLPTLS reads the CA certificate and the client's certificate and key.
func readOTLPTLS(getenv func(string) string) (*tls.Config, error) {
	ca, caKey := traceVar(getenv, "CERTIFICATE")
	cert, certKey := traceVar(getenv, "CLIENT_CERTIFICATE")
	key, keyKey := traceVar(getenv, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caKey, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s=%s: no PEM certificate in the file", caKey, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together: set both or neither", certKey, keyKey)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certKey, keyKey, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// otlpExporter is an sdktrace.SpanExporter POSTing spans over OTLP/HTTP.
type otlpExporter struct {
	cfg    *otlpConfig
	client *http.Client

	mu     sync.Mutex
	closed bool
}

func newOTLPExporter(getenv func(string) string) (*otlpExporter, error) {
	cfg, err := readOTLPConfig(getenv)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.tls != nil {
		tr.TLSClientConfig = cfg.tls
	}
	return &otlpExporter{cfg: cfg, client: &http.Client{Transport: tr}}, nil
}

// ExportSpans sends one batch, retrying on the answers the specification
// calls retryable (429, 502, 503, 504, or no answer) until the export's
// timeout.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed || len(spans) == 0 {
		return nil
	}
	body, err := encodeExport(spans)
	if err != nil {
		return fmt.Errorf("OTLP trace export: encoding %d spans: %w", len(spans), err)
	}
	if e.cfg.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	if e.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.timeout)
		defer cancel()
	}
	backoff := 500 * time.Millisecond
	for {
		wait, err := e.post(ctx, body)
		if err == nil {
			return nil
		}
		if wait < 0 { // not retryable
			return err
		}
		wait = max(wait, backoff)
		backoff = min(2*backoff, 5*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// post sends body once. On failure it returns how long to wait before the
// next try (0: the backoff's), or -1 if a retry cannot help.
func (e *otlpExporter) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.endpoint, err)
	}
	for k, v := range e.cfg.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.endpoint, err)
		}
		return 0, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.endpoint, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	err = fmt.Errorf("OTLP trace export to %s: %s: %s", e.cfg.endpoint, resp.Status, strings.TrimSpace(string(msg)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}

// Shutdown makes further exports no-ops; the batch processor has flushed
// its queue before it calls this.
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return nil
}

// encodeExport encodes an ExportTraceServiceRequest: its only field,
// resource_spans (1), repeated, one per resource, each holding one
// ScopeSpans per instrumentation scope, in the order the spans came.
func encodeExport(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	var (
		resources []*tracepb.ResourceSpans
		byRes     = map[*resource.Resource]*tracepb.ResourceSpans{}
		byScope   = map[scopeKey]*tracepb.ScopeSpans{}
	)
	for _, s := range spans {
		res := s.Resource()
		rs := byRes[res]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: resourceProto(res), SchemaUrl: res.SchemaURL()}
			byRes[res] = rs
			resources = append(resources, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss := byScope[k]
		if ss == nil {
			ss = &tracepb.ScopeSpans{SchemaUrl: k.scope.SchemaURL, Scope: &commonpb.InstrumentationScope{
				Name: k.scope.Name, Version: k.scope.Version, Attributes: attributesProto(k.scope.Attributes.ToSlice()),
			}}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	var out []byte
	for _, rs := range resources {
		b, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

func resourceProto(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: attributesProto(r.Attributes())}
}

func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	out := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()), // the same numbers, unspecified to consumer
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attributesProto(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 statusProto(s.Status()),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		out.ParentSpanId = psid[:]
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, &tracepb.Span_Event{
			TimeUnixNano: unixNano(ev.Time), Name: ev.Name,
			Attributes: attributesProto(ev.Attributes), DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out.Links = append(out.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: attributesProto(l.Attributes), DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags: spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return out
}

// spanFlags are the W3C trace flags with whether the parent is remote (the
// two SPAN_FLAGS_CONTEXT_* bits).
func spanFlags(f trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(f) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func statusProto(s sdktrace.Status) *tracepb.Status {
	switch s.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return &tracepb.Status{}
}

func attributesProto(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: valueProto(kv.Value)})
	}
	return out
}

func valueProto(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrayProto(v.AsBoolSlice(), func(b bool) attribute.Value { return attribute.BoolValue(b) })
	case attribute.INT64SLICE:
		return arrayProto(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayProto(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayProto(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return arrayProto(v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: attributesProto(v.AsMap())}}}
	}
	return &commonpb.AnyValue{}
}

func arrayProto[T any](xs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	vals := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vals[i] = valueProto(value(x))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
}
