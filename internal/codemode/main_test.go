package codemode

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode/engine"
)

// testRunnerEnv makes the test binary a runner (cmd/mcp-gateway-codemode's
// main), so the tests run programs in real runner processes.
const testRunnerEnv = "CODEMODE_TEST_RUNNER"

// testRunnerProfileEnv, set for a benchmark, makes each of its runners
// write a CPU profile to <its value>.<pid>.
const testRunnerProfileEnv = "CODEMODE_TEST_RUNNER_PROFILE"

// testRunners are the tests' runners: this test binary, as a runner.
var testRunners *Runners

func TestMain(m *testing.M) {
	switch os.Getenv(testRunnerEnv) {
	case "serve":
		if path := os.Getenv(testRunnerProfileEnv); path != "" { // a profile of the runner's side of a benchmark
			f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
			if err == nil && pprof.StartCPUProfile(f) == nil {
				defer os.Exit(0)
				defer pprof.StopCPUProfile()
			}
		}
		if err := engine.Serve(os.Stdin, os.Stdout, 0); err != nil {
			os.Exit(1)
		}
		return
	case "crash":
		os.Stderr.WriteString("panic: the runner broke\n")
		os.Exit(2)
	}
	testRunners = newTestRunners(RunnerOptions{})
	code := m.Run()
	testRunners.Close()
	os.Exit(code)
}

// newTestRunners are runners of this test binary, serving.
func newTestRunners(o RunnerOptions) *Runners {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	o.Path = self
	if o.Env == nil {
		o.Env = []string{testRunnerEnv + "=serve"}
		if path := os.Getenv(testRunnerProfileEnv); path != "" {
			o.Env = append(o.Env, testRunnerProfileEnv+"="+path)
		}
	}
	o.Logger = slog.New(slog.DiscardHandler)
	return NewRunners(o)
}
