package main

// The telemetry phase: what the gateway's metrics and traces cost. The same
// gateway binary in front of a stdio echo server three ways, in alternating
// rounds, 16 concurrent calls on one session: with metrics off
// (--metrics=false), with metrics on (the default), and with metrics and
// traces exported over OTLP/HTTP (sampling every call) to a receiver this
// process runs, in the gateway's export batches and, a fourth way, in the
// SDK's default batch of 512 spans. The figure is the gateway process's
// own CPU per call. Tracing's cost is judged against the OpenTelemetry
// SDK's own (./bench/otelsdk, run in each round beside the gateways): the
// SDK alone starting and ending the gateway's two spans of a call and
// exporting them, with its own OTLP/HTTP exporter, to the same receiver.

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// telemetryVariant is one way of running the gateway.
type telemetryVariant struct {
	name string
	args []string
	env  []string
	goal float64 // most CPU per call ÷ off; 0: none
}

// telemetryResult is what the phase measured: by variant, the gateway's CPU
// per call of each round.
type telemetryResult struct {
	variants []telemetryVariant
	cpu      map[string][]time.Duration
	spans    int64 // bytes of OTLP exports received
	gwSpans  int64 // spans the gateways exported
	traced   int64 // calls made to the traced variants
	calls    int
	sdk      []time.Duration // the SDK alone: its CPU per call of each round
}

// sdkVariant names the SDK-alone baseline in the report.
const sdkVariant = "OpenTelemetry SDK alone: the two spans of a call, exported"

// tracedGoal bounds tracing's added cost per call (metrics + traces −
// metrics) ÷ the SDK's alone.
const tracedGoal = 1.1

// runSDK runs the SDK-alone baseline once and returns its CPU per call.
func runSDK(bin, endpoint string, calls int) (time.Duration, error) {
	cmd := exec.Command(bin, "-calls", strconv.Itoa(calls), "-conc", "16")
	cmd.Env = append(cmd.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
	timer := time.AfterFunc(2*time.Minute, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || f[0] != "cpu_us_per_call" {
		return 0, fmt.Errorf("%s: unexpected output %q", bin, out)
	}
	v, err := strconv.ParseFloat(f[1], 64)
	return time.Duration(v * float64(time.Microsecond)), err
}

// otlpSink is an OTLP/HTTP trace receiver that counts what it is sent:
// bytes, and spans (so that a variant or the baseline that dropped spans,
// and their export's cost, is seen).
type otlpSink struct {
	ln           net.Listener
	srv          *http.Server
	bytes, spans atomic.Int64
	bad          atomic.Int64 // exports that were not OTLP
}

func newOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &otlpSink{ln: ln}
	k.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				k.bad.Add(1)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		k.bytes.Add(int64(len(b)))
		if n, err := countSpans(b); err != nil {
			k.bad.Add(1)
		} else {
			k.spans.Add(int64(n))
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}), ReadHeaderTimeout: 10 * time.Second}
	go k.srv.Serve(ln) //nolint:errcheck // ends with Close
	return k, nil
}

func (k *otlpSink) endpoint() string { return "http://" + k.ln.Addr().String() }

// countSpans counts the spans of an ExportTraceServiceRequest: its
// resource_spans (1), their scope_spans (2), their spans (2).
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachBytesField(b, 1, func(rs []byte) error {
		return eachBytesField(rs, 2, func(ss []byte) error {
			return eachBytesField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachBytesField calls f with each length-delimited field num of a message.
func eachBytesField(b []byte, num protowire.Number, f func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := f(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
	}
	return nil
}

func (b *bench) telemetryCost() {
	progress("\n== telemetry: metrics and traces, on and off ==")
	// One receiver for the gateways, one for the SDK baseline, so that each
	// one's spans are counted.
	sink, err := newOTLPSink()
	if err != nil {
		b.fail("telemetry: the OTLP receiver: %v", err)
		return
	}
	defer sink.srv.Close()
	sdkSink, err := newOTLPSink()
	if err != nil {
		b.fail("telemetry: the OTLP receiver: %v", err)
		return
	}
	defer sdkSink.srv.Close()
	ln := sink.ln

	variants := []telemetryVariant{
		{name: "off", args: []string{"--metrics=false"}},
		{name: "metrics", goal: 1.05},
		{name: "metrics + traces", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String(), "OTEL_TRACES_SAMPLER=always_on"}},
		// The SDK's own batch, against the gateway's smaller default (telemetry.DefaultExportBatch).
		{name: "traces, batch 512", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String(), "OTEL_TRACES_SAMPLER=always_on",
			"OTEL_BSP_MAX_EXPORT_BATCH_SIZE=512"}},
	}
	res := &telemetryResult{variants: variants, cpu: map[string][]time.Duration{}, calls: b.opts.calls}
	root, err := moduleRoot()
	if err != nil {
		b.fail("telemetry: %v", err)
		return
	}
	sdkBin := filepath.Join(b.dir, "otelsdk")
	if err := goBuild(root, sdkBin, "./bench/otelsdk"); err != nil {
		b.fail("telemetry: building the SDK baseline: %v", err)
		return
	}
	type running struct {
		v        telemetryVariant
		t        *target
		sessions []*session
		stop     func()
	}
	var targets []*running
	defer func() {
		for _, r := range targets {
			r.stop()
		}
	}()
	limit := 60 * time.Second
	for _, v := range variants {
		gw, err := b.startGatewayWith(b.gateway, b.oneEcho(), 1, v.args, v.env)
		if err != nil {
			b.fail("telemetry (%s): %v", v.name, err)
			return
		}
		t := gw.target("gateway → stdio, "+v.name, eraLegacy)
		r := &running{v: v, t: t, stop: gw.stop}
		targets = append(targets, r)
		if r.sessions, err = openSessions(t, 1, time.Now().Add(limit)); err != nil {
			b.fail("telemetry (%s): opening a session: %v", v.name, err)
			return
		}
		w := load(t, r.sessions, 16, min(1000, b.opts.calls), limit)
		if w.errors > 0 {
			b.fail("telemetry (%s): warm-up: %d calls failed; first: %v", v.name, w.errors, w.firstErr)
			return
		}
		if len(v.env) > 0 {
			res.traced += int64(w.calls)
		}
	}
	for round := range b.opts.rounds {
		for k := range targets {
			r := targets[(k+round)%len(targets)]
			run := load(r.t, r.sessions, 16, b.opts.calls, limit)
			if run.errors > 0 {
				b.fail("telemetry (%s): %d of %d calls failed; first: %v", r.v.name, run.errors, run.errors+run.calls, run.firstErr)
				return
			}
			if len(r.v.env) > 0 {
				res.traced += int64(run.calls)
			}
			cpu := run.cpuPerCall(run.measuredCPU)
			res.cpu[r.v.name] = append(res.cpu[r.v.name], cpu)
			progress("round %d/%d  %-20s gateway CPU per call %s µs  %7.0f calls/s", round+1, b.opts.rounds, r.v.name, us(cpu), run.perSecond())
		}
		before := sdkSink.spans.Load()
		cpu, err := runSDK(sdkBin, sdkSink.endpoint(), b.opts.calls)
		if err != nil {
			b.fail("telemetry (%s): %v", sdkVariant, err)
			return
		}
		// The baseline flushes before it exits: every span it made is in.
		if got, want := sdkSink.spans.Load()-before, int64(2*b.opts.calls); got != want {
			b.fail("telemetry (%s): %d spans exported, want %d: a baseline that drops spans does not pay for their export", sdkVariant, got, want)
			return
		}
		res.sdk = append(res.sdk, cpu)
		progress("round %d/%d  %-20s CPU per call %.1f µs", round+1, b.opts.rounds, "SDK alone", float64(cpu)/float64(time.Microsecond))
	}
	// The variants did what they say: metrics served or not, spans exported.
	for _, r := range targets {
		scraped, err := scrapeMetrics(r.t.ep)
		switch {
		case err != nil:
			b.fail("telemetry (%s): GET /metrics: %v", r.v.name, err)
		case r.v.name == "off" && scraped:
			b.fail("telemetry (off): /metrics is served with --metrics=false")
		case r.v.name != "off" && !scraped: // metrics are on by default in every other variant
			b.fail("telemetry (%s): /metrics has no mcp_gateway_calls_total", r.v.name)
		}
	}
	// A gateway flushes the spans it still holds when it stops (SIGTERM).
	for _, r := range targets {
		r.stop()
	}
	res.spans, res.gwSpans = sink.bytes.Load(), sink.spans.Load()
	switch {
	case res.spans == 0:
		b.fail("telemetry (metrics + traces): the OTLP receiver got no export")
	case sink.bad.Load() > 0 || sdkSink.bad.Load() > 0:
		b.fail("telemetry: %d exports were not OTLP traces", sink.bad.Load()+sdkSink.bad.Load())
	case res.gwSpans < 2*res.traced:
		// Each traced call is two spans (the request's and the forwarded
		// call's); the sessions' initialize and notifications add a few.
		b.fail("telemetry: the traced gateways exported %d spans for %d calls, want at least %d: spans were dropped", res.gwSpans, res.traced, 2*res.traced)
	}
	b.report.telemetry = res
}

// scrapeMetrics reports whether the gateway's /metrics serves the call counter.
func scrapeMetrics(ep endpoint) (bool, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+ep.addr+"/metrics", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Bearer "+ep.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %d", resp.StatusCode)
	}
	return strings.Contains(string(body), "mcp_gateway_calls_total"), nil
}

func (r *report) writeTelemetry(b *strings.Builder) {
	t := r.telemetry
	if t == nil {
		return
	}
	b.WriteString("### Telemetry: what metrics and traces cost\n\n")
	fmt.Fprintf(b, "The gateway → stdio echo, 16 concurrent calls on one session, %d calls per round, the variants alternated in each round; "+
		"traces sample every call and are exported over OTLP/HTTP to a receiver in the benchmark's process (%d bytes, %d spans received for %d traced calls: none dropped), in the gateway's batches (64 spans) or, *traces, batch 512*, in the SDK's default ones. "+
		"The SDK baseline exports to a receiver of its own, which counts its two spans a call, every one. "+
		"The ratio is the median over rounds of each round's ratio to off.\n\n", t.calls, t.spans, t.gwSpans, t.traced)
	b.WriteString("| variant | gateway CPU per call (µs, median) | ÷ off | goal |\n|---|---:|---:|---:|\n")
	off := t.cpu["off"]
	for _, v := range t.variants {
		cpus := t.cpu[v.name]
		ratio := "-"
		if v.name != "off" && len(off) == len(cpus) && len(cpus) > 0 {
			var rs []float64
			for i := range cpus {
				if off[i] > 0 {
					rs = append(rs, float64(cpus[i])/float64(off[i]))
				}
			}
			ratio = fmt.Sprintf("%.3f", medianFloat(rs))
		}
		goal := "-"
		if v.goal > 0 {
			goal = fmt.Sprintf("≤ %.2f", v.goal)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", v.name, us(medianDuration(cpus)), ratio, goal)
	}
	b.WriteString("\n")
	if m, ok := t.tracedCost(); m != "" {
		fmt.Fprintf(b, "Tracing judged against the SDK's own cost (%s, its CPU per call in a process of its own, "+
			"in each round): the gateway's added CPU per traced call (metrics + traces − metrics) ÷ the SDK's, median over rounds: %s (goal ≤ %.1f: %s).\n\n",
			sdkVariant, m, tracedGoal, r.verdict(ok, "met", "**not met**"))
	}
}

// tracedCost is tracing's added cost per call ÷ the SDK's alone, median of
// the rounds' ratios, with the figures it comes from.
func (t *telemetryResult) tracedCost() (measured string, met bool) {
	on, off := t.cpu["metrics + traces"], t.cpu["metrics"]
	if len(t.sdk) == 0 || len(on) != len(t.sdk) || len(off) != len(t.sdk) {
		return "", false
	}
	var rs []float64
	var added []time.Duration
	for i := range t.sdk {
		if t.sdk[i] > 0 {
			rs = append(rs, float64(on[i]-off[i])/float64(t.sdk[i]))
			added = append(added, on[i]-off[i])
		}
	}
	if len(rs) == 0 {
		return "", false
	}
	r := medianFloat(rs)
	return fmt.Sprintf("%.1f µs vs the SDK's %.1f µs (%.2f×)", float64(medianDuration(added))/1e3, float64(medianDuration(t.sdk))/1e3, r), r <= tracedGoal
}

// metricsCost is metrics on ÷ off, median of the rounds' ratios.
func (t *telemetryResult) metricsCost() (measured string, met bool) {
	on, off := t.cpu["metrics"], t.cpu["off"]
	if len(on) == 0 || len(on) != len(off) {
		return "", false
	}
	var rs []float64
	for i := range on {
		if off[i] > 0 {
			rs = append(rs, float64(on[i])/float64(off[i]))
		}
	}
	r := medianFloat(rs)
	return fmt.Sprintf("%s vs %s µs (%.3f×)", us(medianDuration(on)), us(medianDuration(off)), r), r <= 1.05
}

func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
