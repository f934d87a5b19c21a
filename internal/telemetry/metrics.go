package telemetry

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Outcomes of a forwarded call: the values of the outcome label.
const (
	OutcomeOK             = "ok"              // a result, not an error
	OutcomeToolError      = "tool_error"      // a tools/call result with isError: true
	OutcomeRPCError       = "rpc_error"       // a JSON-RPC error from the server (or the gateway)
	OutcomeTransportError = "transport_error" // the server could not be reached, crashed, or broke the protocol
	OutcomeTimeout        = "timeout"         // the call outlived its call timeout
	OutcomeDenied         = "denied"          // policy refused the call
)

// Buckets of the call duration histograms, in seconds: a millisecond to a minute.
var callBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Buckets of the gateway's own share of a call: 10 µs to about 80 ms.
var overheadBuckets = prometheus.ExponentialBuckets(10e-6, 2, 14)

// Metrics are the gateway's Prometheus metrics. Every label has a bounded
// set of values: server names come from the configuration, tool names from
// the servers' lists (a call naming an unknown tool never reaches a server),
// methods from the MCP specification.
type Metrics struct {
	*shared
	*callSet
}

// shared are the metrics of the whole process: the registry, the Go
// runtime and the process, the front's.
type shared struct {
	reg prometheus.Registerer
	gat prometheus.Gatherer

	requests    *prometheus.CounterVec // era, method
	perRequest  sync.Map               // [2]string{era, method} → prometheus.Counter (methods are bounded)
	slowClients prometheus.Counter

	mu       sync.Mutex
	sessions []func() map[string]int

	quota *quotaMetrics
}

// callSet are the metrics of one gateway's calls and servers: the
// process's in serve mode, a sandbox's in host mode.
type callSet struct {
	calls         *prometheus.CounterVec   // server, method, tool, outcome
	callDuration  *prometheus.HistogramVec // server, method, tool
	upstreamTime  *prometheus.HistogramVec // server, method
	overhead      *prometheus.HistogramVec // server, method
	inFlight      *prometheus.GaugeVec     // server
	requestBytes  *prometheus.CounterVec   // server
	responseBytes *prometheus.CounterVec   // server
	refetches     *prometheus.CounterVec   // server, list

	mu       sync.Mutex
	statuses []func() map[string]gateway.ServerStatus
	quotas   []func() gateway.QuotaStatus // see quota.go

	perServer sync.Map // server name → *serverMetrics
	perTarget sync.Map // targetKey → *targetMetrics, at most maxCachedTargets
	targets   atomic.Int32

	codeMode codeModeMetrics // see the code-mode block below
}

// serverMetrics are the children of one server, looked up once.
type serverMetrics struct {
	inFlight      prometheus.Gauge
	requestBytes  prometheus.Counter
	responseBytes prometheus.Counter
}

// targetKey names what a call went to: its server, method and tool.
type targetKey struct{ server, method, tool string }

// targetMetrics are the children of one call target, looked up once: the
// per-call cost is then the observations, not four label hashes and
// vector lookups.
type targetMetrics struct {
	key                          targetKey
	duration, upstream, overhead prometheus.Observer
	// outcomes are made on an outcome's first call, so that /metrics shows
	// only the outcomes that happened, as the vector alone would.
	outcomes [len(outcomes)]atomic.Pointer[prometheus.Counter]
}

// outcomes are the values of the outcome label, in targetMetrics.outcomes.
var outcomes = [...]string{OutcomeOK, OutcomeToolError, OutcomeRPCError, OutcomeTransportError, OutcomeTimeout, OutcomeDenied}

// maxCachedTargets bounds perTarget: past it (a server with that many tools
// called), a call's children are looked up in the vectors each time.
const maxCachedTargets = 4096

// NewMetrics registers the gateway's metrics, with the Go runtime's and the
// process's, in a registry of their own.
func NewMetrics() *Metrics {
	m := NewHostMetrics()
	m.callSet = newCallSet()
	m.reg.MustRegister(m.callSet.collectors()...)
	return m
}

// NewHostMetrics is NewMetrics for many gateways (host mode): the calls
// and servers of each are counted by ForSandbox, labelled with its name.
func NewHostMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sh := &shared{reg: reg, gat: reg}
	sh.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_requests_total",
		Help: "MCP requests received from clients, by protocol era (session: 2025-11-25 and earlier; stateless: 2026-07-28) and method.",
	}, []string{"era", "method"})
	sh.slowClients = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mcp_gateway_slow_client_disconnects_total",
		Help: "Client streams closed because the client did not read them within the slow client timeout.",
	})
	reg.MustRegister(sh.requests, sh.slowClients, sessionCollector{sh})
	sh.quota = newQuotaMetrics(reg)
	return &Metrics{shared: sh}
}

// ForSandbox returns the metrics of one sandbox's gateway: its calls and
// servers carry the label sandbox="<name>". forget removes its series (the
// sandbox is gone). On a nil Metrics it returns nil.
func (m *Metrics) ForSandbox(name string) (_ *Metrics, forget func()) {
	if m == nil {
		return nil, func() {}
	}
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"sandbox": name}, m.reg)
	set := newCallSet()
	cs := set.collectors()
	reg.MustRegister(cs...)
	return &Metrics{shared: m.shared, callSet: set}, func() {
		for _, c := range cs {
			reg.Unregister(c)
		}
	}
}

func newCallSet() *callSet {
	m := &callSet{}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_calls_total",
		Help: "Requests forwarded to MCP servers, by server, method, original tool name (tools/call only) and outcome (ok, tool_error, rpc_error, transport_error, timeout, denied).",
	}, []string{"server", "method", "tool", "outcome"})
	m.callDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_gateway_call_duration_seconds",
		Help:    "Duration of forwarded requests from the gateway receiving them to their answer being ready (OpenTelemetry mcp.server.operation.duration).",
		Buckets: callBuckets,
	}, []string{"server", "method", "tool"})
	m.upstreamTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_gateway_upstream_duration_seconds",
		Help:    "Time forwarded requests spent waiting for their MCP server (OpenTelemetry mcp.client.operation.duration).",
		Buckets: callBuckets,
	}, []string{"server", "method"})
	m.overhead = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_gateway_overhead_seconds",
		Help:    "The gateway's own share of a forwarded request's duration: its total less the time spent waiting for the server.",
		Buckets: overheadBuckets,
	}, []string{"server", "method"})
	m.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcp_gateway_calls_in_flight",
		Help: "Requests forwarded to an MCP server and not yet answered.",
	}, []string{"server"})
	m.requestBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_call_request_bytes_total",
		Help: "Bytes of params sent to MCP servers in forwarded requests.",
	}, []string{"server"})
	m.responseBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_call_response_bytes_total",
		Help: "Bytes of results and errors returned to clients for forwarded requests.",
	}, []string{"server"})
	m.refetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_list_refetches_total",
		Help: "Times a server's list was fetched again after it announced a change or was restarted, by server and list method.",
	}, []string{"server", "list"})
	m.codeMode = newCodeModeMetrics()
	return m
}

func (m *callSet) collectors() []prometheus.Collector {
	return append([]prometheus.Collector{m.calls, m.callDuration, m.upstreamTime, m.overhead, m.inFlight,
		m.requestBytes, m.responseBytes, m.refetches, stateCollector{m}, quotaCollector{m}}, m.codeMode.collectors()...)
}

// Handler serves the metrics in the Prometheus text (or protobuf) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.gat, promhttp.HandlerOpts{})
}

// Registerer is where more collectors can be registered.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// WatchServers adds a source of per-server state (a Router's Status) to the
// upstream metrics, read at every scrape.
func (m *callSet) WatchServers(status func() map[string]gateway.ServerStatus) {
	m.mu.Lock()
	m.statuses = append(m.statuses, status)
	m.mu.Unlock()
}

// WatchSessions adds a source of open session counts by protocol version
// (the front's), read at every scrape.
func (m *shared) WatchSessions(count func() map[string]int) {
	m.mu.Lock()
	m.sessions = append(m.sessions, count)
	m.mu.Unlock()
}

func (m *callSet) server(name string) *serverMetrics {
	if v, ok := m.perServer.Load(name); ok {
		return v.(*serverMetrics)
	}
	sm := &serverMetrics{
		inFlight:      m.inFlight.WithLabelValues(name),
		requestBytes:  m.requestBytes.WithLabelValues(name),
		responseBytes: m.responseBytes.WithLabelValues(name),
	}
	v, _ := m.perServer.LoadOrStore(name, sm)
	return v.(*serverMetrics)
}

// knownMethods bounds the method label of requests_total: a client may
// send any method name; the others count as "other".
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true, "resources/list": true, "resources/read": true,
	"resources/templates/list": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true, "server/discover": true,
	"subscriptions/listen": true, "tasks/get": true, "tasks/list": true, "tasks/cancel": true, "tasks/result": true,
}

func boundedMethod(method string) string {
	if knownMethods[method] {
		return method
	}
	return "other"
}

// request counts a request received from a client.
func (m *shared) request(era, method string) {
	k := [2]string{era, boundedMethod(method)}
	if c, ok := m.perRequest.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := m.perRequest.LoadOrStore(k, m.requests.WithLabelValues(k[0], k[1]))
	c.(prometheus.Counter).Inc()
}

// SlowClientDisconnect counts a client stream given up as too slow.
func (m *Metrics) SlowClientDisconnect() {
	if m != nil {
		m.slowClients.Inc()
	}
}

// callStarted and callEnded record one forwarded call.
func (m *callSet) callStarted(server string, requestBytes int) *serverMetrics {
	sm := m.server(server)
	sm.inFlight.Inc()
	sm.requestBytes.Add(float64(requestBytes))
	return sm
}

func (m *callSet) callEnded(sm *serverMetrics, c gateway.CallInfo, outcome string, total, upstream time.Duration, responseBytes int) {
	sm.inFlight.Dec()
	sm.responseBytes.Add(float64(responseBytes))
	tool := ""
	if c.Method == "tools/call" {
		tool = c.Name
	}
	tm := m.target(targetKey{c.Server, c.Method, tool})
	m.outcome(tm, outcome).Inc()
	tm.duration.Observe(total.Seconds())
	if outcome != OutcomeDenied {
		tm.upstream.Observe(upstream.Seconds())
	}
	tm.overhead.Observe(max(total-upstream, 0).Seconds())
}

// target returns the children of one call target, from perTarget when it
// holds them.
func (m *callSet) target(k targetKey) *targetMetrics {
	if v, ok := m.perTarget.Load(k); ok {
		return v.(*targetMetrics)
	}
	tm := &targetMetrics{
		key:      k,
		duration: m.callDuration.WithLabelValues(k.server, k.method, k.tool),
		upstream: m.upstreamTime.WithLabelValues(k.server, k.method),
		overhead: m.overhead.WithLabelValues(k.server, k.method),
	}
	if m.targets.Load() >= maxCachedTargets {
		return tm
	}
	v, loaded := m.perTarget.LoadOrStore(k, tm)
	if !loaded {
		m.targets.Add(1)
	}
	return v.(*targetMetrics)
}

// outcome returns the calls_total child of a target's outcome.
func (m *callSet) outcome(tm *targetMetrics, outcome string) prometheus.Counter {
	for i, o := range outcomes {
		if o != outcome {
			continue
		}
		if c := tm.outcomes[i].Load(); c != nil {
			return *c
		}
		c := m.calls.WithLabelValues(tm.key.server, tm.key.method, tm.key.tool, outcome)
		tm.outcomes[i].Store(&c)
		return c
	}
	return m.calls.WithLabelValues(tm.key.server, tm.key.method, tm.key.tool, outcome)
}

// States a server can be in (gateway.ServerStatus.State).
var serverStates = []string{"starting", "ready", "failed"}

var (
	descState = prometheus.NewDesc("mcp_gateway_upstream_state",
		"The state of each MCP server: 1 for the state it is in (starting, ready, failed), 0 for the others.",
		[]string{"server", "state"}, nil)
	descRestarts = prometheus.NewDesc("mcp_gateway_upstream_restarts_total",
		"Times an MCP server's process (or remote session) was started again after its first start.",
		[]string{"server"}, nil)
	descStart = prometheus.NewDesc("mcp_gateway_upstream_start_time_seconds",
		"Unix time at which an MCP server's current process (or remote session) started.",
		[]string{"server"}, nil)
	descTools = prometheus.NewDesc("mcp_gateway_upstream_tools",
		"Tools an MCP server exposes through the gateway.",
		[]string{"server"}, nil)
	descSessions = prometheus.NewDesc("mcp_gateway_sessions",
		"Open client sessions by protocol version (2026-07-28 clients have none: see mcp_gateway_requests_total{era=\"stateless\"}).",
		[]string{"protocol_version"}, nil)
)

// stateCollector reads the servers' state at scrape time.
type stateCollector struct{ m *callSet }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descState
	ch <- descRestarts
	ch <- descStart
	ch <- descTools
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	statuses := c.m.statuses
	c.m.mu.Unlock()
	for _, status := range statuses {
		for name, st := range status() {
			for _, s := range serverStates {
				v := 0.0
				if st.State == s {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, name, s)
			}
			ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(st.Restarts), name)
			ch <- prometheus.MustNewConstMetric(descTools, prometheus.GaugeValue, float64(st.Tools), name)
			if !st.Started.IsZero() {
				ch <- prometheus.MustNewConstMetric(descStart, prometheus.GaugeValue, float64(st.Started.UnixNano())/1e9, name)
			}
		}
	}
}

// sessionCollector reads the open sessions at scrape time.
type sessionCollector struct{ m *shared }

func (c sessionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descSessions }

func (c sessionCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	sessions := c.m.sessions
	c.m.mu.Unlock()
	total := map[string]int{}
	for _, count := range sessions {
		for v, n := range count() {
			total[v] += n
		}
	}
	for v, n := range total {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n), v)
	}
}

// ---- Quotas of the front: sessions per tenant and replay buffers ----

// quotaMetrics count what the front's per-tenant limits did: sessions
// evicted or refused (by the limit: per_tenant, total) and the bytes kept
// for resuming streams, with the events dropped from them unsent (by the
// limit: events, stream, session, total).
type quotaMetrics struct {
	evicted *prometheus.CounterVec
	refused *prometheus.CounterVec
	dropped *prometheus.CounterVec

	mu     sync.Mutex
	replay []func() int64 // the fronts' replay bytes, read at every scrape
}

func newQuotaMetrics(reg prometheus.Registerer) *quotaMetrics {
	q := &quotaMetrics{
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_gateway_sessions_evicted_total",
			Help: "Client sessions ended to make room for a new one, by the limit reached (per_tenant: --max-sessions-per-tenant; total: --max-sessions).",
		}, []string{"limit"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_gateway_sessions_refused_total",
			Help: "Initialize requests answered 503 because the limit was reached and no session could be ended for them, by the limit.",
		}, []string{"limit"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_gateway_replay_events_dropped_total",
			Help: "Events dropped from replay buffers before any connection wrote them, by the limit (events: 256 per stream; stream, session, total: the --replay-bytes flags).",
		}, []string{"limit"}),
	}
	replayBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcp_gateway_replay_bytes",
		Help: "Bytes held for clients resuming streams with Last-Event-ID (bounded by --replay-bytes).",
	}, func() float64 {
		q.mu.Lock()
		defer q.mu.Unlock()
		var n int64
		for _, f := range q.replay {
			n += f()
		}
		return float64(n)
	})
	reg.MustRegister(q.evicted, q.refused, q.dropped, replayBytes)
	return q
}

// SessionEvicted counts a session ended to make room for a new one.
func (t *Telemetry) SessionEvicted(limit string) {
	if t != nil && t.Metrics != nil {
		t.Metrics.quota.evicted.WithLabelValues(limit).Inc()
	}
}

// SessionRefused counts an initialize refused at a session limit.
func (t *Telemetry) SessionRefused(limit string) {
	if t != nil && t.Metrics != nil {
		t.Metrics.quota.refused.WithLabelValues(limit).Inc()
	}
}

// WatchReplay adds a source of the bytes held for replay (a front's),
// read at every scrape.
func (t *Telemetry) WatchReplay(held func() int64) {
	if t != nil && t.Metrics != nil {
		q := t.Metrics.quota
		q.mu.Lock()
		q.replay = append(q.replay, held)
		q.mu.Unlock()
	}
}

// ReplayEventsDropped counts n events dropped unsent from a replay buffer.
func (t *Telemetry) ReplayEventsDropped(limit string, n int) {
	if t != nil && t.Metrics != nil {
		t.Metrics.quota.dropped.WithLabelValues(limit).Add(float64(n))
	}
}

// ---- Code mode: programs run by the code-mode tools (internal/codemode) ----

// codeModeMetrics count a gateway's code-mode runs by how they ended (ok,
// error, cancelled, or the limit that ended them: timeout, cpu, calls,
// program-bytes, result-bytes, return-bytes, memory) and their inner calls
// (each also counted, as any call, in mcp_gateway_calls_total).
type codeModeMetrics struct {
	runs  *prometheus.CounterVec
	inner prometheus.Counter

	runners        prometheus.Gauge
	runnersStarted prometheus.Counter
	runnersStopped *prometheus.CounterVec
}

func newCodeModeMetrics() codeModeMetrics {
	return codeModeMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_gateway_code_mode_runs_total",
			Help: "Code-mode programs run, by outcome: ok, error (the program threw), cancelled, runner (its runner process could not start or died), or the limit that ended the run (timeout, cpu, calls, program-bytes, result-bytes, return-bytes, memory).",
		}, []string{"outcome"}),
		inner: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcp_gateway_code_mode_inner_calls_total",
			Help: "Tool calls made by code-mode programs.",
		}),
		runners: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mcp_gateway_code_mode_runners",
			Help: "Code-mode runner processes (mcp-gateway-codemode) alive, busy or idle.",
		}),
		runnersStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcp_gateway_code_mode_runners_started_total",
			Help: "Code-mode runner processes started.",
		}),
		runnersStopped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_gateway_code_mode_runners_stopped_total",
			Help: "Code-mode runner processes stopped, by reason: idle, limit (its run hit a limit), cancelled, died (it exited in the middle of a run), closed.",
		}, []string{"reason"}),
	}
}

func (c codeModeMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.runs, c.inner, c.runners, c.runnersStarted, c.runnersStopped}
}

// CodeModeRunnerStarted counts a code-mode runner process started
// (codemode.RunnerMetrics).
func (t *Telemetry) CodeModeRunnerStarted() {
	if t != nil && t.Metrics != nil && t.Metrics.callSet != nil {
		t.Metrics.codeMode.runners.Inc()
		t.Metrics.codeMode.runnersStarted.Inc()
	}
}

// CodeModeRunnerStopped counts a code-mode runner process stopped
// (codemode.RunnerMetrics).
func (t *Telemetry) CodeModeRunnerStopped(reason string) {
	if t != nil && t.Metrics != nil && t.Metrics.callSet != nil {
		t.Metrics.codeMode.runners.Dec()
		t.Metrics.codeMode.runnersStopped.WithLabelValues(reason).Inc()
	}
}

// CodeModeRunEnded counts a code-mode run and its inner calls
// (codemode.Metrics).
func (t *Telemetry) CodeModeRunEnded(outcome string, calls int) {
	if t != nil && t.Metrics != nil && t.Metrics.callSet != nil {
		t.Metrics.codeMode.runs.WithLabelValues(outcome).Inc()
		t.Metrics.codeMode.inner.Add(float64(calls))
	}
}
