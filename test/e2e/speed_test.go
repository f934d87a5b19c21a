package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway exports traces over OTLP/HTTP with an exporter of its own
// rather than the SDK's otlptracehttp, which links all of gRPC (about 4 MiB
// of resident memory at rest, tracing on or off; issue 26). The binary
// links no gRPC, and its export is what a collector reads: protobuf,
// gzip and the configured headers, the resource and both spans of a call.
func TestServeTracesWithoutGRPC(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", gatewayBin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "dep" && f[1] == "google.golang.org/grpc" {
			t.Errorf("the gateway binary links %s; the OTLP/HTTP export needs no gRPC", strings.TrimSpace(line))
		}
	}

	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.url)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-key=k%3D1")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	s := startServe(t, `{"e2e": {"runCmd": "`+testServerCmd()+`"}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := s.connect(ctx)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "traced"}})
	if err != nil || text(res) != "traced" {
		t.Fatalf("echo: %v %v", res, err)
	}
	_ = cs.Close()

	// The call's spans: the request's and the call's, in one trace.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rcv.mu.Lock()
		if len(rcv.errs) > 0 {
			t.Fatalf("the collector could not read an export: %v", rcv.errs)
		}
		traces := map[string][]string{}
		var header http.Header
		var service string
		for _, ex := range rcv.exports {
			header = ex.header
			for _, rs := range ex.req.ResourceSpans {
				for _, kv := range rs.Resource.GetAttributes() {
					if kv.Key == "service.name" {
						service = kv.Value.GetStringValue()
					}
				}
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						if strings.Contains(sp.Name, "tools/call") {
							traces[string(sp.TraceId)] = append(traces[string(sp.TraceId)], sp.Name)
						}
					}
				}
			}
		}
		rcv.mu.Unlock()
		for _, names := range traces {
			if len(names) >= 2 {
				if header.Get("X-Collector-Key") != "k=1" || header.Get("Content-Encoding") != "gzip" || header.Get("Content-Type") != "application/x-protobuf" {
					t.Errorf("export headers %v: want X-Collector-Key k=1, gzip, application/x-protobuf", header)
				}
				if service != "mcp-gateway" {
					t.Errorf("resource service.name %q, want mcp-gateway", service)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace with the call's two spans after 30s; spans of tools/call by trace: %v", traces)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A plain JSON answer goes with its Content-Length whatever its size: beyond
// net/http's 2 KiB buffer it was sent chunked, its last chunk written apart
// (one more write(2) per call; issue 26).
func TestServePlainJSONAnswerHasItsLength(t *testing.T) {
	s := startServe(t, `{"e2e": {"runCmd": "`+testServerCmd()+`"}}`)
	post := func(sid, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", s.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	resp = post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	for _, n := range []int{100, 3000, 20000} {
		text := strings.Repeat("x", n)
		resp := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+text+`"}}}`)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"`+text+`"`) {
			t.Fatalf("%d bytes: status %d, %v, body %.100q", n, resp.StatusCode, err, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%d bytes: Content-Type %q, want application/json", n, ct)
		}
		if len(resp.TransferEncoding) > 0 || resp.ContentLength != int64(len(body)) {
			t.Errorf("%d bytes: Transfer-Encoding %v, Content-Length %d; want none and %d", n, resp.TransferEncoding, resp.ContentLength, len(body))
		}
	}
}
