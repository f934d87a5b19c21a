package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// postModernFrom sends one raw 2026-07-28 request from a client named
// client that declares form elicitation, and returns its JSON-RPC answer
// (the last event of an SSE stream), whatever the HTTP status.
func postModernFrom(ctx context.Context, t *testing.T, g *gw, client, method, name string, id int, params map[string]any) map[string]any {
	t.Helper()
	_, out := postModernFromAs(ctx, t, g, client, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method, name, id, params)
	return out
}

// inputWait is an input-required answer: its requestState and the key of
// its one input request.
type inputWait struct{ state, key string }

func asInputWait(t *testing.T, who string, out map[string]any) inputWait {
	t.Helper()
	res, _ := out["result"].(map[string]any)
	if res == nil || res["resultType"] != "input_required" {
		t.Fatalf("%s: answer %v, want an input_required result", who, out)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	w := inputWait{state: fmt.Sprint(res["requestState"])}
	for k := range reqs {
		w.key = k
	}
	if len(reqs) != 1 || w.state == "" {
		t.Fatalf("%s: input_required result %v: want one input request and a requestState", who, res)
	}
	return w
}

func errorMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	if e == nil {
		return ""
	}
	return fmt.Sprint(e["message"])
}

// A 2026-07-28 client's calls waiting for its answer (here: approvals by
// elicitation) are bounded per client and across clients: the flooding
// client's call beyond --max-input-waits-per-client is refused, naming the
// flag; at --max-input-waits the oldest wait of the client holding the most
// is dropped, so a victim client still gets its approval asked and its
// call runs. Fails on main: there every call opens a wait of 10 minutes.
func TestQuotaInputWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--policy-file", writePolicy(t, approvalPolicy),
		"--max-input-waits-per-client", "3", "--max-input-waits", "5")
	create := func(name string) map[string]any {
		return map[string]any{"name": "create_entities", "arguments": map[string]any{
			"entities": []map[string]any{{"name": name, "entityType": "person", "observations": []string{"x"}}}}}
	}
	approve := func(p map[string]any, w inputWait) map[string]any {
		p["inputResponses"] = map[string]any{w.key: map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
		p["requestState"] = w.state
		return p
	}
	id := 0
	call := func(client string, p map[string]any) map[string]any {
		id++
		return postModernFrom(ctx, t, g, client, "tools/call", "create_entities", id, p)
	}

	var flood []inputWait
	for i := range 3 {
		flood = append(flood, asInputWait(t, fmt.Sprintf("flood's call %d", i), call("flood", create(fmt.Sprintf("F%d", i)))))
	}
	out := call("flood", create("F3"))
	want := `client "flood" already has 3 unanswered input requests (calls waiting for its answer, --max-input-waits-per-client 3)`
	if msg := errorMessage(out); !strings.Contains(msg, want) {
		t.Fatalf("flood's 4th call: %v, want an error containing %q", out, want)
	}
	for i := range 2 {
		asInputWait(t, fmt.Sprintf("flood2's call %d", i), call("flood2", create(fmt.Sprintf("G%d", i))))
	}
	// Five waits: the victim's makes room by dropping flood's oldest.
	victim := asInputWait(t, "the victim's call", call("victim", create("Victim")))
	out = call("victim", approve(create("Victim"), victim))
	if res, _ := out["result"].(map[string]any); res == nil || res["isError"] == true || !strings.Contains(fmt.Sprint(res["content"]), "Victim") {
		t.Fatalf("the victim's approved call: %v, want the created entity", out)
	}
	if msg := errorMessage(call("flood", approve(create("F0"), flood[0]))); !strings.Contains(msg, "requestState already used or expired") {
		t.Errorf("flood's dropped (oldest) wait answered: %q, want requestState already used or expired", msg)
	}
	if out := call("flood", approve(create("F1"), flood[1])); out["result"] == nil {
		t.Errorf("flood's second wait answered: %v, want its result (only the oldest was dropped)", out)
	}
	graph := postModernFrom(ctx, t, g, "victim", "tools/call", "read_graph", 99, map[string]any{"name": "read_graph", "arguments": map[string]any{}})
	if s := fmt.Sprint(graph["result"]); !strings.Contains(s, "Victim") || !strings.Contains(s, "F1") || strings.Contains(s, "F0") || strings.Contains(s, "F3") {
		t.Errorf("the graph: %s, want Victim and F1, not F0 (dropped) nor F3 (refused)", s)
	}
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port), g.token)
	for series, want := range map[string]string{
		`mcp_gateway_input_waits`: "3", // flood's third and flood2's two
		`mcp_gateway_limit_refusals_total{limit="max-input-waits-per-client"}`: "1",
		`mcp_gateway_limit_drops_total{what="input_wait"}`:                     "1",
	} {
		if v := metricLine(scraped, series); v != want {
			t.Errorf("%s = %q, want %s", series, v, want)
		}
	}
}

// Host mode: a call waiting in the approval queue whose caller goes away
// (it cancels the call, closes its session, or drops the connection) leaves
// the queue at once, frees its slot, and `approval allow` of it answers that
// it is gone without running it: the memory server never gets the entity.
// Fails on main: there the call stays listed and allow runs it.
func TestQuotaApprovalCallerGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	metricsPort := freePort(t)
	h := startHost(t, state, "--max-pending-approvals", "2", "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	h.mustCLI("", "server", "add", "memory", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl")
	a := h.createSandbox("a", "--static", "memory")
	ask := filepath.Join(t.TempDir(), "ask.cedar")
	_ = os.WriteFile(ask, []byte(`permit(principal, action, resource);
@id("ask-create") @requireApproval("a person checks new entities")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/create_entities");
`), 0o600)
	h.mustCLI("", "policy", "set", ask)
	args := func(name string) map[string]any {
		return map[string]any{"entities": []map[string]any{{"name": name, "entityType": "person", "observations": []string{"x"}}}}
	}
	queued := func(name string) string {
		var id string
		waitFor(ctx, t, name+"'s call in the approval queue", func() bool {
			out, _, _ := h.cli("", "approval", "ls", "--json")
			var list []struct {
				ID, Name  string
				Arguments json.RawMessage
			}
			_ = json.Unmarshal([]byte(out), &list)
			for _, r := range list {
				if r.Name == "create_entities" && strings.Contains(string(r.Arguments), `"`+name+`"`) {
					id = r.ID
				}
			}
			return id != ""
		})
		return id
	}
	gone := func(how, id string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		waitFor(wctx, t, how+": the call to leave the queue", func() bool {
			out, _, code := h.cli("", "approval", "ls", "--json")
			var list []struct{ ID string }
			if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
				return false
			}
			for _, r := range list {
				if r.ID == id {
					return false
				}
			}
			return true
		})
		h.failCLI("its caller went away", "", "approval", "allow", id)
	}

	// 1. The client cancels its call (the SDK sends notifications/cancelled).
	c1 := a.connectEra(ctx, sessionEra)
	ctx1, cancel1 := context.WithCancel(ctx)
	done1 := callAsync(ctx1, c1, &mcp.CallToolParams{Name: "create_entities", Arguments: args("Cancelled")})
	id1 := queued("Cancelled")
	cancel1()
	<-done1
	gone("cancelled", id1)

	// 2. The client ends its session (DELETE), its call's request still open.
	sid2 := rawInitialize(ctx, t, a)
	done2 := rawCall(ctx, t, a, sid2, args("Closed"))
	id2 := queued("Closed")
	del, _ := http.NewRequestWithContext(ctx, http.MethodDelete, a.url, nil)
	del.Header.Set("Authorization", "Bearer "+a.token)
	del.Header.Set("Mcp-Session-Id", sid2)
	if resp, err := http.DefaultClient.Do(del); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE of the session: %v %v", resp, err)
	}
	gone("session closed", id2)
	<-done2

	// 3. The client's connection drops (the call's request is abandoned).
	sid3 := rawInitialize(ctx, t, a)
	ctx3, cancel3 := context.WithCancel(ctx)
	done3 := rawCall(ctx3, t, a, sid3, args("Dropped"))
	id3 := queued("Dropped")
	cancel3()
	<-done3
	gone("connection dropped", id3)

	// The slots are free: a victim's two calls queue at once (--max-pending-approvals 2) and run when allowed.
	victim := a.connectEra(ctx, sessionEra)
	var wg sync.WaitGroup
	results := make([]error, 2)
	names := []string{"VictimOne", "VictimTwo"}
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := callErr(ctx, victim, "create_entities", args(name))
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %s", text(res))
			}
			results[i] = err
		}()
	}
	ids := []string{queued(names[0]), queued(names[1])}
	for _, id := range ids {
		h.mustCLI("", "approval", "allow", id)
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Errorf("the victim's call %d: %v", i, err)
		}
	}
	got, _ := callText(ctx, t, victim, "read_graph", nil)
	if !strings.Contains(got, "VictimOne") || !strings.Contains(got, "VictimTwo") {
		t.Errorf("the graph lacks the victim's approved entities: %s", got)
	}
	for _, name := range []string{"Cancelled", "Closed", "Dropped"} {
		if strings.Contains(got, name) {
			t.Errorf("the server got the call of a caller that went away (%s): %s", name, got)
		}
	}
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "")
	if v := metricLine(scraped, `mcp_gateway_approvals_pending{sandbox="a"}`); v != "0" && v != "" {
		t.Errorf("mcp_gateway_approvals_pending = %q, want 0", v)
	}
	recs := auditRecords(t, filepath.Join(state, "audit.jsonl"))
	if findRecord(recs, map[string]any{"type": "approval", "name": "create_entities", "approval": "cancelled"}) == nil {
		t.Error("no audit record of an approval cancelled by its caller")
	}
}

// rawCall posts a session-era tools/call create_entities with raw HTTP in
// the background; the channel closes when its request ends.
func rawCall(ctx context.Context, t *testing.T, g *gw, sid string, args map[string]any) <-chan struct{} {
	done := make(chan struct{})
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "create_entities", "arguments": args}})
	req, err := http.NewRequestWithContext(ctx, "POST", g.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + g.token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": sessionEra} {
		req.Header.Set(k, v)
	}
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	return done
}

// memoryProcesses counts the gateway's memory server processes.
func memoryProcesses(g *gw) int {
	n := 0
	for _, cmd := range g.children() {
		if strings.Contains(cmd, "mcp-server-memory") && !strings.HasPrefix(cmd, "sh ") {
			n++
		}
	}
	return n
}

// Per-client processes are capped per server: 150 sessions of one client
// against a per-client memory server never run more than
// --max-per-client-processes of its processes (beside the shared one for
// listing): each new session stops the longest idle process of the same
// client, never the victim client's, whose graph survives; with every
// process busy, one more session's call is refused naming the flag; and
// --per-client-idle-timeout stops idle processes. Fails on main: there 150
// sessions run 151 processes and none ever stops.
func TestQuotaPerClientProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"memory": {"share": "per-client", "envs": {"MEMORY_FILE_PATH": "${MCP_GATEWAY_CLIENT_DIR}/graph.jsonl"}},
		"everything": {"runCmd": %q, "share": "per-client"}}`, filepath.Join(npmBin, "mcp-server-everything")),
		"--max-per-client-processes", "4", "--per-client-idle-timeout", "1h")
	waitForTools(ctx, t, g, "create_entities", "trigger-long-running-operation")
	named := func(name string) *mcp.ClientSession {
		return connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil), sessionEra)
	}
	victim := named("victim")
	if got, isErr := callText(ctx, t, victim, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"v"}}}}); isErr {
		t.Fatalf("the victim's create_entities: %s", got)
	}

	const sessions, parallel = 150, 6
	var (
		mu         sync.Mutex
		most       int
		ok, refuse int
		other      []string
	)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range sessions {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			cs := named("flood") // left open: its process stays until stopped to make room
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
			n := memoryProcesses(g)
			mu.Lock()
			defer mu.Unlock()
			most = max(most, n)
			switch {
			case err == nil && !res.IsError:
				ok++
			case err != nil && strings.Contains(err.Error(), "--max-per-client-processes 4"):
				refuse++
			default:
				other = append(other, fmt.Sprintf("session %d: %v %v", i, err, res))
			}
		}()
	}
	wg.Wait()
	t.Logf("150 sessions: %d calls answered, %d refused; at most %d memory processes", ok, refuse, most)
	if most > 5 {
		t.Errorf("%d memory processes at once, want at most 5 (4 per-client and the shared one)", most)
	}
	if len(other) > 0 || ok == 0 {
		t.Errorf("%d answered; other outcomes: %v", ok, other)
	}
	if got, _ := callText(ctx, t, victim, "read_graph", nil); !strings.Contains(got, "Ada") {
		t.Errorf("the victim's graph lost Ada (its process was stopped for another client): %s", got)
	}

	// Four long calls of one client keep every everything process busy:
	// one more session's call is refused, naming the flag.
	var busy []*mcp.ClientSession
	var calls []<-chan callResult
	for i := range 4 {
		cs, rec := recordingClient(ctx, t, g, sessionEra, "busy")
		busy = append(busy, cs)
		token := fmt.Sprintf("busy-%d", i)
		calls = append(calls, callAsync(ctx, cs, longRun(30, 30, token)))
		waitFor(ctx, t, "a long call's first progress", func() bool { return len(rec.progressFor(token)) > 0 })
	}
	_, err := named("busy").CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	want := `mcp server "everything" runs a process per client session and 4 of them run already, all busy or of other clients (--max-per-client-processes 4)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a fifth session's call with 4 busy processes: %v, want %q", err, want)
	}
	for _, cs := range busy {
		cs.Close() // ends their calls
	}
	for _, c := range calls {
		<-c
	}
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port), g.token)
	if v := metricLine(scraped, `mcp_gateway_limit_refusals_total{limit="max-per-client-processes"}`); v == "" || v == "0" {
		t.Errorf("refusals at max-per-client-processes: %q", v)
	}
	if v := metricLine(scraped, `mcp_gateway_limit_drops_total{what="process_evicted"}`); v == "" || v == "0" {
		t.Errorf("processes stopped to make room: %q", v)
	}
	if v := metricLine(scraped, `mcp_gateway_per_client_processes{server="memory"}`); v != "4" {
		t.Errorf("mcp_gateway_per_client_processes{server=\"memory\"} = %q, want 4", v)
	}
}

// --per-client-idle-timeout stops a per-client process that gets no call;
// its session's next call starts a new one.
func TestQuotaPerClientIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(`{"memory": {"share": "per-client"}}`, "--per-client-idle-timeout", "2s")
	waitForTools(ctx, t, g, "read_graph")
	cs := g.connectEra(ctx, sessionEra)
	if got, isErr := callText(ctx, t, cs, "read_graph", nil); isErr {
		t.Fatalf("read_graph: %s", got)
	}
	if n := memoryProcesses(g); n != 2 {
		t.Fatalf("%d memory processes after a session's call, want 2 (its own and the shared one)", n)
	}
	waitFor(ctx, t, "the idle per-client process to stop", func() bool { return memoryProcesses(g) == 1 })
	if got, isErr := callText(ctx, t, cs, "read_graph", nil); isErr {
		t.Fatalf("read_graph after the idle stop: %s", got)
	}
	if n := memoryProcesses(g); n != 2 {
		t.Errorf("%d memory processes after the next call, want 2", n)
	}
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port), g.token)
	if v := metricLine(scraped, `mcp_gateway_limit_drops_total{what="process_idle"}`); v == "" || v == "0" {
		t.Errorf("idle processes stopped: %q", v)
	}
}
