package telemetry

import (
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a policy decision: the values of the result label of
// mcp_gateway_policy_decisions_total.
const (
	PolicyPermit          = "permit"           // allowed without asking anyone
	PolicyDeny            = "deny"             // refused by a forbid, or by the default deny
	PolicyApprovalGranted = "approval_granted" // a permit with @requireApproval, approved by a person
	PolicyApprovalDenied  = "approval_denied"  // not approved (denied, or nobody could be asked)
	PolicyApprovalTimeout = "approval_timeout" // nobody answered within --approval-timeout
)

var policyResults = []string{PolicyPermit, PolicyDeny, PolicyApprovalGranted, PolicyApprovalDenied, PolicyApprovalTimeout}

// policyActions are the schema's actions: the values of the action label.
var policyActions = []string{"register", "invokeTool", "invokePrimordial", "readResource", "getPrompt"}

// PolicyDecisions counts policy decisions by action and result. Both
// labels have fixed sets of values (the schema's five actions, the five
// results above; another action is counted as "other", another result not
// at all), so the series are at most 30; the 25 are created at once, so a
// rate is defined before the first decision. A nil *PolicyDecisions counts nothing.
type PolicyDecisions struct {
	vec   *prometheus.CounterVec
	byKey map[[2]string]prometheus.Counter
}

// PolicyDecisions registers the policy decision counter
// (mcp_gateway_policy_decisions_total) in the metrics' registry: labelled
// sandbox="<name>" when sandbox is not "" (host mode; forget removes its
// series when the sandbox goes), unlabelled otherwise (serve, stdio). On a
// nil Metrics it returns nil.
func (m *Metrics) PolicyDecisions(sandbox string) (_ *PolicyDecisions, forget func()) {
	if m == nil {
		return nil, func() {}
	}
	reg := m.reg
	if sandbox != "" {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"sandbox": sandbox}, m.reg)
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcp_gateway_policy_decisions_total",
		Help: "Policy decisions of calls (and of completions, subscriptions and server attachments), by action (register, invokeTool, invokePrimordial, readResource, getPrompt) and result (permit, deny, approval_granted, approval_denied, approval_timeout).",
	}, []string{"action", "result"})
	if err := reg.Register(vec); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if !errors.As(err, &dup) {
			panic(err) // a programming error: a clash of names or labels
		}
		vec = dup.ExistingCollector.(*prometheus.CounterVec)
	}
	p := &PolicyDecisions{vec: vec, byKey: map[[2]string]prometheus.Counter{}}
	for _, r := range policyResults {
		for _, a := range policyActions {
			p.byKey[[2]string{a, r}] = vec.WithLabelValues(a, r)
		}
	}
	return p, func() { reg.Unregister(vec) }
}

// Count counts one decision. A result outside the five is not counted.
func (p *PolicyDecisions) Count(action, result string) {
	if p == nil {
		return
	}
	if c, ok := p.byKey[[2]string{action, result}]; ok {
		c.Inc()
		return
	}
	if slices.Contains(policyResults, result) {
		p.vec.WithLabelValues("other", result).Inc()
	}
}
