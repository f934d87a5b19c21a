package gateway

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Limits bound what the gateway's clients may hold in it at once: the
// 2026-07-28 calls waiting for a client's input, and the processes of
// per-client servers. A tenant is a client identity (see clientKey); at a
// limit the tenant's own holding goes first, never another tenant's. The
// zero value takes the defaults; a negative field means no limit.
type Limits struct {
	// MaxInputWaitsPerClient bounds the calls of one client waiting for
	// its input (an approval or a server's question answered by an
	// input-required result); one more is refused. 0: 16.
	MaxInputWaitsPerClient int
	// MaxInputWaits bounds them across all clients; one more drops the
	// oldest wait of the client holding the most. 0: 64.
	MaxInputWaits int
	// MaxPerClientProcesses bounds the processes of one per-client server
	// ("share": "per-client"); one more stops the longest idle one of the
	// same client (else of the client holding the most), and is refused
	// when all are busy. 0: 16.
	MaxPerClientProcesses int
	// MaxPerClientProcessesTotal bounds them across all per-client
	// servers, the same way. 0: 64.
	MaxPerClientProcessesTotal int
	// PerClientIdleTimeout stops a per-client process after this long
	// without a call; the client's next call starts a new one. 0: 10 min.
	PerClientIdleTimeout time.Duration
	// InputGather is how long a call's input requests are gathered for a
	// 2026-07-28 client: after each, the gateway waits this long for the
	// next before it answers with one input-required result holding them
	// all. 0: 20ms; negative: each request in a result of its own.
	InputGather time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxInputWaitsPerClient     = 16
	DefaultMaxInputWaits              = 64
	DefaultMaxPerClientProcesses      = 16
	DefaultMaxPerClientProcessesTotal = 64
	DefaultPerClientIdleTimeout       = 10 * time.Minute
	DefaultInputGather                = 20 * time.Millisecond
)

// Names of the limits, as QuotaStatus counts their refusals and the flags
// that set them.
const (
	LimitInputWaitsPerClient     = "max-input-waits-per-client"
	LimitInputWaits              = "max-input-waits"
	LimitPerClientProcesses      = "max-per-client-processes"
	LimitPerClientProcessesTotal = "max-per-client-processes-total"
)

func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return int(^uint(0) >> 1)
	}
	return v
}

func (l Limits) inputWaitsPerClient() int {
	return limit(l.MaxInputWaitsPerClient, DefaultMaxInputWaitsPerClient)
}
func (l Limits) inputWaits() int { return limit(l.MaxInputWaits, DefaultMaxInputWaits) }
func (l Limits) processes() int  { return limit(l.MaxPerClientProcesses, DefaultMaxPerClientProcesses) }
func (l Limits) processesTotal() int {
	return limit(l.MaxPerClientProcessesTotal, DefaultMaxPerClientProcessesTotal)
}

// duration is a Limits duration: 0 takes def, negative none (0).
func duration(v, def time.Duration) time.Duration {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (l Limits) inputGather() time.Duration { return duration(l.InputGather, DefaultInputGather) }
func (l Limits) idleTimeout() time.Duration {
	return duration(l.PerClientIdleTimeout, DefaultPerClientIdleTimeout)
}

// QuotaStatus is what the gateway's clients hold against its Limits, for
// the metrics.
type QuotaStatus struct {
	InputWaits         int            // calls waiting for a client's input
	Tasks              int            // tasks held (kept, or a call in flight that may make one)
	PerClientProcesses map[string]int // running processes of per-client servers, by server
	Refused            map[string]uint64
	// Dropped counts holdings ended to make room or for idleness:
	// "input_wait" (dropped at LimitInputWaits), "process_evicted" (a
	// process stopped at a process limit), "process_idle".
	Dropped map[string]uint64
}

// quotaCounters count refusals and drops by limit.
type quotaCounters struct {
	mu      sync.Mutex
	refused map[string]uint64
	dropped map[string]uint64
}

func (q *quotaCounters) refuse(limit string) {
	q.mu.Lock()
	if q.refused == nil {
		q.refused = map[string]uint64{}
	}
	q.refused[limit]++
	q.mu.Unlock()
}

func (q *quotaCounters) drop(what string) {
	q.mu.Lock()
	if q.dropped == nil {
		q.dropped = map[string]uint64{}
	}
	q.dropped[what]++
	q.mu.Unlock()
}

// QuotaStatus reports what the clients hold now and what was refused.
func (g *Gateway) QuotaStatus() QuotaStatus {
	st := QuotaStatus{PerClientProcesses: map[string]int{}, Refused: map[string]uint64{}, Dropped: map[string]uint64{}}
	mrt := g.multiRoundTrip()
	mrt.mu.Lock()
	st.InputWaits = len(mrt.waits)
	mrt.mu.Unlock()
	g.tasks.mu.Lock()
	st.Tasks = g.tasks.held()
	g.tasks.mu.Unlock()
	g.procs.mu.Lock()
	for p := range g.procs.all {
		st.PerClientProcesses[p.srv.name]++
	}
	g.procs.mu.Unlock()
	g.quota.mu.Lock()
	for k, v := range g.quota.refused {
		st.Refused[k] = v
	}
	for k, v := range g.quota.dropped {
		st.Dropped[k] = v
	}
	g.quota.mu.Unlock()
	return st
}

// maxClientKey bounds a client's identity as kept with what it holds.
const maxClientKey = 128

// clientKey is the identity a client's holdings are counted under: the
// name its clientInfo declares (a sandbox's gateway serves one sandbox, so
// its clients are told apart by what they say they are). Unnamed clients
// share one identity.
func clientKey(info json.RawMessage) string {
	name, _ := wire.GetString(info, "name")
	if name == "" {
		return "(unnamed client)"
	}
	if len(name) > maxClientKey {
		name = strings.ToValidUTF8(name[:maxClientKey], "")
	}
	return name
}

// quotaState is embedded in Gateway.
type quotaState struct {
	Limits Limits // set before serving
	quota  quotaCounters
	procs  procTable
}
