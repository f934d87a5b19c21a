package cli

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

func TestTelemetryFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"--metrics-listen", "127.0.0.1:9464", "--log-calls"}, ""},
		{[]string{"--metrics=false"}, ""},
		{[]string{"--metrics=false", "--metrics-listen", "127.0.0.1:9464"}, "--metrics-listen needs --metrics"},
		{[]string{"--metrics-listen", "9464"}, "give host:port"},
	} {
		var f telemetryFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := f.check()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: check() = %v, want %q", tc.args, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		// The launcher passes the flags on: the serving process parses them back.
		var back telemetryFlags
		fs = flag.NewFlagSet("t", flag.ContinueOnError)
		back.register(fs)
		if err := fs.Parse(f.args()); err != nil || back != f {
			t.Errorf("%v: args() %v parse back to %+v (%v)", tc.args, f.args(), back, err)
		}
	}
}

func TestTelemetryBuild(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	defer func(g func(string) string) { telemetry.Getenv = g }(telemetry.Getenv)
	telemetry.Getenv = func(string) string { return "" }

	f := telemetryFlags{metrics: true, logCalls: true, metricsListen: "127.0.0.1:0"}
	tel, stop, err := f.build(context.Background(), logger)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if tel.Metrics == nil || tel.CallLog == nil || tel.Tracer != nil {
		t.Errorf("built %+v, want metrics and the call log, no tracer (no OTEL_* set)", tel)
	}

	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
	telemetry.Getenv = func(k string) string { return env[k] }
	tel, stop, err = (&telemetryFlags{}).build(context.Background(), logger)
	if err != nil {
		t.Fatal(err)
	}
	if tel.Tracer == nil || tel.Metrics != nil {
		t.Errorf("built %+v, want a tracer only", tel)
	}
	stop()

	env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
	if _, stop, err = (&telemetryFlags{}).build(context.Background(), logger); err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc: %v, want an error naming http/protobuf", err)
	}
	stop()

	// Host mode: metrics only with --metrics-listen.
	var hf telemetryFlags
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	hf.registerHost(fs)
	if fs.Lookup("metrics") != nil || !slices.ContainsFunc([]string{"metrics-listen", "log-calls"}, func(n string) bool { return fs.Lookup(n) != nil }) {
		t.Error("host flags: want --metrics-listen and --log-calls, no --metrics")
	}
	delete(env, "OTEL_EXPORTER_OTLP_PROTOCOL")
	delete(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
	tel, stop, _ = hf.build(context.Background(), logger)
	stop()
	if tel.Metrics != nil {
		t.Error("host without --metrics-listen records metrics")
	}
}
