package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var echoTools = []Tool{{Server: "everything", Name: "echo", Exposed: "echo"}, {Server: "everything", Name: "wait", Exposed: "wait"}}

func echoCall(release <-chan struct{}, started chan<- string) CallFunc {
	return func(ctx context.Context, t Tool, args json.RawMessage) (json.RawMessage, error) {
		if t.Name == "wait" {
			started <- string(args)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "Echo: " + string(args)}}})
	}
}

type countingMetrics struct {
	mu      sync.Mutex
	started int
	stopped map[string]int
	stops   chan string // each stop's reason, when not nil
}

func (m *countingMetrics) counts() (int, map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[string]int{}
	for k, v := range m.stopped {
		c[k] = v
	}
	return m.started, c
}

func (m *countingMetrics) CodeModeRunnerStarted() { m.mu.Lock(); m.started++; m.mu.Unlock() }
func (m *countingMetrics) CodeModeRunnerStopped(reason string) {
	m.mu.Lock()
	if m.stopped == nil {
		m.stopped = map[string]int{}
	}
	m.stopped[reason]++
	m.mu.Unlock()
	if m.stops != nil {
		m.stops <- reason
	}
}

// A runner serves run after run in a fresh engine; one whose run hit a
// limit is stopped and the next run gets a new one.
func TestRunnersAreReusedAndReplacedAfterALimit(t *testing.T) {
	met := &countingMetrics{}
	p := newTestRunners(RunnerOptions{Metrics: met})
	defer p.Close()
	ctx := context.Background()
	for i := range 3 {
		out := p.Run(ctx, "a", Program{Source: `globalThis.n = (globalThis.n || 0) + 1; return [globalThis.n, await servers.everything.echo({i: 1})]`, Tools: echoTools, Call: echoCall(nil, nil)})
		if out.Err != nil || string(out.Value) != `[1,"Echo: {\"i\":1}"]` || out.Calls != 1 {
			t.Fatalf("run %d: %s %v (%d calls), want a fresh engine's [1, echo]", i, out.Value, out.Err, out.Calls)
		}
	}
	// Another run's functions, in the same runner.
	if out := p.Run(ctx, "a", Program{Source: `return Object.keys(servers)`, Tools: []Tool{{Server: "other", Name: "x"}}}); out.Err != nil || string(out.Value) != `["other"]` {
		t.Errorf("a run over other tools: %s %v", out.Value, out.Err)
	}
	if met.started != 1 || p.Alive() != 1 {
		t.Errorf("%d runners started, %d alive, want 1 serving all four runs", met.started, p.Alive())
	}
	out := p.Run(ctx, "a", Program{Source: `for (;;) {}`, Limits: Limits{CPU: 100 * time.Millisecond}})
	var le *LimitError
	if !errors.As(out.Err, &le) || le.Limit != LimitCPU {
		t.Fatalf("err %v, want the cpu limit", out.Err)
	}
	if p.Alive() != 0 || met.stopped["limit"] != 1 {
		t.Errorf("%d alive, stopped %v after a limit, want the runner stopped", p.Alive(), met.stopped)
	}
	if out := p.Run(ctx, "a", Program{Source: `return 2`}); out.Err != nil || string(out.Value) != "2" || met.started != 2 {
		t.Errorf("the run after: %s %v, %d started", out.Value, out.Err, met.started)
	}
}

// A client's runs take at most MaxPerClient runners at once; another
// client's run goes on meanwhile; idle runners are stopped.
func TestRunnersAreBoundedPerClient(t *testing.T) {
	met := &countingMetrics{stops: make(chan string, 8)}
	p := newTestRunners(RunnerOptions{MaxPerClient: 1, MaxTotal: 2, Idle: 50 * time.Millisecond, Metrics: met})
	defer p.Close()
	ctx := context.Background()
	release := make(chan struct{})
	started := make(chan string, 4)
	call := echoCall(release, started)
	results := make(chan Outcome, 3)
	for _, c := range []string{"a", "a", "b"} {
		go func() {
			results <- p.Run(ctx, c, Program{Source: `return await servers.everything.wait({client: "` + c + `"})`, Tools: echoTools, Call: call})
		}()
	}
	got := []string{<-started, <-started}
	if strings.Join(got, " ") != `{"client":"a"} {"client":"b"}` && strings.Join(got, " ") != `{"client":"b"} {"client":"a"}` {
		t.Fatalf("the runs that started: %v, want one of a's and b's", got)
	}
	select {
	case s := <-started:
		t.Fatalf("a third run started (%s) beside a's and b's, past a's bound of 1", s)
	default:
	}
	if n := p.Alive(); n != 2 {
		t.Errorf("%d runners alive, want 2", n)
	}
	close(release)
	for range 3 {
		if out := <-results; out.Err != nil {
			t.Errorf("a run: %v", out.Err)
		}
	}
	for range 2 { // both runners, once idle
		if reason := <-met.stops; reason != "idle" {
			t.Errorf("a runner stopped: %s, want idle", reason)
		}
	}
	if started, _ := met.counts(); p.Alive() != 0 || started != 2 {
		t.Errorf("%d alive of %d started, want both stopped when idle", p.Alive(), started)
	}
}

// A runner that dies ends only its run, with a result saying so; a runner
// that is not installed is named with what to do.
func TestRunnerFailures(t *testing.T) {
	p := newTestRunners(RunnerOptions{Env: []string{testRunnerEnv + "=crash"}})
	defer p.Close()
	out := p.Run(context.Background(), "a", Program{Source: `return 1`})
	var re *RunnerError
	if !errors.As(out.Err, &re) || !strings.Contains(re.Message, "ended in the middle of the run") || !strings.Contains(re.Message, "panic: the runner broke") || outcomeOf(out.Err) != "runner" {
		t.Errorf("err %v, want a RunnerError saying the runner died and why", out.Err)
	}
	if p.Alive() != 0 {
		t.Errorf("%d alive", p.Alive())
	}
	missing := NewRunners(RunnerOptions{Path: "/nonexistent/mcp-gateway-codemode"})
	out = missing.Run(context.Background(), "a", Program{Source: `return 1`})
	if !errors.As(out.Err, &re) || !strings.Contains(re.Message, "--code-mode-runner /nonexistent/mcp-gateway-codemode") {
		t.Errorf("err %v, want one naming --code-mode-runner", out.Err)
	}
	if _, err := FindRunner(""); err != nil && !strings.Contains(err.Error(), "go install github.com/mcp-gateway/mcp-gateway/cmd/...") {
		t.Errorf("FindRunner: %v, want what to install", err)
	}
}

// An allocation the sampler cannot stop in time meets the OS's cap on the
// runner's data: the run ends by its memory limit, the runner is replaced.
func TestMemoryBackstopEndsOnlyTheRun(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory does not fit under a data cap")
	}
	p := newTestRunners(RunnerOptions{DataBytes: 300 << 20})
	defer p.Close()
	out := p.Run(context.Background(), "a", Program{Source: `let s = "0123456789abcdef"; for (let i = 0; i < 26; i++) s = s + s; return s.length`, Limits: Limits{MemoryBytes: 4 << 30}})
	var le *LimitError
	if !errors.As(out.Err, &le) || le.Limit != LimitMemory || !strings.Contains(le.Detail, "ran out of the 300 MiB of memory the OS lets it have") {
		t.Fatalf("%s %v, want the memory limit by the OS's cap", out.Value, out.Err)
	}
	if out := p.Run(context.Background(), "a", Program{Source: `return 3`}); out.Err != nil || string(out.Value) != "3" {
		t.Errorf("the run after: %s %v", out.Value, out.Err)
	}
}

// A runner gets none of the gateway's environment but the Go runtime's.
func TestRunnerEnvironment(t *testing.T) {
	t.Setenv("GATEWAY_ACCESS_TOKEN", "secret")
	t.Setenv("GOGC", "150")
	env := strings.Join(runnerEnv(), " ")
	if strings.Contains(env, "secret") || !strings.Contains(env, "GOGC=150") {
		t.Errorf("a runner's environment: %s", env)
	}
}
