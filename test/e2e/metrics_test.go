package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prometheus (Debian's package) scrapes the real gateway, once with the
// bearer token on /metrics of the MCP port and once without on
// --metrics-listen; calls that succeed and fail in every way are driven
// through it, and what they did is asserted through Prometheus's query API.
func TestMetricsPrometheus(t *testing.T) {
	promBin := prometheusBinary(t)
	metricsPort := freePort(t)
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"memory": {"envs": {"MEMORY_FILE_PATH": %q}}, "flaky": {"runCmd": %q}}`, filepath.Join(t.TempDir(), "m.jsonl"), testServerCmd()),
		"--call-timeout", "3s", "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))

	// Without the token, /metrics is refused like /mcp.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without the token: %d, want 401", resp.StatusCode)
	}

	prom := startPrometheus(t, promBin, fmt.Sprintf(`
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gateway
    authorization:
      type: Bearer
      credentials_file: %q
    static_configs:
      - targets: ["127.0.0.1:%d"]
  - job_name: gateway-private
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, g.tokenFile(), g.port, metricsPort))
	prom.waitValue(t, `up{job="gateway"}`, 1)
	prom.waitValue(t, `up{job="gateway-private"}`, 1)
	// A scrape before the failures, so that their rate has a start.
	prom.waitValue(t, `mcp_gateway_upstream_state{job="gateway",server="flaky",state="ready"}`, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := g.connectEra(ctx, "2025-11-25")
	call := func(name string, args any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return nil
		}
		return res
	}
	for range 3 {
		if res := call("read_graph", map[string]any{}); res == nil || res.IsError {
			t.Fatalf("read_graph failed: %+v", res)
		}
	}
	for range 2 { // the npm server's own validation fails these: tool errors
		if res := call("open_nodes", map[string]any{"names": 5}); res == nil || !res.IsError {
			t.Fatalf("open_nodes with a number for names: %+v, want a tool error", res)
		}
	}
	if res := call("fail", map[string]any{}); res == nil || !res.IsError {
		t.Fatalf("fail: %+v, want a tool error", res)
	}
	if res := call("crash", map[string]any{}); res != nil {
		t.Fatalf("crash answered %+v, want a JSON-RPC error", res)
	}
	if res := call("slow", map[string]any{}); res != nil {
		t.Fatalf("slow answered %+v, want the timeout's error", res)
	}
	if res := call("echo", map[string]any{"text": "back"}); res == nil || res.IsError { // restarts the crashed process
		t.Fatalf("echo after the crash: %+v", res)
	}

	const job = `job="gateway"`
	for _, c := range []struct {
		query string
		want  float64
	}{
		{`mcp_gateway_calls_total{` + job + `,server="memory",tool="read_graph",outcome="ok"}`, 3},
		{`mcp_gateway_calls_total{` + job + `,server="memory",tool="open_nodes",outcome="tool_error"}`, 2},
		{`mcp_gateway_calls_total{` + job + `,server="flaky",tool="fail",outcome="tool_error"}`, 1},
		{`mcp_gateway_calls_total{` + job + `,server="flaky",tool="crash",outcome="transport_error"}`, 1},
		{`mcp_gateway_calls_total{` + job + `,server="flaky",tool="slow",outcome="timeout"}`, 1},
		{`mcp_gateway_calls_total{` + job + `,server="flaky",tool="echo",outcome="ok"}`, 1},
		{`sum(mcp_gateway_call_duration_seconds_count{` + job + `,server="memory"})`, 5},
		{`sum(mcp_gateway_overhead_seconds_count{` + job + `})`, 9},
		{`mcp_gateway_upstream_restarts_total{` + job + `,server="flaky"}`, 1},
		{`mcp_gateway_upstream_state{` + job + `,server="memory",state="ready"}`, 1},
		{`mcp_gateway_upstream_tools{` + job + `,server="memory"}`, 9},
		{`mcp_gateway_sessions{` + job + `,protocol_version="2025-11-25"}`, 1},
		{`mcp_gateway_calls_in_flight{` + job + `,server="flaky"}`, 0},
		{`mcp_gateway_requests_total{` + job + `,era="session",method="tools/call"}`, 9},
		// The same through the listener without a token.
		{`mcp_gateway_calls_total{job="gateway-private",server="flaky",tool="crash",outcome="transport_error"}`, 1},
	} {
		prom.waitValue(t, c.query, c.want)
	}
	// The rate of one server's failed calls, as an alert rule would take it:
	// a rate needs two samples of a series, so one more failure after the
	// scrapes above.
	if res := call("fail", map[string]any{}); res == nil || !res.IsError {
		t.Fatalf("fail: %+v, want a tool error", res)
	}
	prom.waitTrue(t, `sum(rate(mcp_gateway_calls_total{`+job+`,server="flaky",outcome!="ok"}[1m])) > 0`)
	prom.waitValue(t, `absent(mcp_gateway_calls_total{`+job+`,server="memory",outcome=~"transport_error|timeout|rpc_error"})`, 1)
	prom.waitTrue(t, `mcp_gateway_upstream_start_time_seconds{`+job+`,server="flaky"} > ignoring(server) process_start_time_seconds{`+job+`}`)
	prom.waitTrue(t, `sum(mcp_gateway_call_request_bytes_total{`+job+`}) > 0 and sum(mcp_gateway_call_response_bytes_total{`+job+`}) > 0`)
	prom.waitTrue(t, `go_goroutines{`+job+`} > 0`)
}

// prometheusBinary finds Debian's prometheus; without it the test is
// skipped, except in CI, where it fails.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"prometheus", "/usr/bin/prometheus"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("prometheus is not installed; CI installs it (apt-get install -y prometheus, see .ci/run)")
	}
	t.Skip("prometheus is not installed (apt-get install -y prometheus)")
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// prometheus is a Prometheus server the test runs.
type prometheus struct {
	api string
	log string
}

// startPrometheus runs prometheus with config, its data in a temporary
// directory, its API on a loopback port; stopped when the test ends.
func startPrometheus(t *testing.T, bin, config string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := &prometheus{api: fmt.Sprintf("http://127.0.0.1:%d", port), log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus is not ready after 30s: %v\n%s", err, p.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *prometheus) logText() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// query runs an instant query and returns its samples' values.
func (p *prometheus) query(expr string) ([]float64, error) {
	resp, err := http.Get(p.api + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", body, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, r.Error)
	}
	var out []float64
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// waitValue waits (scrapes are periodic) until expr has one sample of
// value want, failing with what it last had after 30 s.
func (p *prometheus) waitValue(t *testing.T, expr string, want float64) {
	t.Helper()
	p.wait(t, expr, func(vs []float64) bool { return len(vs) == 1 && vs[0] == want }, fmt.Sprintf("one sample of %v", want))
}

// waitTrue waits until a filtering expression (a comparison) has a sample.
func (p *prometheus) waitTrue(t *testing.T, expr string) {
	t.Helper()
	p.wait(t, expr, func(vs []float64) bool { return len(vs) > 0 }, "a sample")
}

func (p *prometheus) wait(t *testing.T, expr string, ok func([]float64) bool, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		vs, err := p.query(expr)
		if err == nil && ok(vs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %v (err %v), want %s\nprometheus log:\n%s", expr, vs, err, want, strings.TrimSpace(p.logText()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The host daemon's metrics: each sandbox's calls and servers carry its
// name, served on --metrics-listen only (never to a sandbox's token), and
// a removed sandbox's series go with it.
func TestMetricsHostPerSandbox(t *testing.T) {
	metricsPort := freePort(t)
	h := startHost(t, filepath.Join(t.TempDir(), "state"), "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--log-calls")
	h.mustCLI("", "server", "add", "memory", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl")
	one := h.createSandbox("one", "--static", "memory")
	two := h.createSandbox("two", "--static", "memory")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, g := range []*gw{one, two, two} {
		cs := g.connectEra(ctx, "2025-11-25")
		if _, isErr := callText(ctx, t, cs, "read_graph", map[string]any{}); isErr {
			t.Fatalf("call %d: read_graph failed", i)
		}
	}

	scrape := func() string {
		t.Helper()
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	body := scrape()
	for _, want := range []string{
		`mcp_gateway_calls_total{method="tools/call",outcome="ok",sandbox="one",server="memory",tool="read_graph"} 1`,
		`mcp_gateway_calls_total{method="tools/call",outcome="ok",sandbox="two",server="memory",tool="read_graph"} 2`,
		`mcp_gateway_upstream_state{sandbox="one",server="memory",state="ready"} 1`,
		`mcp_gateway_sessions{protocol_version="2025-11-25"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the host's metrics lack %s", want)
		}
	}
	if log := h.log(); !containsLine(log, "msg=call", "sandbox=two", "server=memory", "name=read_graph", "outcome=ok") {
		t.Errorf("no call log line naming the sandbox:\n%s", log)
	}
	// A sandbox's token does not open the metrics of every sandbox.
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(h.url, "/mcp")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+one.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the MCP port with a sandbox's token: %d, want 404", resp.StatusCode)
	}

	h.mustCLI("", "sandbox", "rm", "one")
	if body := scrape(); strings.Contains(body, `sandbox="one"`) || !strings.Contains(body, `sandbox="two"`) {
		t.Errorf("after sandbox rm one, its series remain or two's are gone")
	}
}
