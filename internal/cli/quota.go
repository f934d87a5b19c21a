package cli

import (
	"flag"
	"fmt"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/policy"
)

// quotaFlags bound what the gateway's clients may hold (gateway.Limits):
// calls waiting for a 2026-07-28 client's input, and the processes of
// per-client servers; in host mode, each sandbox's gateway has its own.
type quotaFlags struct {
	maxInputWaitsPerClient     int
	maxInputWaits              int
	maxPerClientProcesses      int
	maxPerClientProcessesTotal int
	perClientIdleTimeout       time.Duration
	inputGather                time.Duration
	maxPendingApprovals        int // host only
}

func (f *quotaFlags) register(fs *flag.FlagSet, scope string) {
	fs.IntVar(&f.maxInputWaitsPerClient, "max-input-waits-per-client", gateway.DefaultMaxInputWaitsPerClient, "calls of one 2026-07-28 client (by its clientInfo name) waiting for its input (an approval, a server's question) at once; one more is refused (0: no limit)")
	fs.IntVar(&f.maxInputWaits, "max-input-waits", gateway.DefaultMaxInputWaits, "calls waiting for a client's input in "+scope+" at once; one more drops the oldest of the client holding the most (0: no limit)")
	fs.IntVar(&f.maxPerClientProcesses, "max-per-client-processes", gateway.DefaultMaxPerClientProcesses, "processes of one per-client server (\"share\": \"per-client\") in "+scope+"; one more stops the longest idle one of the same client (else of the client holding the most), or is refused when none is idle (0: no limit)")
	fs.IntVar(&f.maxPerClientProcessesTotal, "max-per-client-processes-total", gateway.DefaultMaxPerClientProcessesTotal, "processes of all per-client servers in "+scope+", made room for the same way (0: no limit)")
	fs.DurationVar(&f.perClientIdleTimeout, "per-client-idle-timeout", gateway.DefaultPerClientIdleTimeout, "stop a per-client process after this long without a call; its client's next call starts a new one (0: never)")
	fs.DurationVar(&f.inputGather, "input-gather", gateway.DefaultInputGather, "a server's requests to a 2026-07-28 client during one call that come within this long of each other go to the client in one input-required result (0: one result each)")
}

// registerHost registers the flags of the host daemon: those of a
// sandbox's gateway and the approval queue's bound.
func (f *quotaFlags) registerHost(fs *flag.FlagSet) {
	f.register(fs, "a sandbox")
	fs.IntVar(&f.maxPendingApprovals, "max-pending-approvals", policy.MaxPendingPerPrincipal, "calls of one sandbox waiting in the approval queue ('mcp-gateway approval ls') at once; one more is denied at once")
}

// args renders the flags for the serving process.
func (f *quotaFlags) args() []string {
	return []string{
		fmt.Sprintf("--max-input-waits-per-client=%d", f.maxInputWaitsPerClient),
		fmt.Sprintf("--max-input-waits=%d", f.maxInputWaits),
		fmt.Sprintf("--max-per-client-processes=%d", f.maxPerClientProcesses),
		fmt.Sprintf("--max-per-client-processes-total=%d", f.maxPerClientProcessesTotal),
		"--per-client-idle-timeout=" + f.perClientIdleTimeout.String(),
		"--input-gather=" + f.inputGather.String(),
	}
}

// limits are the gateway's Limits (a flag's 0, no limit, is Limits' negative).
func (f *quotaFlags) limits() (gateway.Limits, error) {
	for name, v := range map[string]int{"max-input-waits-per-client": f.maxInputWaitsPerClient, "max-input-waits": f.maxInputWaits,
		"max-per-client-processes": f.maxPerClientProcesses, "max-per-client-processes-total": f.maxPerClientProcessesTotal, "max-pending-approvals": f.maxPendingApprovals} {
		if v < 0 {
			return gateway.Limits{}, fmt.Errorf("--%s must not be negative, not %d (0: no limit)", name, v)
		}
	}
	if f.inputGather < 0 {
		return gateway.Limits{}, fmt.Errorf("--input-gather must not be negative, not %s (0: one input-required result for each request)", f.inputGather)
	}
	if f.perClientIdleTimeout < 0 {
		return gateway.Limits{}, fmt.Errorf("--per-client-idle-timeout must not be negative, not %s (0: never)", f.perClientIdleTimeout)
	}
	none := func(v int) int {
		if v == 0 {
			return -1
		}
		return v
	}
	idle := f.perClientIdleTimeout
	if idle == 0 {
		idle = -1
	}
	gather := f.inputGather
	if gather == 0 {
		gather = -1
	}
	return gateway.Limits{InputGather: gather, MaxInputWaitsPerClient: none(f.maxInputWaitsPerClient), MaxInputWaits: none(f.maxInputWaits),
		MaxPerClientProcesses: none(f.maxPerClientProcesses), MaxPerClientProcessesTotal: none(f.maxPerClientProcessesTotal),
		PerClientIdleTimeout: idle}, nil
}
