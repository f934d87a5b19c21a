package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Code mode (docs/code-mode.md): programs that call the servers' tools,
// through the real binary, against the memory and everything servers.

// codeModePolicy forbids deleting entities and asks a person before
// observations are added; everything else is permitted.
const codeModePolicy = `permit(principal, action, resource);
@id("no-delete")
forbid(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/delete_entities");
@id("ask-observations")
@requireApproval("observations change the shared graph")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/add_observations");
`

// runScript calls a code-mode tool with a program and decodes its result.
func runScript(ctx context.Context, t *testing.T, cs *mcp.ClientSession, tool, script string) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"script": script}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	return res, sc
}

// resultJSON is a run's returned value as JSON, failing the test on a failed run.
func resultJSON(t *testing.T, res *mcp.CallToolResult, sc map[string]any) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("the run failed: %s", text(res))
	}
	b, _ := json.Marshal(sc["result"])
	return string(b)
}

func TestCodeModeServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--code-mode", "--policy-file", writePolicy(t, codeModePolicy), "--approval-timeout", "30s")
	waitForTools(ctx, t, g, "echo", "get-sum", "get-structured-content", "create_entities", "code-mode")

	var approve atomic.Bool
	var mu sync.Mutex
	var asked []string
	client := func(name string) *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				if approve.Load() {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		})
	}
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			cs := connectClient(ctx, t, g, client("agent-"+era), era)
			if names := toolNames(ctx, t, cs); !slices.Contains(names, "code-mode") {
				t.Fatalf("tools/list lacks code-mode: %v", names)
			}
			// Two servers, one's result passed to the other, structure
			// kept, a forbidden call caught with the policy's reason.
			entity := "Ada-" + era
			res, sc := runScript(ctx, t, cs, "code-mode", fmt.Sprintf(`
				const name = %q;
				const made = await servers.memory.create_entities({entities: [{name, entityType: "person", observations: ["wrote the first program"]}]});
				const [echo, sum, weather] = await Promise.all([
					servers.everything.echo({message: made.entities[0].name}),
					servers.everything["get-sum"]({a: made.entities.length, b: 41}),
					servers.everything["get-structured-content"]({location: "Chicago"})]);
				const found = await servers.memory.search_nodes({query: name});
				let refused;
				try { await servers.memory.delete_entities({entityNames: [name]}); refused = "not refused"; }
				catch (e) { refused = {name: e.name, message: e.message, code: e.code}; }
				return {entity: found.entities[0].name, observations: found.entities[0].observations, echo, sum,
					weather: Object.keys(weather).sort(), refused};`, entity))
			want := fmt.Sprintf(`{"echo":"Echo: %[1]s","entity":"%[1]s","observations":["wrote the first program"],`+
				`"refused":{"code":-32010,"message":"mcp-gateway policy: tools/call of memory/delete_entities is denied: forbidden by policy \"no-delete\" (policy.cedar:2:1)","name":"PolicyDenied"},`+
				`"sum":"The sum of 1 and 41 is 42.","weather":["conditions","humidity","temperature"]}`, entity)
			if got := resultJSON(t, res, sc); got != want {
				t.Errorf("the run returned\n%s\nwant\n%s", got, want)
			}
			if sc["calls"] != float64(6) {
				t.Errorf("calls %v, want 6", sc["calls"])
			}
			run, _ := res.Meta["io.github.mcp-gateway/code-mode"].(map[string]any)["run"].(string)
			if run == "" {
				t.Fatalf("no run id in _meta: %v", res.Meta)
			}

			// An approval inside a run, granted and denied: the client is
			// asked (a form elicitation; an input-required result in 2026-07-28).
			observe := fmt.Sprintf(`
				try { return await servers.memory.add_observations({observations: [{entityName: %q, contents: [%q]}]}); }
				catch (e) { return {name: e.name, message: e.message}; }`, entity, "approved in "+era)
			approve.Store(true)
			res, sc = runScript(ctx, t, cs, "code-mode", observe)
			if got, want := resultJSON(t, res, sc), fmt.Sprintf(`{"results":[{"addedObservations":["approved in %s"],"entityName":"%s"}]}`, era, entity); got != want {
				t.Errorf("approved: %s, want %s", got, want)
			}
			approvedRun, _ := res.Meta["io.github.mcp-gateway/code-mode"].(map[string]any)["run"].(string)
			approve.Store(false)
			res, sc = runScript(ctx, t, cs, "code-mode", observe)
			got := resultJSON(t, res, sc)
			if !strings.Contains(got, `"name":"PolicyDenied"`) || !strings.Contains(got, "approval was denied") || !strings.Contains(got, "observations change the shared graph") {
				t.Errorf("declined: %s, want a PolicyDenied saying the approval was denied", got)
			}
			mu.Lock()
			last := asked[len(asked)-1]
			mu.Unlock()
			if !strings.Contains(last, "memory/add_observations") || !strings.Contains(last, "observations change the shared graph") {
				t.Errorf("the client was asked %q", last)
			}

			// One audit record per inner call, each linked to its run, as
			// is the run's own (invokePrimordial of code-mode).
			recs := auditRecords(t, g.auditFile())
			for _, match := range []map[string]any{
				{"run": run, "name": "code-mode", "action": "invokePrimordial", "outcome": "ok"},
				{"run": run, "server": "memory", "name": "create_entities", "action": "invokeTool", "outcome": "ok"},
				{"run": run, "server": "everything", "name": "echo", "outcome": "ok"},
				{"run": run, "server": "everything", "name": "get-sum", "outcome": "ok"},
				{"run": run, "server": "memory", "name": "delete_entities", "decision": "deny", "outcome": "denied"},
				{"run": approvedRun, "server": "memory", "name": "add_observations", "approval": "granted", "outcome": "ok"},
			} {
				if findRecord(recs, match) == nil {
					t.Errorf("no audit record %v", match)
				}
			}
			n := 0
			for _, r := range recs {
				if r["run"] == run {
					n++
				}
			}
			if n != 7 {
				t.Errorf("%d audit records of run %s, want 7 (the run and its 6 inner calls)", n, run)
			}
		})
	}
	verifyAudit(t, g.auditFile())
}

// A program's limits end it, saying which, while another client's calls
// keep succeeding; cancelling a run cancels its inner call at its server.
func TestCodeModeLimitsAndCancellation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	metricsPort := freePort(t)
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--code-mode", "--log-level", "debug",
		"--code-mode-cpu", "3s", "--code-mode-max-calls", "20", "--code-mode-max-result-bytes", "4096",
		"--code-mode-max-return-bytes", "65536", "--code-mode-max-memory-bytes", "33554432",
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	waitForTools(ctx, t, g, "echo", "trigger-long-running-operation", "code-mode")

	// The victims: another client calling all along, and one calling
	// beside each run.
	victim := g.connectEra(ctx, sessionEra)
	other := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil), modernEra)
	v := startEchoVictim(ctx, victim)

	cases := []struct{ name, script, limit, says string }{
		{"an infinite loop", `for (;;) {}`, "cpu", "ran for more than 3s (the gateway's --code-mode-cpu)"},
		{"a huge allocation", `let s = "0123456789abcdef"; for (let i = 0; i < 16; i++) s = s + s; const keep = []; for (let i = 0; ; i++) keep.push(s + i);`, "memory", "--code-mode-max-memory-bytes"},
		{"a call storm", `for (;;) servers.everything.echo({message: "storm"});`, "calls", "more than 20 inner calls (the gateway's --code-mode-max-calls)"},
		{"a huge result", `return await servers.everything.echo({message: "x".repeat(100000)});`, "result-bytes", "everything.echo returned"},
		{"a huge value", `return "y".repeat(100000);`, "return-bytes", "more than 65536"},
	}
	for _, era := range bothEras {
		cs := g.connectEra(ctx, era)
		if era == modernEra {
			cs = connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, nil), modernEra)
		}
		for _, c := range cases {
			// The run goes on in the background while another client calls.
			run := callAsync(ctx, cs, &mcp.CallToolParams{Name: "code-mode", Arguments: map[string]any{"script": c.script}})
			for i := range 3 {
				res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": i, "b": 1}})
				if err != nil || text(res) != fmt.Sprintf("The sum of %d and 1 is %d.", i, i+1) {
					t.Errorf("%s, %s: another client's call beside the run: %v %v", era, c.name, err, res)
				}
			}
			r := awaitCall(ctx, t, c.name, run)
			if r.err != nil {
				t.Fatalf("%s, %s: %v", era, c.name, r.err)
			}
			sc, _ := r.res.StructuredContent.(map[string]any)
			if !r.res.IsError || sc["limit"] != c.limit || !strings.Contains(text(r.res), c.says) {
				t.Errorf("%s, %s: %v %q (limit %v), want the %s limit saying %q", era, c.name, r.res.IsError, text(r.res), sc["limit"], c.limit, c.says)
			}
		}
		// The gateway still runs programs.
		res, sc := runScript(ctx, t, cs, "code-mode", `return (await servers.everything.echo({message: "after"}))`)
		if got := resultJSON(t, res, sc); got != `"Echo: after"` {
			t.Errorf("%s: a run after the limits: %s", era, got)
		}
	}
	v.stopAndCheck(t)

	// Cancelling a run: its progress reached the caller naming the inner
	// call; the inner call is cancelled at the server (which so never
	// answers it).
	for _, era := range bothEras {
		t.Run("cancel "+era, func(t *testing.T) {
			cs, rec := recordingClient(ctx, t, g, era, "canceller")
			before := strings.Count(g.log(), unknownAnswer)
			token := "cm-cancel-" + era
			callCtx, cancelCall := context.WithCancel(ctx)
			defer cancelCall()
			params := &mcp.CallToolParams{Name: "code-mode", Arguments: map[string]any{"script": `return await servers.everything["trigger-long-running-operation"]({duration: 4, steps: 4})`}}
			params.SetProgressToken(token)
			call := callAsync(callCtx, cs, params)
			waitFor(ctx, t, "the run's first progress", func() bool { return len(rec.progressFor(token)) > 0 })
			if p := rec.progressFor(token)[0]; !strings.HasPrefix(p.Message, "everything.trigger-long-running-operation") || p.Progress != 1 {
				t.Errorf("progress %+v, want progress 1 with a message naming everything.trigger-long-running-operation", p)
			}
			cancelCall()
			if r := awaitCall(ctx, t, "the cancelled run to return", call); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("the cancelled run returned %v, %v", r.res, r.err)
			}
			barrier := "cm-barrier-" + era
			res, err := cs.CallTool(ctx, longRun(4, 4, barrier))
			if err != nil || text(res) != longRunText(4, 4) {
				t.Fatalf("the call after the cancelled run: %v %v", res, err)
			}
			if n := strings.Count(g.log(), unknownAnswer) - before; n != 0 {
				t.Errorf("the everything server answered the cancelled inner call (%d late answers): the cancellation did not reach it", n)
			}
		})
	}

	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "")
	for series, want := range map[string]string{
		`mcp_gateway_code_mode_runs_total{outcome="cpu"}`:          "2",
		`mcp_gateway_code_mode_runs_total{outcome="memory"}`:       "2",
		`mcp_gateway_code_mode_runs_total{outcome="calls"}`:        "2",
		`mcp_gateway_code_mode_runs_total{outcome="result-bytes"}`: "2",
		`mcp_gateway_code_mode_runs_total{outcome="return-bytes"}`: "2",
		`mcp_gateway_code_mode_runs_total{outcome="cancelled"}`:    "2",
		`mcp_gateway_code_mode_runs_total{outcome="ok"}`:           "2",
	} {
		if got := metricLine(scraped, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}

// Host mode: a sandbox's code-mode tool creates a tool every client of the
// sandbox sees, callable directly and through mcp-exec, gone with the
// sandbox; an approval inside a run goes through the host's queue.
func TestCodeModeHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	h := startHost(t, state)
	h.mustCLI("", "server", "add", "memory", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl")
	h.mustCLI("", "server", "add", "everything", "--command", filepath.Join(npmBin, "mcp-server-everything"))
	st := h.createSandbox("st", "--static", "memory,everything")
	dyn := h.createSandbox("dyn")

	watcher, changed := st.connectListChanged(ctx)
	agent := connectClient(ctx, t, st, mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil), modernEra)
	waitFor(ctx, t, "the static sandbox's tools", func() bool {
		names := toolNames(ctx, t, agent)
		return slices.Contains(names, "code-mode") && slices.Contains(names, "echo") && slices.Contains(names, "create_entities")
	})
	dc := dyn.connectEra(ctx, sessionEra)
	if names := toolNames(ctx, t, dc); !slices.Contains(names, "code-mode") {
		t.Errorf("the dynamic sandbox lacks code-mode: %v", names)
	}

	drain(changed)
	got, isErr := callText(ctx, t, agent, "code-mode", map[string]any{"name": "kg", "servers": []string{"memory"}})
	if isErr || !strings.Contains(got, "Created the tool code-mode-kg") {
		t.Fatalf("code-mode create: %v %s", isErr, got)
	}
	waitListChanged(t, changed, "code-mode created code-mode-kg")
	var desc string
	for tool, err := range watcher.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "code-mode-kg" {
			desc = tool.Description
		}
	}
	for _, want := range []string{"servers.memory.create_entities(args: {entities: {", "servers.memory.read_graph(args?: {})", "Promise<"} {
		if !strings.Contains(desc, want) {
			t.Errorf("code-mode-kg's description lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "servers.everything") {
		t.Errorf("code-mode-kg describes another server's tools:\n%s", desc)
	}
	if names := toolNames(ctx, t, dc); slices.Contains(names, "code-mode-kg") {
		t.Errorf("another sandbox lists code-mode-kg: %v", names)
	}

	// Called directly by another client, and through mcp-exec.
	res, sc := runScript(ctx, t, watcher, "code-mode-kg", `
		await servers.memory.create_entities({entities: [{name: "Grace", entityType: "person", observations: ["COBOL"]}]});
		return (await servers.memory.read_graph({})).entities.map(e => e.name);`)
	if got := resultJSON(t, res, sc); got != `["Grace"]` {
		t.Errorf("code-mode-kg: %s", got)
	}
	res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-exec", Arguments: map[string]any{"name": "code-mode-kg",
		"arguments": map[string]any{"script": `return typeof servers.everything === "undefined" && (await servers.memory.search_nodes({query: "Grace"})).entities.length`}}})
	if err != nil || res.IsError || text(res) != "1" {
		t.Errorf("code-mode-kg through mcp-exec: %v %v", err, res)
	}

	// An approval inside a run, through the host's queue (the client
	// cannot be asked), allowed and denied.
	ask := writePolicy(t, `permit(principal, action, resource);
@id("ask-create") @requireApproval("a person checks new entities")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/create_entities");
`)
	h.mustCLI("", "policy", "set", ask)
	for _, verdict := range []string{"allow", "deny"} {
		done := make(chan string, 1)
		go func() {
			res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: "code-mode-kg", Arguments: map[string]any{"script": `
				try { await servers.memory.create_entities({entities: [{name: "Linus", entityType: "person", observations: []}]}); return "created"; }
				catch (e) { return e.name + ": " + e.message; }`}})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- text(res)
		}()
		var id string
		waitFor(ctx, t, "the inner call in the approval queue", func() bool {
			out, _, _ := h.cli("", "approval", "ls", "--json")
			var list []struct{ ID, Name, Reason string }
			if json.Unmarshal([]byte(out), &list) == nil && len(list) == 1 && list[0].Name == "create_entities" && list[0].Reason == "a person checks new entities" {
				id = list[0].ID
				return true
			}
			return false
		})
		h.mustCLI("", "approval", verdict, id)
		got := <-done
		if verdict == "allow" && got != `"created"` || verdict == "deny" && (!strings.HasPrefix(got, `"PolicyDenied: `) || !strings.Contains(got, "approval was denied")) {
			t.Errorf("approval %s: the run returned %s", verdict, got)
		}
	}

	// policy test decides the code-mode tools as built-ins (invokePrimordial).
	for _, tool := range []string{"code-mode", "code-mode-kg"} {
		if out := h.mustCLI("", "policy", "test", "--sandbox", "st", "--tool", tool); !strings.HasPrefix(out, "allow:") {
			t.Errorf("policy test --tool %s: %s", tool, out)
		}
	}

	// Gone with the sandbox: a sandbox of the same name starts without it.
	h.mustCLI("", "sandbox", "rm", "st")
	again := h.createSandbox("st", "--static", "memory,everything")
	cs := again.connectEra(ctx, sessionEra)
	if names := toolNames(ctx, t, cs); !slices.Contains(names, "code-mode") || slices.Contains(names, "code-mode-kg") {
		t.Errorf("the new sandbox st lists %v: want code-mode and no code-mode-kg", names)
	}
}

// Each inner call is a span under the run's, which is under the request's.
func TestCodeModeTracing(t *testing.T) {
	receiver := startOTLPReceiver(t)
	server := startTraceServer(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"remote": {"url": %q, "transport": "http"}}`, server.url), "--code-mode")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const clientTrace, clientSpan = "5cf92f3577b34da6a3ce929d0e0e4737", "01f067aa0ba902b8"
	cs := g.connectEra(ctx, sessionEra)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "code-mode",
		Arguments: map[string]any{"script": `await servers.remote.traced({}); await servers.remote.traced({}); return "two"`},
		Meta:      mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("the run: %v %v", err, res)
	}
	spans := receiver.waitSpans(t, clientTrace, 4)
	var front, run *tracepb.Span
	var inner []*tracepb.Span
	for _, s := range spans {
		switch {
		case s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "tools/call code-mode":
			front = s
		case s.Name == "tools/call code-mode":
			run = s
		case s.Name == "tools/call traced":
			inner = append(inner, s)
		}
	}
	if front == nil || run == nil || len(inner) != 2 {
		t.Fatalf("spans %v: want the request's, the run's and two inner calls'", spans)
	}
	if string(run.ParentSpanId) != string(front.SpanId) {
		t.Errorf("the run's span has parent %x, want the request's %x", run.ParentSpanId, front.SpanId)
	}
	for _, s := range inner {
		if string(s.ParentSpanId) != string(run.SpanId) {
			t.Errorf("an inner call's span has parent %x, want the run's %x", s.ParentSpanId, run.SpanId)
		}
		if a := attrs(s); a["mcp_gateway.server"] != "remote" || a["gen_ai.tool.name"] != "traced" {
			t.Errorf("an inner call's span attributes %v", a)
		}
	}
	if a := attrs(run); a["mcp_gateway.server"] != "mcp-gateway" || a["gen_ai.tool.name"] != "code-mode" {
		t.Errorf("the run's span attributes %v", a)
	}
}

// echoVictim is a client calling the everything server's echo over and
// over while something else happens, to show that it goes on unharmed.
type echoVictim struct {
	ok     atomic.Int64
	failed atomic.Value
	stop   chan struct{}
	done   chan struct{}
}

func startEchoVictim(ctx context.Context, cs *mcp.ClientSession) *echoVictim {
	v := &echoVictim{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(v.done)
		for i := 0; ; i++ {
			select {
			case <-v.stop:
				return
			default:
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
			if err != nil || text(res) != fmt.Sprintf("Echo: %d", i) {
				v.failed.Store(fmt.Sprintf("victim call %d: %v %v", i, err, res))
				return
			}
			v.ok.Add(1)
		}
	}()
	return v
}

// stopAndCheck stops the victim and fails t unless every call it made
// succeeded, and it made some.
func (v *echoVictim) stopAndCheck(t *testing.T) {
	t.Helper()
	close(v.stop)
	<-v.done
	if f := v.failed.Load(); f != nil {
		t.Errorf("the victim failed: %v", f)
	}
	if v.ok.Load() == 0 {
		t.Error("the victim made no call")
	}
}
