package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveGW runs `mcp-gateway serve` in the foreground, as in a container.
type serveGW struct {
	*gw
	cmd *exec.Cmd
}

var readyLog = regexp.MustCompile(`msg="MCP gateway is ready" port=(\d+)`)

func startServe(t *testing.T, config string, extra ...string) *serveGW {
	t.Helper()
	g := newGW(t)
	args := append([]string{"serve", "--config", config, "--host", "127.0.0.1", "--port", "0",
		"--token-file", "", "--catalog-file", filepath.Join(g.dir, "none.json")}, extra...)
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+g.token)
	logf, err := os.Create(filepath.Join(g.dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.pid = cmd.Process.Pid
	s := &serveGW{gw: g, cmd: cmd}
	t.Cleanup(func() {
		g.stop()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logf.Name())
		if m := readyLog.FindSubmatch(b); m != nil {
			g.port, _ = strconv.Atoi(string(m[1]))
			g.url = fmt.Sprintf("http://127.0.0.1:%d/mcp", g.port)
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("serve did not become ready:\n%s", b)
	return nil
}

func (s *serveGW) serveLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "serve.log"))
	return string(b)
}

type health struct {
	Servers   []string `json:"servers"`
	Status    string   `json:"status"`
	Tools     int      `json:"tools"`
	Upstreams map[string]struct {
		State     string `json:"state"`
		Tools     int    `json:"tools"`
		Restarts  int    `json:"restarts"`
		LastError string `json:"lastError"`
	} `json:"upstreams"`
}

// health reads /health with the token: its full detail.
func (s *serveGW) health(t *testing.T) health {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/health", s.port), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// In serve mode a server that fails at start does not stop the others; it
// is retried in the background and its tools arrive with list_changed.
func TestServeSurvivesAFailingServer(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ready")
	s := startServe(t, fmt.Sprintf(`{"healthy": {"runCmd": %q}, "late": {"runCmd": %q, "envs": {"E2E_SERVER_REQUIRES": %q}}}`,
		testServerCmd(), testServerCmd(), marker))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	h := s.health(t)
	if h.Status != "ok" || !slices.Equal(h.Servers, []string{"healthy", "late"}) || h.Upstreams["late"].State != "failed" ||
		!strings.Contains(h.Upstreams["late"].LastError, "is missing") || h.Upstreams["healthy"].State != "ready" || h.Upstreams["healthy"].Tools == 0 {
		t.Fatalf("health while late fails: %+v", h)
	}

	cs, changed := s.connectListChanged(ctx)
	if names := toolNames(ctx, t, cs); slices.Contains(names, "late_echo") || !slices.Contains(names, "echo") {
		t.Fatalf("tools while late is down: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "healthy works"}})
	if err != nil || text(res) != "healthy works" {
		t.Fatalf("healthy server: %v %v", res, err)
	}

	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no tools/list_changed after the server came up; log:\n%s", s.serveLog())
	}
	if names := toolNames(ctx, t, cs); !slices.Contains(names, "late_echo") {
		t.Errorf("late's tools after it came up: %v", names)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "late_echo", Arguments: map[string]any{"text": "late works"}})
	if err != nil || text(res) != "late works" {
		t.Errorf("late server after recovery: %v %v", res, err)
	}
	if st := s.health(t).Upstreams["late"]; st.State != "ready" || st.Tools == 0 {
		t.Errorf("health after recovery: %+v", st)
	}
}

// A call that outlives its server's timeout is cancelled at the server and
// answered with a readable error; then SIGTERM leaves no process behind.
func TestServeCallTimeoutAndShutdown(t *testing.T) {
	// The server's own "timeout" wins over the gateway's --call-timeout.
	s := startServe(t, fmt.Sprintf(`{"one": {"runCmd": %q, "timeout": 1}}`, testServerCmd()), "--call-timeout", "30s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := s.connectEra(ctx, "2025-11-25")
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
	if err == nil || !strings.Contains(err.Error(), `mcp server "one" did not answer tools/call within 1s`) {
		t.Fatalf("slow call: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.serveLog(), "[one] slow: the call was cancelled") {
		if time.Now().After(deadline) {
			t.Fatalf("the server never saw the cancellation; log:\n%s", s.serveLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after the timeout"}})
	if err != nil || text(res) != "after the timeout" {
		t.Errorf("call after the timeout: %v %v", res, err)
	}

	children := descendants(s.pid)
	if len(children) == 0 {
		t.Fatal("no server process under the gateway")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("serve exited with %v after SIGTERM", err)
	}
	for _, p := range children {
		if alive(p) {
			t.Errorf("process %d outlived the gateway", p)
		}
	}
	if !strings.Contains(s.serveLog(), "shutting down") {
		t.Errorf("no shutdown line in the log")
	}
	s.pid = 0
}

// connectListChanged connects a session-era client whose GET stream reports
// each tools/list_changed on the returned channel.
func (g *gw) connectListChanged(ctx context.Context) (*mcp.ClientSession, <-chan struct{}) {
	g.t.Helper()
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { cs.Close() })
	return cs, changed
}
