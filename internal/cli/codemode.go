package cli

import (
	"flag"
	"fmt"
	"log/slog"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// codeModeFlags turn on the code-mode built-in (docs/code-mode.md) and
// bound its runs.
type codeModeFlags struct {
	enabled bool
	limits  codemode.Limits
	runner  codemode.RunnerOptions

	runners *codemode.Runners // made by options
}

func (f *codeModeFlags) register(fs *flag.FlagSet, enabled bool) {
	fs.BoolVar(&f.enabled, "code-mode", enabled, "offer the code-mode tool: agents run JavaScript programs that call the servers' tools, and create code-mode-<name> tools (docs/code-mode.md)")
	fs.DurationVar(&f.limits.Timeout, "code-mode-timeout", codemode.DefaultTimeout, "longest wall-clock time of one code-mode run, its inner calls included")
	fs.DurationVar(&f.limits.CPU, "code-mode-cpu", codemode.DefaultCPU, "longest time a code-mode program's own code may run (not counting its waits for inner calls)")
	fs.IntVar(&f.limits.Calls, "code-mode-max-calls", codemode.DefaultCalls, "inner tool calls one code-mode run may make")
	fs.IntVar(&f.limits.Concurrent, "code-mode-max-concurrent-calls", codemode.DefaultConcurrent, "inner calls of one run in flight at once (more wait their turn)")
	fs.IntVar(&f.limits.ProgramBytes, "code-mode-max-program-bytes", codemode.DefaultProgramBytes, "largest code-mode program, in bytes")
	fs.IntVar(&f.limits.ResultBytes, "code-mode-max-result-bytes", codemode.DefaultResultBytes, "largest result of one inner call a program may receive, in bytes")
	fs.IntVar(&f.limits.ReturnBytes, "code-mode-max-return-bytes", codemode.DefaultReturnBytes, "largest value a program may return, in bytes of JSON")
	fs.Int64Var(&f.limits.MemoryBytes, "code-mode-max-memory-bytes", codemode.DefaultMemoryBytes, "how much a code-mode runner's heap may grow while a program's code runs; the OS caps the runner's data at 256 MiB + twice this (docs/code-mode.md, \"Memory\")")
	fs.StringVar(&f.runner.Path, "code-mode-runner", "", "the code-mode runner executable, "+codemode.RunnerName+" (default: the one beside this executable, else on PATH)")
	fs.IntVar(&f.runner.MaxTotal, "code-mode-max-runners", codemode.DefaultMaxRunners, "code-mode runner processes at most (runs beyond them wait their turn within their timeout)")
	fs.IntVar(&f.runner.MaxPerClient, "code-mode-max-runners-per-client", codemode.DefaultMaxRunnersPerClient, "code-mode runner processes one client's runs may use at once")
	fs.DurationVar(&f.runner.Idle, "code-mode-runner-idle", codemode.DefaultRunnerIdle, "how long an idle code-mode runner is kept warm for the next run before it exits")
}

// args passes the flags on (the launcher to the serving process).
func (f *codeModeFlags) args() []string {
	l := f.limits
	return []string{fmt.Sprintf("--code-mode=%t", f.enabled),
		"--code-mode-timeout=" + l.Timeout.String(), "--code-mode-cpu=" + l.CPU.String(),
		fmt.Sprintf("--code-mode-max-calls=%d", l.Calls), fmt.Sprintf("--code-mode-max-concurrent-calls=%d", l.Concurrent),
		fmt.Sprintf("--code-mode-max-program-bytes=%d", l.ProgramBytes), fmt.Sprintf("--code-mode-max-result-bytes=%d", l.ResultBytes),
		fmt.Sprintf("--code-mode-max-return-bytes=%d", l.ReturnBytes), fmt.Sprintf("--code-mode-max-memory-bytes=%d", l.MemoryBytes),
		"--code-mode-runner=" + f.runner.Path, fmt.Sprintf("--code-mode-max-runners=%d", f.runner.MaxTotal),
		fmt.Sprintf("--code-mode-max-runners-per-client=%d", f.runner.MaxPerClient), "--code-mode-runner-idle=" + f.runner.Idle.String()}
}

// check refuses a limit that is not positive.
func (f *codeModeFlags) check() error {
	l := f.limits
	for _, v := range []struct {
		name string
		ok   bool
	}{{"--code-mode-timeout", l.Timeout > 0}, {"--code-mode-cpu", l.CPU > 0}, {"--code-mode-max-calls", l.Calls > 0},
		{"--code-mode-max-concurrent-calls", l.Concurrent > 0}, {"--code-mode-max-program-bytes", l.ProgramBytes > 0},
		{"--code-mode-max-result-bytes", l.ResultBytes > 0}, {"--code-mode-max-return-bytes", l.ReturnBytes > 0},
		{"--code-mode-max-memory-bytes", l.MemoryBytes > 0}, {"--code-mode-max-runners", f.runner.MaxTotal > 0},
		{"--code-mode-max-runners-per-client", f.runner.MaxPerClient > 0}, {"--code-mode-runner-idle", f.runner.Idle > 0}} {
		if !v.ok {
			return fmt.Errorf("%s must be more than 0", v.name)
		}
	}
	return nil
}

// options are code mode's options, nil when it is off.
func (f *codeModeFlags) options(logger *slog.Logger, tel *telemetry.Telemetry) *codemode.Options {
	if !f.enabled {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	if f.runners == nil {
		ro := f.runner
		ro.Logger, ro.MemoryBytes = logger, f.limits.MemoryBytes
		if tel != nil && tel.Metrics != nil {
			ro.Metrics = tel
		}
		f.runners = codemode.NewRunners(ro)
		if err := f.runners.Err(); err != nil {
			logger.Warn("code-mode is on but its programs cannot run: "+err.Error(), "runner", codemode.RunnerName)
		}
	}
	opts := &codemode.Options{Limits: f.limits, Logger: logger, Runners: f.runners}
	if tel != nil && tel.Metrics != nil {
		opts.Metrics = tel
	}
	return opts
}

// installCodeMode gives a serve-mode gateway the code-mode tool when it is on.
func installCodeMode(f *codeModeFlags, router *gateway.Router, logger *slog.Logger, tel *telemetry.Telemetry) error {
	opts := f.options(logger, tel)
	if opts == nil {
		return nil
	}
	return router.SetBuiltins([]gateway.Builtin{codemode.Builtin(router, *opts)})
}
