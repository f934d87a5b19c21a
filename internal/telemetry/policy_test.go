package telemetry

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func scrapeMetrics(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// Policy decisions are counted by action and result, in the metrics'
// registry: unlabelled in serve mode, by sandbox in host mode (its series
// leave with it); the labels' values are bounded.
func TestPolicyDecisions(t *testing.T) {
	m := NewMetrics()
	d, _ := m.PolicyDecisions("")
	d.Count("invokeTool", PolicyDeny)
	d.Count("invokeTool", PolicyDeny)
	d.Count("getPrompt", PolicyApprovalTimeout)
	d.Count("made-up", PolicyPermit)  // counted as other
	d.Count("invokeTool", "made-up")  // not counted
	again, _ := m.PolicyDecisions("") // the same counter
	again.Count("register", PolicyPermit)
	got := scrapeMetrics(t, m)
	for _, want := range []string{
		`mcp_gateway_policy_decisions_total{action="invokeTool",result="deny"} 2`,
		`mcp_gateway_policy_decisions_total{action="getPrompt",result="approval_timeout"} 1`,
		`mcp_gateway_policy_decisions_total{action="other",result="permit"} 1`,
		`mcp_gateway_policy_decisions_total{action="register",result="permit"} 1`,
		`mcp_gateway_policy_decisions_total{action="readResource",result="approval_granted"} 0`, // defined before any decision
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if strings.Contains(got, `result="made-up"`) {
		t.Error("an unknown result made a series")
	}
	if n := strings.Count(got, "mcp_gateway_policy_decisions_total{"); n != 26 {
		t.Errorf("%d series, want 25 and the one other", n)
	}

	h := NewHostMetrics()
	a, forgetA := h.PolicyDecisions("a")
	b, _ := h.PolicyDecisions("b")
	a.Count("invokeTool", PolicyApprovalGranted)
	b.Count("invokeTool", PolicyApprovalDenied)
	got = scrapeMetrics(t, h)
	for _, want := range []string{
		`mcp_gateway_policy_decisions_total{action="invokeTool",result="approval_granted",sandbox="a"} 1`,
		`mcp_gateway_policy_decisions_total{action="invokeTool",result="approval_denied",sandbox="b"} 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("the host scrape lacks %s", want)
		}
	}
	forgetA()
	if got = scrapeMetrics(t, h); strings.Contains(got, `sandbox="a"`) || !strings.Contains(got, `sandbox="b"`) {
		t.Error("a removed sandbox's decisions are still served, or another's went with them")
	}
	var none *Metrics
	n, _ := none.PolicyDecisions("x")
	n.Count("invokeTool", PolicyPermit) // a nil counter counts nothing
}
