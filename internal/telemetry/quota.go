package telemetry

import (
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/prometheus/client_golang/prometheus"
)

// The gateway's limits on what its clients hold (gateway.Limits), and the
// host's approval queue: what is held now, and what was refused or ended.

var (
	descInputWaits = prometheus.NewDesc("mcp_gateway_input_waits",
		"2026-07-28 calls waiting for their client's input (an approval or a server's question, answered by a retry).",
		nil, nil)
	descPerClientProcesses = prometheus.NewDesc("mcp_gateway_per_client_processes",
		"Running processes of per-client servers (\"share\": \"per-client\"), one per client session.",
		[]string{"server"}, nil)
	descTasks = prometheus.NewDesc("mcp_gateway_tasks",
		"Tasks the gateway holds for its clients (kept until their ttl, or a task-augmented call in flight), bounded by --max-tasks in all.",
		nil, nil)
	descLimitRefusals = prometheus.NewDesc("mcp_gateway_limit_refusals_total",
		"Requests refused at a limit on what clients hold, by the limit's flag (max-input-waits-per-client, max-per-client-processes, max-per-client-processes-total, max-tasks-per-client, max-tasks) or fixed bound (max-extension-sessions-per-client, max-extension-sessions: sessions of a remote server made for 2026-07-28 clients' declared capabilities).",
		[]string{"limit"}, nil)
	descLimitDrops = prometheus.NewDesc("mcp_gateway_limit_drops_total",
		"Holdings ended to make room or for idleness: input_wait (the oldest of the client holding the most, at max-input-waits), process_evicted (the longest idle per-client process, at a process limit), process_idle (per-client-idle-timeout).",
		[]string{"what"}, nil)
	descApprovalsPending = prometheus.NewDesc("mcp_gateway_approvals_pending",
		"Calls waiting in the host's approval queue (`mcp-gateway approval ls`), by sandbox.",
		[]string{"sandbox"}, nil)
	descApprovalsRefused = prometheus.NewDesc("mcp_gateway_approvals_refused_total",
		"Calls denied at once because their sandbox had --max-pending-approvals calls waiting for approval.",
		[]string{"sandbox"}, nil)
)

// WatchQuotas adds a source of what a gateway's clients hold against its
// limits (a Gateway's QuotaStatus), read at every scrape.
func (m *callSet) WatchQuotas(status func() gateway.QuotaStatus) {
	m.mu.Lock()
	m.quotas = append(m.quotas, status)
	m.mu.Unlock()
}

// quotaCollector reads the gateways' QuotaStatus at scrape time.
type quotaCollector struct{ m *callSet }

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descInputWaits
	ch <- descTasks
	ch <- descPerClientProcesses
	ch <- descLimitRefusals
	ch <- descLimitDrops
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	sources := c.m.quotas
	c.m.mu.Unlock()
	if len(sources) == 0 {
		return
	}
	waits, tasks, procs, refused, dropped := 0, 0, map[string]int{}, map[string]uint64{}, map[string]uint64{}
	for _, status := range sources {
		st := status()
		waits += st.InputWaits
		tasks += st.Tasks
		for k, v := range st.PerClientProcesses {
			procs[k] += v
		}
		for k, v := range st.Refused {
			refused[k] += v
		}
		for k, v := range st.Dropped {
			dropped[k] += v
		}
	}
	ch <- prometheus.MustNewConstMetric(descInputWaits, prometheus.GaugeValue, float64(waits))
	ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(tasks))
	for k, v := range procs {
		ch <- prometheus.MustNewConstMetric(descPerClientProcesses, prometheus.GaugeValue, float64(v), k)
	}
	for _, k := range []string{gateway.LimitInputWaitsPerClient, gateway.LimitPerClientProcesses, gateway.LimitPerClientProcessesTotal, gateway.LimitTasksPerClient, gateway.LimitTasks,
		gateway.LimitExtensionSessionsPerClient, gateway.LimitExtensionSessions} {
		ch <- prometheus.MustNewConstMetric(descLimitRefusals, prometheus.CounterValue, float64(refused[k]), k)
	}
	for _, k := range []string{"input_wait", "process_evicted", "process_idle"} {
		ch <- prometheus.MustNewConstMetric(descLimitDrops, prometheus.CounterValue, float64(dropped[k]), k)
	}
}

// WatchApprovals registers the host's approval queue (policy.Queue's
// Pending) with the metrics. Call it once.
func (m *shared) WatchApprovals(pending func() (map[string]int, map[string]uint64)) {
	m.reg.MustRegister(approvalCollector(pending))
}

type approvalCollector func() (map[string]int, map[string]uint64)

func (c approvalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descApprovalsPending
	ch <- descApprovalsRefused
}

func (c approvalCollector) Collect(ch chan<- prometheus.Metric) {
	pending, refused := c()
	for sb, n := range pending {
		ch <- prometheus.MustNewConstMetric(descApprovalsPending, prometheus.GaugeValue, float64(n), sb)
	}
	for sb, n := range refused {
		ch <- prometheus.MustNewConstMetric(descApprovalsRefused, prometheus.CounterValue, float64(n), sb)
	}
}
