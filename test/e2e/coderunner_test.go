package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// vmRSS is a process's resident memory, in bytes (/proc/PID/status).
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// Code-mode programs run in runner processes of their own: a program that
// allocates without bound is ended by its memory limit in its runner while
// another client's calls keep succeeding, and the gateway's own memory
// does not grow by what the program allocated; the runner is replaced; a
// runner killed in the middle of a run ends that run only; and /metrics
// counts the runners.
func TestCodeModeRunsInRunnerProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	metricsPort := freePort(t)
	g := newGW(t)
	const ceiling = 256 << 20
	g.mustLaunch(policyConfig(t), "--code-mode", "--code-mode-max-memory-bytes", strconv.Itoa(ceiling),
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	waitForTools(ctx, t, g, "echo", "code-mode")
	cs := g.connectEra(ctx, sessionEra)

	// A warm-up run: the runner starts, a child of the gateway.
	res, sc := runScript(ctx, t, cs, "code-mode", `return (await servers.everything.echo({message: "warm"}))`)
	if got := resultJSON(t, res, sc); got != `"Echo: warm"` {
		t.Fatalf("the warm-up run: %s", got)
	}
	runners := 0
	for _, cmdline := range g.children() {
		if strings.Contains(cmdline, "mcp-gateway-codemode") {
			runners++
		}
	}
	if runners != 1 {
		t.Errorf("%d mcp-gateway-codemode children of the gateway (%v), want the one warm runner", runners, g.children())
	}
	before := vmRSS(t, g.pid)

	victim := g.connectEra(ctx, modernEra)
	v := startEchoVictim(ctx, victim)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "code-mode", Arguments: map[string]any{"script": `let s = "0123456789abcdef"; for (let i = 0; i < 16; i++) s = s + s; const keep = []; for (let i = 0; ; i++) keep.push(s + i);`}})
	v.stopAndCheck(t)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ = res.StructuredContent.(map[string]any)
	if !res.IsError || sc["limit"] != "memory" || !strings.Contains(text(res), "--code-mode-max-memory-bytes") {
		t.Errorf("the allocating run: %v %q (limit %v), want the memory limit", res.IsError, text(res), sc["limit"])
	}
	// The program held about the ceiling (256 MiB) in its runner; the
	// gateway's own memory grew by a small part of it at most.
	if after := vmRSS(t, g.pid); after-before > ceiling/4 {
		t.Errorf("the gateway's RSS grew from %d to %d MiB during the run: the program's memory is the gateway's", before>>20, after>>20)
	}

	// A runner killed in the middle of a run ends that run only, saying so.
	rcs, rec := recordingClient(ctx, t, g, sessionEra, "killed")
	params := &mcp.CallToolParams{Name: "code-mode", Arguments: map[string]any{"script": `return await servers.everything["trigger-long-running-operation"]({duration: 20, steps: 20})`}}
	params.SetProgressToken("cm-killed")
	call := callAsync(ctx, rcs, params)
	waitFor(ctx, t, "the run's first progress", func() bool { return len(rec.progressFor("cm-killed")) > 0 })
	var runnerPid int
	for pid, cmdline := range g.children() {
		if strings.Contains(cmdline, "mcp-gateway-codemode") {
			runnerPid = pid
		}
	}
	if runnerPid == 0 {
		t.Fatalf("no runner among the gateway's children: %v", g.children())
	}
	if err := syscall.Kill(runnerPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := awaitCall(ctx, t, "the run whose runner was killed", call)
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantKilled := fmt.Sprintf("code-mode: the run's runner process (mcp-gateway-codemode, pid %d) ended in the middle of the run (signal: killed); the gateway and its other runs carry on", runnerPid)
	if !r.res.IsError || !strings.Contains(text(r.res), wantKilled) {
		t.Errorf("the run whose runner was killed: %v %q, want %q", r.res.IsError, text(r.res), wantKilled)
	}
	if res, err := victim.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "beside"}}); err != nil || text(res) != "Echo: beside" {
		t.Errorf("another client's call after the runner died: %v %v", res, err)
	}

	res, sc = runScript(ctx, t, cs, "code-mode", `return (await servers.everything.echo({message: "after"}))`)
	if got := resultJSON(t, res, sc); got != `"Echo: after"` {
		t.Errorf("the run after: %s", got)
	}
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "")
	for series, want := range map[string]string{
		`mcp_gateway_code_mode_runners`:                               "1",
		`mcp_gateway_code_mode_runners_started_total`:                 "3",
		`mcp_gateway_code_mode_runners_stopped_total{reason="died"}`:  "1",
		`mcp_gateway_code_mode_runs_total{outcome="runner"}`:          "1",
		`mcp_gateway_code_mode_runners_stopped_total{reason="limit"}`: "1",
		`mcp_gateway_code_mode_runs_total{outcome="memory"}`:          "1",
		`mcp_gateway_code_mode_runs_total{outcome="ok"}`:              "2",
	} {
		if got := metricLine(scraped, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}

// A gateway whose runner is not installed answers the code-mode tool
// saying what to install; its other tools work.
func TestCodeModeWithoutItsRunner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--code-mode", "--code-mode-runner", "/nonexistent/mcp-gateway-codemode")
	waitForTools(ctx, t, g, "echo", "code-mode")
	cs := g.connectEra(ctx, sessionEra)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "code-mode", Arguments: map[string]any{"script": `return 1`}})
	if err != nil {
		t.Fatal(err)
	}
	want := "the code-mode runner --code-mode-runner /nonexistent/mcp-gateway-codemode: stat /nonexistent/mcp-gateway-codemode: no such file or directory"
	if !res.IsError || !strings.Contains(text(res), want) {
		t.Errorf("%v %q, want an error saying %q", res.IsError, text(res), want)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "still"}}); err != nil || text(res) != "Echo: still" {
		t.Errorf("echo beside: %v %v", res, err)
	}
}
