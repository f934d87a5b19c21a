package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// The launcher hands serve its code-mode flags as it got them, and a limit
// that is not positive is refused naming its flag.
func TestCodeModeFlags(t *testing.T) {
	parse := func(args ...string) *codeModeFlags {
		t.Helper()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f codeModeFlags
		f.register(fs, false)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f
	}
	f := parse("--code-mode", "--code-mode-cpu", "3s", "--code-mode-max-calls", "7", "--code-mode-max-memory-bytes", "1048576",
		"--code-mode-runner", "/opt/bin/mcp-gateway-codemode", "--code-mode-max-runners", "3", "--code-mode-max-runners-per-client", "1", "--code-mode-runner-idle", "5s")
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	again := parse(f.args()...)
	if again.limits != f.limits || again.enabled != f.enabled || again.runner.Path != "/opt/bin/mcp-gateway-codemode" ||
		again.runner.MaxTotal != 3 || again.runner.MaxPerClient != 1 || again.runner.Idle.String() != "5s" || !again.enabled || again.limits.Calls != 7 || again.limits.CPU.String() != "3s" {
		t.Errorf("passed on as %v: %+v, want %+v", f.args(), *again, *f)
	}
	if parse().options(nil, nil) != nil {
		t.Error("code mode is on without --code-mode")
	}
	for _, bad := range []string{"--code-mode-timeout=0s", "--code-mode-max-concurrent-calls=0", "--code-mode-max-return-bytes=-1", "--code-mode-max-runners=0", "--code-mode-max-runners-per-client=0"} {
		name := strings.SplitN(strings.TrimPrefix(bad, "--"), "=", 2)[0]
		if err := parse(bad).check(); err == nil || !strings.Contains(err.Error(), "--"+name+" must be more than 0") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
