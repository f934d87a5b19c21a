package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// telemetryFlags turn the gateway's metrics, traces and call log on and off
// (traces by the standard OTEL_* environment variables).
type telemetryFlags struct {
	metrics       bool
	metricsListen string
	logCalls      bool
	host          bool // many sandboxes: metrics per sandbox, served by --metrics-listen only
}

func (f *telemetryFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.metrics, "metrics", true, "count and time calls and serve Prometheus metrics at /metrics (with the bearer token, like /mcp)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "also serve /metrics without a token on this `address` (host:port), for a scraper on a private network")
	fs.BoolVar(&f.logCalls, "log-calls", false, "log one line per call: server, tool, duration, outcome, sizes, trace id (never the arguments)")
}

// registerHost registers the flags of the host daemon, whose metrics are
// the operator's: on when --metrics-listen serves them, never on the MCP port.
func (f *telemetryFlags) registerHost(fs *flag.FlagSet) {
	f.host = true
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics, every sandbox's calls labelled with its name, without a token on this `address` (host:port), for a scraper on a private network")
	fs.BoolVar(&f.logCalls, "log-calls", false, "log one line per call: sandbox, server, tool, duration, outcome, sizes, trace id (never the arguments)")
}

func (f *telemetryFlags) args() []string {
	a := []string{fmt.Sprintf("--metrics=%t", f.metrics)}
	if f.metricsListen != "" {
		a = append(a, "--metrics-listen="+f.metricsListen)
	}
	if f.logCalls {
		a = append(a, "--log-calls")
	}
	return a
}

func (f *telemetryFlags) check() error {
	if f.metricsListen != "" && !f.metrics && !f.host {
		return errors.New("--metrics-listen needs --metrics")
	}
	if f.metricsListen != "" {
		if _, _, err := net.SplitHostPort(f.metricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v; give host:port, e.g. 127.0.0.1:9464", f.metricsListen, err)
		}
	}
	return nil
}

// build makes the gateway's telemetry from the flags and the environment.
// stop flushes the spans still queued and stops the metrics listener.
func (f *telemetryFlags) build(ctx context.Context, logger *slog.Logger) (t *telemetry.Telemetry, stop func(), err error) {
	t = &telemetry.Telemetry{}
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	switch {
	case f.host && f.metricsListen != "":
		t.Metrics = telemetry.NewHostMetrics()
	case f.metrics && !f.host:
		t.Metrics = telemetry.NewMetrics()
	}
	if f.logCalls {
		t.CallLog = logger
	}
	if telemetry.TracingConfigured(telemetry.Getenv) {
		var tp *sdktrace.TracerProvider
		if tp, err = telemetry.NewTracerProvider(ctx, version(), telemetry.Getenv); err != nil {
			return nil, stop, err
		}
		t.Tracer = tp.Tracer(telemetry.Instrumentation)
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(ctx); err != nil {
				logger.Warn("flushing the last spans failed", "err", err)
			}
		})
		logger.Info("exporting traces over OTLP/HTTP (OTEL_* environment variables)")
	}
	if f.metricsListen != "" {
		ln, err := net.Listen("tcp", f.metricsListen)
		if err != nil {
			stop()
			return nil, func() {}, fmt.Errorf("--metrics-listen %s: %w", f.metricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", t.Metrics.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("the metrics listener stopped", "addr", f.metricsListen, "err", err)
			}
		}()
		stops = append(stops, func() { _ = srv.Close() })
		logger.Info("serving /metrics without a token", "addr", ln.Addr().String())
	}
	return t, stop, nil
}
