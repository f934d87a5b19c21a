package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// The flags' defaults are the gateway's; a flag's 0 is no limit (Limits'
// negative); a negative flag is refused naming it; the launcher passes
// them on to serve.
func TestQuotaFlags(t *testing.T) {
	parse := func(args ...string) quotaFlags {
		var f quotaFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.registerHost(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := parse()
	l, err := f.limits()
	if err != nil || l != (gateway.Limits{MaxInputWaitsPerClient: 16, MaxInputWaits: 64, MaxPerClientProcesses: 16, MaxPerClientProcessesTotal: 64, PerClientIdleTimeout: 10 * time.Minute, InputGather: 20 * time.Millisecond}) || f.maxPendingApprovals != 32 {
		t.Errorf("defaults: %+v %v, pending approvals %d", l, err, f.maxPendingApprovals)
	}
	f = parse("--max-input-waits=0", "--per-client-idle-timeout=0", "--max-per-client-processes=3", "--input-gather=0")
	if l, _ := f.limits(); l.MaxInputWaits != -1 || l.PerClientIdleTimeout != -1 || l.MaxPerClientProcesses != 3 || l.InputGather != -1 {
		t.Errorf("0 as no limit: %+v", l)
	}
	neg := parse("--max-input-waits-per-client=-1")
	if _, err := neg.limits(); err == nil || !strings.Contains(err.Error(), "--max-input-waits-per-client must not be negative") {
		t.Errorf("a negative limit: %v", err)
	}
	if got := strings.Join(f.args(), " "); !strings.Contains(got, "--max-per-client-processes=3") || !strings.Contains(got, "--max-input-waits=0") {
		t.Errorf("args: %s", got)
	}
}
