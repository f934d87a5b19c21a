package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tasks of 2026-07-28 (the io.modelcontextprotocol/tasks extension,
// SEP-2663) through the real binary in serve mode, in front of the real
// everything server, which speaks 2025-11-25 tasks: the gateway bridges
// the generations. The clients are raw 2026-07-28 HTTP requests (the Go
// SDK has no tasks API) and, for the other era, the raw session-era client
// of tasks_test.go.

var tasksExt = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// modernTask sends one 2026-07-28 request about a task (Mcp-Name is its id)
// from client and returns the HTTP status and the answer.
func modernTask(ctx context.Context, t *testing.T, g *gw, client string, caps map[string]any, method, id string, extra map[string]any) (int, map[string]any) {
	t.Helper()
	params := map[string]any{"taskId": id}
	for k, v := range extra {
		params[k] = v
	}
	return postModernFromAs(ctx, t, g, client, caps, method, id, 1, params)
}

// modernOK is modernTask's result, failing the test on anything else.
func modernOK(ctx context.Context, t *testing.T, g *gw, client string, caps map[string]any, method, id string, extra map[string]any) map[string]any {
	t.Helper()
	status, out := modernTask(ctx, t, g, client, caps, method, id, extra)
	return resultOf(t, method, status, out)
}

func resultOf(t *testing.T, what string, status int, out map[string]any) map[string]any {
	t.Helper()
	res, ok := out["result"].(map[string]any)
	if status != http.StatusOK || !ok {
		t.Fatalf("%s: status %d, %v", what, status, out)
	}
	return res
}

func errorOf(out map[string]any) (float64, string) {
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(float64)
	msg, _ := e["message"].(string)
	return code, msg
}

// pollModern polls tasks/get until the task leaves working (a bound for a
// broken gateway, not a measure: the server paces the task).
func pollModern(ctx context.Context, t *testing.T, g *gw, client, id string) (map[string]any, []string) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		res := modernOK(ctx, t, g, client, tasksExt, "tasks/get", id, nil)
		st, _ := res["status"].(string)
		if len(seen) == 0 || seen[len(seen)-1] != st {
			seen = append(seen, st)
		}
		if st != "working" || time.Now().After(deadline) {
			return res, seen
		}
		wait := 200 * time.Millisecond
		if ms, ok := res["pollIntervalMs"].(float64); ok && ms > 0 && ms < 5000 {
			wait = time.Duration(ms) * time.Millisecond
		}
		time.Sleep(wait) // the server's poll interval: pacing, not synchronisation
	}
}

func TestTasks26ThroughTheGateway(t *testing.T) {
	g := launchEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g.gw, "simulate-research-query")

	// Advertised as the extension, not as the session era's slot.
	disc := postModern(ctx, t, g.gw, "server/discover", "", 1, map[string]any{})
	caps, _ := disc["result"].(map[string]any)["capabilities"].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	if _, ok := exts["io.modelcontextprotocol/tasks"]; !ok || caps["tasks"] != nil {
		t.Fatalf("server/discover capabilities = %v; want extensions[io.modelcontextprotocol/tasks] and no tasks", caps)
	}

	// Started (the server decides: the tool requires a task), polled, its
	// result inlined once completed.
	status, out := postModernFromAs(ctx, t, g.gw, "alice", tasksExt, "tools/call", "simulate-research-query", 2,
		map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "gateways"}})
	created := resultOf(t, "tools/call", status, out)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !strings.HasPrefix(id, "gw-task-") || created["status"] != "working" || created["task"] != nil {
		t.Fatalf("CreateTaskResult = %v; want flat, resultType task, a working task of the gateway's id", created)
	}
	for _, legacy := range []string{"ttl", "pollInterval"} {
		if _, ok := created[legacy]; ok {
			t.Errorf("CreateTaskResult carries the 2025-11-25 %q: %v", legacy, created)
		}
	}
	if ttl, _ := created["ttlMs"].(float64); ttl <= 0 || ttl > 3600000 {
		t.Errorf("CreateTaskResult ttlMs = %v; want the server's, at most --task-ttl-max", created["ttlMs"])
	}
	done, seen := pollModern(ctx, t, g.gw, "alice", id)
	if done["status"] != "completed" || done["taskId"] != id || done["resultType"] != "complete" {
		t.Fatalf("tasks/get after polling (statuses %v) = %v; want completed", seen, done)
	}
	result, _ := done["result"].(map[string]any)
	content, _ := json.Marshal(result["content"])
	if !strings.Contains(string(content), "# Research Report: gateways") {
		t.Errorf("completed task's inlined result = %s", content)
	}
	if meta, _ := result["_meta"].(map[string]any); meta["io.modelcontextprotocol/related-task"] != nil {
		t.Errorf("inlined result carries related-task _meta: %v", meta)
	}

	// A second task, cancelled: the empty ack, then cancelled on tasks/get;
	// cancelling it again is acknowledged the same way.
	status, out = postModernFromAs(ctx, t, g.gw, "alice", tasksExt, "tools/call", "simulate-research-query", 3,
		map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "cancel me"}})
	id2, _ := resultOf(t, "second tools/call", status, out)["taskId"].(string)
	for range 2 {
		ack := modernOK(ctx, t, g.gw, "alice", tasksExt, "tasks/cancel", id2, nil)
		delete(ack, "_meta")
		if fmt.Sprint(ack) != "map[resultType:complete]" {
			t.Errorf("tasks/cancel = %v; want the empty ack", ack)
		}
	}
	got := modernOK(ctx, t, g.gw, "alice", tasksExt, "tasks/get", id2, nil)
	if got["status"] != "cancelled" {
		t.Errorf("tasks/get after tasks/cancel = %v", got)
	}

	// Another client, of either era: the id answers as an unknown one.
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		extra := map[string]any{}
		if method == "tasks/update" {
			extra["inputResponses"] = map[string]any{}
		}
		theirStatus, theirs := modernTask(ctx, t, g.gw, "mallory", tasksExt, method, id, extra)
		unknownStatus, unknown := modernTask(ctx, t, g.gw, "mallory", tasksExt, method, "gw-task-unknown", extra)
		tc, tm := errorOf(theirs)
		uc, um := errorOf(unknown)
		if tc != -32602 || tc != uc || theirStatus != unknownStatus || tm != "Task not found: "+id || um != "Task not found: gw-task-unknown" {
			t.Errorf("%s by another client: %d %v; of an unknown id: %d %v", method, theirStatus, theirs, unknownStatus, unknown)
		}
	}
	old := newTaskClient(t, g.gw, `{}`, func(m string, _ json.RawMessage) (any, error) { return nil, fmt.Errorf("not asked: %s", m) })
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if r := old.call(method, map[string]any{"taskId": id}); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "Task not found: "+id {
			t.Errorf("a session-era client's %s of a 2026-07-28 client's task = %s %+v", method, r.Result, r.Error)
		}
	}
	// The creator still has it.
	if again := modernOK(ctx, t, g.gw, "alice", tasksExt, "tasks/get", id, nil); again["status"] != "completed" {
		t.Errorf("tasks/get by the creator after the others' tries = %v", again)
	}

	// Without the extension: -32021 (HTTP 400) naming it, and the tool that
	// runs only as a task refused the same way.
	noExt := map[string]any{}
	st, refused := modernTask(ctx, t, g.gw, "alice", noExt, "tasks/get", id, nil)
	if code, msg := errorOf(refused); st != http.StatusBadRequest || code != -32021 || !strings.Contains(msg, "io.modelcontextprotocol/tasks") {
		t.Errorf("tasks/get without the extension: %d %v", st, refused)
	}
	st, refused = postModernFromAs(ctx, t, g.gw, "alice", noExt, "tools/call", "simulate-research-query", 4,
		map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "x"}})
	if code, _ := errorOf(refused); code != -32021 {
		t.Errorf("a task-only tool without the extension: %d %v", st, refused)
	}
	// The session era's methods are not 2026-07-28's; a wrong Mcp-Name is refused.
	if st, r := modernTask(ctx, t, g.gw, "alice", tasksExt, "tasks/result", id, nil); st != http.StatusNotFound {
		t.Errorf("tasks/result from a 2026-07-28 client: %d %v; want 404 -32601", st, r)
	}
	if st, r := postModernFromAs(ctx, t, g.gw, "alice", tasksExt, "tasks/get", "gw-task-other", 5, map[string]any{"taskId": id}); st != http.StatusBadRequest {
		t.Errorf("tasks/get with an Mcp-Name that is not its taskId: %d %v; want 400 -32020", st, r)
	} else if code, _ := errorOf(r); code != -32020 {
		t.Errorf("tasks/get with a mismatched Mcp-Name: %v", r)
	}

	// A server asking for sampling as a task: a 2026-07-28 client runs no
	// client-side tasks, so it is asked without the task and answers at
	// once, which the server takes as the result.
	sampler := map[string]any{"sampling": map[string]any{}, "extensions": tasksExt["extensions"]}
	args := map[string]any{"prompt": "hi"}
	st, first := postModernFromAs(ctx, t, g.gw, "alice", sampler, "tools/call", "trigger-sampling-request-async", 6,
		map[string]any{"name": "trigger-sampling-request-async", "arguments": args})
	round := resultOf(t, "trigger-sampling-request-async", st, first)
	reqs, _ := round["inputRequests"].(map[string]any)
	if round["resultType"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("trigger-sampling-request-async = %v; want one input request", round)
	}
	answers := map[string]any{}
	for key, r := range reqs {
		req, _ := r.(map[string]any)
		if p, _ := req["params"].(map[string]any); req["method"] != "sampling/createMessage" || p["task"] != nil || p["messages"] == nil {
			t.Errorf("input request %v; want sampling/createMessage without its task", req)
		}
		answers[key] = map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "sampled by a modern client"}, "model": "m"}
	}
	st, final := postModernFromAs(ctx, t, g.gw, "alice", sampler, "tools/call", "trigger-sampling-request-async", 7,
		map[string]any{"name": "trigger-sampling-request-async", "arguments": args, "inputResponses": answers, "requestState": round["requestState"]})
	if content, _ := json.Marshal(resultOf(t, "the retry", st, final)["content"]); !strings.Contains(string(content), "sampled by a modern client") {
		t.Errorf("trigger-sampling-request-async after the answer = %s", content)
	}
}

// Across the eras, in host mode, where tasks belong to the sandbox: a task
// a 2026-07-28 client started is polled and its result fetched by a
// session-era client of the same sandbox (tasks/get, tasks/result), one a
// session-era client started is polled and cancelled by a 2026-07-28
// client (bridged), and another sandbox's clients of either era get the
// answer for an unknown id.
func TestTasks26AcrossErasInASandbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := startHost(t, filepath.Join(t.TempDir(), "state"))
	h.mustCLI("", "server", "add", "everything", "--command", filepath.Join(npmBin, "mcp-server-everything"))
	mine, theirs := h.createSandbox("mine", "--static", "everything"), h.createSandbox("theirs", "--static", "everything")
	waitForTools(ctx, t, mine, "simulate-research-query")
	noAnswer := func(m string, _ json.RawMessage) (any, error) { return nil, fmt.Errorf("not asked: %s", m) }

	// Started by a 2026-07-28 client, finished, fetched by a session-era one.
	status, out := postModernFromAs(ctx, t, mine, "modern", tasksExt, "tools/call", "simulate-research-query", 1,
		map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "eras"}})
	id, _ := resultOf(t, "tools/call", status, out)["taskId"].(string)
	if done, seen := pollModern(ctx, t, mine, "modern", id); done["status"] != "completed" {
		t.Fatalf("tasks/get (statuses %v) = %v", seen, done)
	}
	old := newTaskClient(t, mine, `{}`, noAnswer)
	if got := old.ok("tasks/get", map[string]any{"taskId": id}); got["status"] != "completed" || got["taskId"] != id {
		t.Errorf("the session-era client's tasks/get of the 2026-07-28 client's task = %v", got)
	}
	res := old.ok("tasks/result", map[string]any{"taskId": id})
	if content, _ := json.Marshal(res["content"]); !strings.Contains(string(content), "# Research Report: eras") {
		t.Errorf("the session-era client's tasks/result = %s", content)
	}

	// Started by a session-era client, seen and cancelled by a 2026-07-28 one.
	created := old.ok("tools/call", map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "cancel across"}, "task": map[string]any{"ttl": 60000}})
	id2, _ := created["task"].(map[string]any)["taskId"].(string)
	got := modernOK(ctx, t, mine, "modern", tasksExt, "tasks/get", id2, nil)
	if got["taskId"] != id2 || got["ttlMs"] == nil || got["ttl"] != nil {
		t.Errorf("a 2026-07-28 client's tasks/get of a session-era client's task = %v; want the task in 2026-07-28 names", got)
	}
	ack := modernOK(ctx, t, mine, "modern", tasksExt, "tasks/cancel", id2, nil)
	if ack["resultType"] != "complete" || ack["status"] != nil {
		t.Errorf("tasks/cancel = %v; want the empty ack", ack)
	}
	if got := old.ok("tasks/get", map[string]any{"taskId": id2}); got["status"] != "cancelled" {
		t.Errorf("the session-era client's tasks/get after the other era's cancel = %v", got)
	}

	// Another sandbox: the ids are unknown there, in both eras.
	for _, tid := range []string{id, id2} {
		st, r := modernTask(ctx, t, theirs, "modern", tasksExt, "tasks/get", tid, nil)
		if code, msg := errorOf(r); code != -32602 || msg != "Task not found: "+tid {
			t.Errorf("another sandbox's 2026-07-28 tasks/get of %s: %d %v", tid, st, r)
		}
		if r := newTaskClient(t, theirs, `{}`, noAnswer).call("tasks/get", map[string]any{"taskId": tid}); r.Error == nil || r.Error.Message != "Task not found: "+tid {
			t.Errorf("another sandbox's session-era tasks/get of %s = %s %+v", tid, r.Result, r.Error)
		}
	}
}

// buildTasksFixture builds test/conformance/tasksfixture, a 2026-07-28
// server with the tasks extension (the conformance harness's).
func buildTasksFixture(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tasksfixture")
	build := exec.Command("go", "build", "-o", bin, "./test/conformance/tasksfixture")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the tasks fixture: %v\n%s", err, out)
	}
	return bin
}

// Clients of both eras in front of a server speaking the 2026-07-28
// extension (over stdio, spoken to in 2026-07-28): a session-era client's
// task-augmented call becomes the server's task, polled, its result
// fetched (tasks/result waits, asking the client the task's input on the
// way), cancelled; a 2026-07-28 client's passes, input answered by
// tasks/update; neither's id means anything to another client.
func TestTasks26AgainstAnExtensionServer(t *testing.T) {
	fixture := buildTasksFixture(t)
	g := startServe(t, fmt.Sprintf(`{"tasks": {"runCmd": %q}}`, fixture))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g.gw, "slow_compute", "confirm_delete")

	var mu sync.Mutex
	var elicited []json.RawMessage
	answer := func(method string, params json.RawMessage) (any, error) {
		if method != "elicitation/create" {
			return nil, fmt.Errorf("not asked: %s", method)
		}
		mu.Lock()
		elicited = append(elicited, params)
		mu.Unlock()
		return map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}, nil
	}
	old := newTaskClient(t, g.gw, `{"elicitation":{}}`, answer)
	caps, _ := json.Marshal(old.init["capabilities"].(map[string]any)["tasks"])
	if string(caps) != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("initialize capabilities.tasks = %s; want the extension bridged", caps)
	}

	// Session era: created, polled, result fetched.
	created := old.ok("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 1, "label": "old"}, "task": map[string]any{"ttl": 60000}})
	tk, _ := created["task"].(map[string]any)
	id, _ := tk["taskId"].(string)
	if !strings.HasPrefix(id, "gw-task-") || tk["ttl"] == nil || tk["ttlMs"] != nil || created["resultType"] != nil {
		t.Fatalf("CreateTaskResult = %v; want the session era's, nested, of the gateway's id", created)
	}
	if got := old.ok("tasks/get", map[string]any{"taskId": id}); got["taskId"] != id || got["pollInterval"] == nil || got["result"] != nil {
		t.Errorf("tasks/get = %v", got)
	}
	res := old.ok("tasks/result", map[string]any{"taskId": id})
	if content, _ := json.Marshal(res["content"]); !strings.Contains(string(content), "computed old") {
		t.Errorf("tasks/result = %v", res)
	}
	if related, _ := res["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any); related["taskId"] != id {
		t.Errorf("tasks/result _meta = %v", res["_meta"])
	}
	if got := old.ok("tasks/get", map[string]any{"taskId": id}); got["status"] != "completed" {
		t.Errorf("tasks/get after the result = %v", got)
	}

	// A task that asks for input: tasks/result asks the client.
	created = old.ok("tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "f.txt"}, "task": map[string]any{}})
	id2, _ := created["task"].(map[string]any)["taskId"].(string)
	res = old.ok("tasks/result", map[string]any{"taskId": id2})
	if content, _ := json.Marshal(res["content"]); !strings.Contains(string(content), "deleted f.txt") {
		t.Errorf("tasks/result of the task that asked = %v", res)
	}
	mu.Lock()
	if len(elicited) != 1 || !strings.Contains(string(elicited[0]), `"Delete f.txt?"`) || !strings.Contains(string(elicited[0]), `"io.modelcontextprotocol/related-task":{"taskId":"`+id2+`"}`) {
		t.Errorf("the client was asked %s; want the task's question, related to its id", elicited)
	}
	mu.Unlock()

	// Cancelled.
	created = old.ok("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 60, "label": "cancel"}, "task": map[string]any{}})
	id3, _ := created["task"].(map[string]any)["taskId"].(string)
	if got := old.ok("tasks/cancel", map[string]any{"taskId": id3}); got["status"] != "cancelled" || got["taskId"] != id3 {
		t.Errorf("tasks/cancel = %v", got)
	}
	if r := old.call("tasks/cancel", map[string]any{"taskId": id3}); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "terminal status: cancelled") {
		t.Errorf("tasks/cancel of a cancelled task = %s %+v", r.Result, r.Error)
	}
	list := old.ok("tasks/list", map[string]any{})
	if items, _ := list["tasks"].([]any); len(items) != 3 {
		t.Errorf("tasks/list = %v; want the client's three tasks", list)
	}

	// 2026-07-28: passed, its input answered by tasks/update.
	status, out := postModernFromAs(ctx, t, g.gw, "modern", tasksExt, "tools/call", "confirm_delete", 1,
		map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "g.txt"}})
	mid, _ := resultOf(t, "tools/call", status, out)["taskId"].(string)
	if !strings.HasPrefix(mid, "gw-task-") {
		t.Fatalf("2026-07-28 CreateTaskResult = %v", out)
	}
	asked, seen := pollModern(ctx, t, g.gw, "modern", mid)
	reqs, _ := asked["inputRequests"].(map[string]any)
	if asked["status"] != "input_required" || reqs["confirm"] == nil {
		t.Fatalf("tasks/get (statuses %v) = %v; want input_required asking confirm", seen, asked)
	}
	ack := modernOK(ctx, t, g.gw, "modern", tasksExt, "tasks/update", mid, map[string]any{"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}})
	if ack["resultType"] != "complete" || ack["taskId"] != nil {
		t.Errorf("tasks/update = %v; want the empty ack", ack)
	}
	done, seen := pollModern(ctx, t, g.gw, "modern", mid)
	if content, _ := json.Marshal(done["result"]); done["status"] != "completed" || !strings.Contains(string(content), "deleted g.txt") {
		t.Errorf("tasks/get after tasks/update (statuses %v) = %v", seen, done)
	}

	// Another client, of either era.
	for _, tid := range []string{id, mid} {
		_, r := modernTask(ctx, t, g.gw, "mallory", tasksExt, "tasks/get", tid, nil)
		if code, msg := errorOf(r); code != -32602 || msg != "Task not found: "+tid {
			t.Errorf("another 2026-07-28 client's tasks/get of %s: %v", tid, r)
		}
		other := newTaskClient(t, g.gw, `{}`, answer)
		if r := other.call("tasks/result", map[string]any{"taskId": tid}); r.Error == nil || r.Error.Message != "Task not found: "+tid {
			t.Errorf("another session-era client's tasks/result of %s = %s %+v", tid, r.Result, r.Error)
		}
	}
}

// The TypeScript SDK 2.x client with the tasks extension's requester
// (@modelcontextprotocol/ext-tasks), of each era, through the gateway in
// front of the everything server (2025-11-25 tasks) and the tasks fixture
// (the 2026-07-28 extension): every pairing of the eras, the task's input
// answered the way each era asks it (tasks/update, a request related to the
// task), cancellation on both servers.
func TestTasks26WithTheTypeScriptClient(t *testing.T) {
	fixture := buildTasksFixture(t)
	g := startServe(t, fmt.Sprintf(`{"everything": {"runCmd": %q}, "tasks": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything"), fixture))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g.gw, "simulate-research-query", "confirm_delete")
	modules, err := filepath.Abs(filepath.Join(npmBin, ".."))
	if err != nil {
		t.Fatal(err)
	}
	calls := `[{"tool":"simulate-research-query","args":{"topic":"ts"}},` +
		`{"tool":"confirm_delete","args":{"filename":"a.txt"}},` +
		`{"tool":"slow_compute","args":{"seconds":60,"label":"x"},"cancel":true},` +
		`{"tool":"simulate-research-query","args":{"topic":"c"},"cancel":true}]`
	for era, delivery := range map[string]string{"modern": "task-update", "legacy": "peer-request"} {
		t.Run(era, func(t *testing.T) {
			cmd := exec.CommandContext(ctx, filepath.Join(npmBin, "node"), filepath.Join("testdata", "tasks26-client.mjs"), modules, g.url, g.token, era, calls)
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("the TypeScript client: %v\n%s\n%s\nlog:\n%s", err, out, stderr, g.log())
			}
			var seen struct {
				Era   string
				Calls []struct {
					Tool, Kind, TaskID, Status, Text, Error, Thrown string
					Statuses                                        []string
				}
				Asked []struct{ Kind, Message, TaskID, Delivery string }
			}
			if err := json.Unmarshal(out, &seen); err != nil || len(seen.Calls) != 4 {
				t.Fatalf("%v: %s", err, out)
			}
			if seen.Era != era {
				t.Errorf("the client speaks %q, want %q", seen.Era, era)
			}
			want := []struct{ status, text string }{{"completed", "# Research Report: ts"}, {"completed", "deleted a.txt"}, {"cancelled", ""}, {"cancelled", ""}}
			for i, c := range seen.Calls {
				if c.Kind != "task" || !strings.HasPrefix(c.TaskID, "gw-task-") || c.Status != want[i].status || !strings.Contains(c.Text, want[i].text) || !slices.Contains(c.Statuses, "working") {
					t.Errorf("%s: %+v; want a task of the gateway's id, seen working, ending %s", c.Tool, c, want[i].status)
				}
			}
			if len(seen.Asked) != 1 || seen.Asked[0].Message != "Delete a.txt?" || seen.Asked[0].TaskID != seen.Calls[1].TaskID || seen.Asked[0].Delivery != delivery {
				t.Errorf("the client was asked %+v; want the task's question once, for %s, by %s", seen.Asked, seen.Calls[1].TaskID, delivery)
			}
		})
	}
}

// A session-era server's task that asks for input (the everything server's
// research of an ambiguous topic sends elicitation/create, related to the
// task, while its client waits in tasks/result), for a 2026-07-28 client:
// the question is the task's inputRequests, the answer goes back by
// tasks/update, and the task completes with it.
func TestTasks26InputOfASessionEraServer(t *testing.T) {
	g := launchEverything(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g.gw, "simulate-research-query")
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": tasksExt["extensions"]}
	status, out := postModernFromAs(ctx, t, g.gw, "alice", caps, "tools/call", "simulate-research-query", 1,
		map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "python", "ambiguous": true}})
	id, _ := resultOf(t, "tools/call", status, out)["taskId"].(string)

	var asked map[string]any
	deadline := time.Now().Add(90 * time.Second) // a bound for a broken gateway, not a measure
	for asked == nil {
		got := modernOK(ctx, t, g.gw, "alice", caps, "tasks/get", id, nil)
		switch got["status"] {
		case "input_required":
			asked, _ = got["inputRequests"].(map[string]any)
			if len(asked) != 1 {
				t.Fatalf("input_required task = %v; want one input request", got)
			}
		case "working":
		default:
			t.Fatalf("tasks/get = %v; want it to ask for input", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task never asked for input: %v", got)
		}
		time.Sleep(200 * time.Millisecond) // pacing the polls, not synchronisation
	}
	var key string
	for k, v := range asked {
		key = k
		req, _ := v.(map[string]any)
		msg, _ := req["params"].(map[string]any)["message"].(string)
		if req["method"] != "elicitation/create" || !strings.Contains(msg, `"python" could have multiple interpretations`) {
			t.Errorf("input request = %v", req)
		}
	}
	// Another client cannot answer it: the id is unknown to it.
	_, r := modernTask(ctx, t, g.gw, "mallory", caps, "tasks/update", id, map[string]any{"inputResponses": map[string]any{key: map[string]any{"action": "decline"}}})
	if code, msg := errorOf(r); code != -32602 || msg != "Task not found: "+id {
		t.Errorf("another client's tasks/update: %v", r)
	}
	ack := modernOK(ctx, t, g.gw, "alice", caps, "tasks/update", id, map[string]any{"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"interpretation": "programming"}}}})
	if ack["resultType"] != "complete" {
		t.Errorf("tasks/update = %v", ack)
	}
	done, seen := pollModern(ctx, t, g.gw, "alice", id)
	result, _ := done["result"].(map[string]any)
	if content, _ := json.Marshal(result["content"]); done["status"] != "completed" || !strings.Contains(string(content), "# Research Report: python (programming)") {
		t.Errorf("tasks/get after the answer (statuses %v) = %v; want the report of the clarified topic", seen, done)
	}
}
