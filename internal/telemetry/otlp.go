package telemetry

// The gateway's OTLP/HTTP trace exporter. The SDK's own
// (otlptrace/otlptracehttp) links all of gRPC through the configuration and
// collector packages it shares with its gRPC sibling
// (open-telemetry/opentelemetry-go#2579, #8385): about 4 MiB of the
// gateway's resident memory at rest, whether tracing is on or not. This one
// speaks the same protocol (protobuf over HTTP POST, the messages of
// go.opentelemetry.io/proto/otlp/trace/v1, written field by field) with the
// same OTEL_EXPORTER_OTLP_* variables, and nothing else.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpConfig is what the OTEL_EXPORTER_OTLP_* variables say about the
// trace export.
type otlpConfig struct {
	endpoint string // the full URL spans are POSTed to
	shown    string // endpoint with any password in it redacted, for errors
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
	c.shown = c.endpoint
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		u, err := parseEndpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v)
		if err != nil {
			return nil, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
		c.endpoint, c.shown = u.String(), u.Redacted()
	} else if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		u, err := parseEndpoint("OTEL_EXPORTER_OTLP_ENDPOINT", v)
		if err != nil {
			return nil, err
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		c.endpoint, c.shown = u.String(), u.Redacted()
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

	// perSpan is the size of a span in the last export's body (bytes, its
	// share of the resource and scope included): the next body is made of
	// about the size it will need, in one allocation, where a fixed guess
	// of 512 bytes a span allocated two to three times what was written.
	perSpan atomic.Int64
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
	// A body the connection's write buffer holds is written from it with
	// its headers; beyond it (4 KiB by default) net/http copies the rest
	// through a buffer of the body's size allocated for each export (9 KB
	// a batch of 64 spans, 300 bytes a traced call).
	tr.WriteBufferSize = exportWriteBuffer
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
	body := e.encode(spans)
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
		return -1, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.shown, err)
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
			return -1, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.shown, err)
		}
		return 0, fmt.Errorf("OTLP trace export to %s: %w", e.cfg.shown, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	err = fmt.Errorf("OTLP trace export to %s: %s%s", e.cfg.shown, resp.Status, answerText(resp.Header.Get("Content-Type"), msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			return time.Duration(s) * time.Second, err
		}
		return 0, err
	}
	return -1, err
}

// answerText is what an error shows of a collector's answer: its text,
// clipped, quoted when it is not printable; nothing of a protobuf Status.
func answerText(contentType string, body []byte) string {
	text := strings.TrimSpace(string(body))
	if text == "" || strings.Contains(contentType, "protobuf") {
		return ""
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool { return r < ' ' && r != '\t' }) {
		return ": " + strconv.Quote(text)
	}
	return ": " + text
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

// encode encodes spans as encodeExport does, in a buffer sized from the
// last export's bytes per span with an eighth more for the variation
// between batches (a body larger than that grows as an append does).
func (e *otlpExporter) encode(spans []sdktrace.ReadOnlySpan) []byte {
	per := int(e.perSpan.Load())
	if per == 0 {
		per = firstSpanGuess
	}
	body := encodeExport(spans, len(spans)*(per+per/8)+256)
	e.perSpan.Store(int64(len(body)/len(spans) + 1))
	return body
}

// exportWriteBuffer is the size of the write buffer of each connection to
// the collector: a batch of DefaultExportBatch spans with its headers.
const exportWriteBuffer = 32 << 10

// firstSpanGuess is the bytes a span is given in the first export's body.
const firstSpanGuess = 512

// encodeExport encodes an ExportTraceServiceRequest: its only field,
// resource_spans (1), repeated, one per resource, each holding one
// ScopeSpans per instrumentation scope, in the order the spans came. It
// writes the protobuf wire format straight from the spans (the field numbers
// of opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto):
// no message objects per span, attribute and value to build, keep until the
// export and collect afterwards, as the generated types would need.
func encodeExport(spans []sdktrace.ReadOnlySpan, capacity int) []byte {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	var (
		resources []*resource.Resource
		scopes    = map[*resource.Resource][]instrumentation.Scope{}
		byScope   = map[scopeKey][]sdktrace.ReadOnlySpan{}
	)
	for _, s := range spans {
		res := s.Resource()
		if _, ok := scopes[res]; !ok {
			resources = append(resources, res)
			scopes[res] = nil
		}
		k := scopeKey{res, s.InstrumentationScope()}
		if _, ok := byScope[k]; !ok {
			scopes[res] = append(scopes[res], k.scope)
		}
		byScope[k] = append(byScope[k], s)
	}
	e := &pbuf{b: make([]byte, 0, capacity)}
	for _, res := range resources {
		rs := e.begin(1) // ExportTraceServiceRequest.resource_spans
		r := e.begin(1)  // ResourceSpans.resource
		if res != nil {
			for _, kv := range res.Attributes() {
				e.keyValue(1, kv) // Resource.attributes
			}
		}
		e.end(r)
		for _, sc := range scopes[res] {
			ss := e.begin(2) // ResourceSpans.scope_spans
			is := e.begin(1) // ScopeSpans.scope
			e.str(1, sc.Name)
			e.str(2, sc.Version)
			for _, kv := range sc.Attributes.ToSlice() {
				e.keyValue(3, kv)
			}
			e.end(is)
			for _, s := range byScope[scopeKey{res, sc}] {
				e.span(s)
			}
			e.str(3, sc.SchemaURL) // ScopeSpans.schema_url
			e.end(ss)
		}
		if res != nil {
			e.str(3, res.SchemaURL()) // ResourceSpans.schema_url
		}
		e.end(rs)
	}
	return e.b
}

// pbuf appends protobuf fields to b. Zero values are left out, as proto3
// encodes them.
type pbuf struct{ b []byte }

// begin starts a length-delimited field, reserving one byte for its length,
// and returns where its content starts.
func (e *pbuf) begin(n protowire.Number) int {
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = append(e.b, 0)
	return len(e.b)
}

// end writes the length of the field begun at start, moving its content
// when the length takes more than the byte reserved.
func (e *pbuf) end(start int) {
	n := len(e.b) - start
	if n < 0x80 {
		e.b[start-1] = byte(n)
		return
	}
	var l [binary.MaxVarintLen64]byte
	lv := protowire.AppendVarint(l[:0], uint64(n))
	extra := len(lv) - 1
	e.b = append(e.b, l[:extra]...)
	copy(e.b[start+extra:], e.b[start:start+n])
	copy(e.b[start-1:], lv)
}

func (e *pbuf) str(n protowire.Number, v string) {
	if v != "" {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendString(e.b, v)
	}
}

func (e *pbuf) bytes(n protowire.Number, v []byte) {
	if len(v) > 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, v)
	}
}

func (e *pbuf) varint(n protowire.Number, v uint64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, v)
	}
}

func (e *pbuf) fixed64(n protowire.Number, v uint64) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, v)
	}
}

func (e *pbuf) fixed32(n protowire.Number, v uint32) {
	if v != 0 {
		e.b = protowire.AppendTag(e.b, n, protowire.Fixed32Type)
		e.b = protowire.AppendFixed32(e.b, v)
	}
}

// span writes ScopeSpans.spans (2): one Span.
func (e *pbuf) span(s sdktrace.ReadOnlySpan) {
	sp := e.begin(2)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(1, tid[:])
	e.bytes(2, sid[:])
	e.str(3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		e.bytes(4, psid[:])
	}
	e.str(5, s.Name())
	e.varint(6, uint64(s.SpanKind())) // SpanKind: the same numbers, unspecified to consumer
	e.fixed64(7, unixNano(s.StartTime()))
	e.fixed64(8, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		e.keyValue(9, kv)
	}
	e.varint(10, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		m := e.begin(11) // Span.Event
		e.fixed64(1, unixNano(ev.Time))
		e.str(2, ev.Name)
		for _, kv := range ev.Attributes {
			e.keyValue(3, kv)
		}
		e.varint(4, uint64(ev.DroppedAttributeCount))
		e.end(m)
	}
	e.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		m := e.begin(13) // Span.Link
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(1, ltid[:])
		e.bytes(2, lsid[:])
		e.str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			e.keyValue(4, kv)
		}
		e.varint(5, uint64(l.DroppedAttributeCount))
		e.fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		e.end(m)
	}
	e.varint(14, uint64(s.DroppedLinks()))
	st := e.begin(15) // Span.status: message (2), code (3)
	switch status := s.Status(); status.Code {
	case codes.Error:
		e.str(2, status.Description)
		e.varint(3, statusCodeError)
	case codes.Ok:
		e.varint(3, statusCodeOK)
	}
	e.end(st)
	e.fixed32(16, spanFlags(sc.TraceFlags(), s.Parent()))
	e.end(sp)
}

// Status.StatusCode (not the SDK's codes.Code, whose numbers differ).
const (
	statusCodeOK    = 1
	statusCodeError = 2
)

// The two SPAN_FLAGS_CONTEXT_* bits of Span.flags and Link.flags.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// spanFlags are the W3C trace flags with whether the parent is remote.
func spanFlags(f trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(f) | flagHasIsRemote
	if parent.IsRemote() {
		flags |= flagIsRemote
	}
	return flags
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// keyValue writes one KeyValue (key 1, value 2) as field n.
func (e *pbuf) keyValue(n protowire.Number, kv attribute.KeyValue) {
	m := e.begin(n)
	e.str(1, string(kv.Key))
	e.anyValue(2, kv.Value)
	e.end(m)
}

// anyValue writes one AnyValue as field n: its oneof is string_value (1),
// bool_value (2), int_value (3), double_value (4), array_value (5),
// kvlist_value (6) or bytes_value (7). A set oneof member is written even
// when it is its type's zero value.
func (e *pbuf) anyValue(n protowire.Number, v attribute.Value) {
	m := e.begin(n)
	switch v.Type() {
	case attribute.BOOL:
		e.b = protowire.AppendTag(e.b, 2, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		e.b = protowire.AppendTag(e.b, 3, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.b = protowire.AppendTag(e.b, 4, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		e.b = protowire.AppendTag(e.b, 1, protowire.BytesType)
		e.b = protowire.AppendString(e.b, v.AsString())
	case attribute.BYTESLICE:
		e.b = protowire.AppendTag(e.b, 7, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		arrayOf(e, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		arrayOf(e, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		arrayOf(e, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		arrayOf(e, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		arrayOf(e, v.AsSlice(), func(x attribute.Value) attribute.Value { return x })
	case attribute.MAP:
		l := e.begin(6) // KeyValueList.values (1)
		for _, kv := range v.AsMap() {
			e.keyValue(1, kv)
		}
		e.end(l)
	}
	e.end(m)
}

// arrayOf writes AnyValue.array_value (5): ArrayValue.values (1).
func arrayOf[T any](e *pbuf, xs []T, value func(T) attribute.Value) {
	a := e.begin(5)
	for _, x := range xs {
		e.anyValue(1, value(x))
	}
	e.end(a)
}
