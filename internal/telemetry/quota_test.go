package telemetry

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// The limits' block of /metrics: what is held, refused and dropped, and
// the host's approval queue by sandbox.
func TestQuotaMetrics(t *testing.T) {
	m := NewHostMetrics()
	sb, forget := m.ForSandbox("a")
	defer forget()
	sb.WatchQuotas(func() gateway.QuotaStatus {
		return gateway.QuotaStatus{InputWaits: 3, PerClientProcesses: map[string]int{"memory": 4},
			Refused: map[string]uint64{gateway.LimitInputWaitsPerClient: 2}, Dropped: map[string]uint64{"process_idle": 5}}
	})
	m.WatchApprovals(func() (map[string]int, map[string]uint64) {
		return map[string]int{"a": 1}, map[string]uint64{"a": 7}
	})
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(w.Body)
	for _, want := range []string{
		`mcp_gateway_input_waits{sandbox="a"} 3`,
		`mcp_gateway_per_client_processes{sandbox="a",server="memory"} 4`,
		`mcp_gateway_limit_refusals_total{limit="max-input-waits-per-client",sandbox="a"} 2`,
		`mcp_gateway_limit_refusals_total{limit="max-per-client-processes",sandbox="a"} 0`,
		`mcp_gateway_limit_drops_total{sandbox="a",what="process_idle"} 5`,
		`mcp_gateway_approvals_pending{sandbox="a"} 1`,
		`mcp_gateway_approvals_refused_total{sandbox="a"} 7`,
	} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
