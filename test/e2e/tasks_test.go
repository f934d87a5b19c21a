package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (2025-11-25, SEP-1686) through the real binary in serve mode, in
// front of the real everything server, with raw HTTP clients that speak
// tasks the way the specification writes them.

// taskClient is a session-era client over raw HTTP: it reads every event
// stream as it comes, answers the server's requests with answer, and keeps
// the notifications of its GET stream.
type taskClient struct {
	t      *testing.T
	g      *gw
	id     string
	hc     *http.Client
	init   map[string]any
	answer func(method string, params json.RawMessage) (any, error)

	mu     sync.Mutex
	notes  []json.RawMessage // notifications/tasks/status params, in order
	noted  chan struct{}     // signalled on each one
	nextID int
}

type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newTaskClient(t *testing.T, g *gw, caps string, answer func(string, json.RawMessage) (any, error)) *taskClient {
	t.Helper()
	c := &taskClient{t: t, g: g, hc: &http.Client{}, answer: answer, noted: make(chan struct{}, 100)}
	res := c.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"tasks-e2e","version":"1"}}`))
	if res.Error != nil {
		t.Fatalf("initialize: %+v", res.Error)
	}
	if err := json.Unmarshal(res.Result, &c.init); err != nil {
		t.Fatal(err)
	}
	c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)).Body.Close()
	return c
}

// listen opens the session's GET stream and keeps its task notifications.
func (c *taskClient) listen(ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.g.url, nil)
	req.Header.Set("Authorization", "Bearer "+c.g.token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.id)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.hc.Do(req)
	if err != nil || resp.StatusCode != 200 {
		c.t.Fatalf("GET stream: %v %v", err, resp)
	}
	go func() {
		defer resp.Body.Close()
		c.events(resp, nil)
	}()
}

// events reads an event stream: notifications are kept, requests are
// answered; the response whose id is want is returned.
func (c *taskClient) events(resp *http.Response, want json.RawMessage) *rpcMsg {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		var m rpcMsg
		if json.Unmarshal(bytes.TrimSpace(data), &m) != nil {
			continue
		}
		switch {
		case m.Method == "notifications/tasks/status":
			c.mu.Lock()
			c.notes = append(c.notes, m.Params)
			c.mu.Unlock()
			c.noted <- struct{}{}
		case m.Method != "" && m.ID != nil:
			c.reply(m)
		case m.Method == "" && want != nil && bytes.Equal(m.ID, want):
			return &m
		}
	}
	return nil
}

func (c *taskClient) reply(m rpcMsg) {
	var body []byte
	res, err := c.answer(m.Method, m.Params)
	if err != nil {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32603, "message": err.Error()}})
	} else {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
	}
	c.post(body).Body.Close()
}

func (c *taskClient) post(body []byte) *http.Response {
	req, _ := http.NewRequest("POST", c.g.url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.g.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v\nlog:\n%s", err, c.g.log())
	}
	return resp
}

// call sends a request and returns its response, answering what the
// server asks meanwhile.
func (c *taskClient) call(method string, params any) *rpcMsg {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	c.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	resp := c.post(body)
	defer resp.Body.Close()
	if c.id == "" {
		c.id = resp.Header.Get("Mcp-Session-Id")
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if m := c.events(resp, id); m != nil {
			return m
		}
		c.t.Fatalf("%s: the event stream ended without a response\nlog:\n%s", method, c.g.log())
	}
	var m rpcMsg
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		c.t.Fatalf("%s: %s: %v", method, resp.Status, err)
	}
	return &m
}

// ok calls and fails the test on a JSON-RPC error.
func (c *taskClient) ok(method string, params any) map[string]any {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %q\nlog:\n%s", method, m.Error.Code, m.Error.Message, c.g.log())
	}
	var out map[string]any
	if err := json.Unmarshal(m.Result, &out); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, m.Result)
	}
	return out
}

// waitStatus waits for a notifications/tasks/status of id with status.
func (c *taskClient) waitStatus(id, status string) {
	c.t.Helper()
	deadline := time.After(60 * time.Second) // a bound for a broken gateway, not a measure
	for {
		c.mu.Lock()
		for _, n := range c.notes {
			var p struct{ TaskID, Status string }
			_ = json.Unmarshal(n, &p)
			if p.TaskID == id && p.Status == status {
				c.mu.Unlock()
				return
			}
		}
		seen := fmt.Sprintf("%s", c.notes)
		c.mu.Unlock()
		select {
		case <-c.noted:
		case <-deadline:
			c.t.Fatalf("no notifications/tasks/status %s for %s; seen: %s", status, id, seen)
		}
	}
}

func launchEverything(t *testing.T) *serveGW {
	t.Helper()
	return startServe(t, fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")))
}

func TestTasksThroughTheGateway(t *testing.T) {
	g := launchEverything(t)
	noAnswer := func(method string, _ json.RawMessage) (any, error) { return nil, fmt.Errorf("not asked: %s", method) }
	a := newTaskClient(t, g.gw, `{}`, noAnswer)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.listen(ctx)

	// The merged capability: what the everything server offers.
	caps, _ := json.Marshal(a.init["capabilities"].(map[string]any)["tasks"])
	if string(caps) != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Fatalf("initialize capabilities.tasks = %s", caps)
	}

	// A task started, polled, its notifications seen, its result fetched.
	created := a.ok("tools/call", map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "gateways"}, "task": map[string]any{"ttl": 60000}})
	tk, _ := created["task"].(map[string]any)
	id, _ := tk["taskId"].(string)
	if !strings.HasPrefix(id, "gw-task-") || tk["status"] != "working" {
		t.Fatalf("CreateTaskResult = %v; want a task of the gateway's id, working", created)
	}
	got := a.ok("tasks/get", map[string]any{"taskId": id})
	if got["taskId"] != id || (got["status"] != "working" && got["status"] != "completed") {
		t.Fatalf("tasks/get = %v", got)
	}
	a.waitStatus(id, "completed")
	res := a.ok("tasks/result", map[string]any{"taskId": id})
	content, _ := json.Marshal(res["content"])
	if !strings.Contains(string(content), "# Research Report: gateways") {
		t.Errorf("tasks/result content = %s", content)
	}
	related, _ := res["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any)
	if related["taskId"] != id {
		t.Errorf("tasks/result _meta = %v; want related-task %s", res["_meta"], id)
	}

	// A second task, cancelled.
	second := a.ok("tools/call", map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "cancel me"}, "task": map[string]any{}})
	id2, _ := second["task"].(map[string]any)["taskId"].(string)
	if cancelled := a.ok("tasks/cancel", map[string]any{"taskId": id2}); cancelled["status"] != "cancelled" || cancelled["taskId"] != id2 {
		t.Errorf("tasks/cancel = %v", cancelled)
	}
	if again := a.ok("tasks/get", map[string]any{"taskId": id2}); again["status"] != "cancelled" {
		t.Errorf("tasks/get after cancel = %v", again)
	}
	list := a.ok("tasks/list", map[string]any{})
	listed, _ := json.Marshal(list["tasks"])
	if items, _ := list["tasks"].([]any); len(items) != 2 || !strings.Contains(string(listed), id) || !strings.Contains(string(listed), id2) {
		t.Errorf("tasks/list of the creator = %s; want its two tasks", listed)
	}

	// Another client: the first client's id is like an unknown one.
	b := newTaskClient(t, g.gw, `{}`, noAnswer)
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs := b.call(method, map[string]any{"taskId": id})
		unknown := b.call(method, map[string]any{"taskId": "gw-task-unknown"})
		if theirs.Error == nil || unknown.Error == nil {
			t.Fatalf("%s by another client: %s / unknown: %s; want errors", method, theirs.Result, unknown.Result)
		}
		if theirs.Error.Code != -32602 || theirs.Error.Code != unknown.Error.Code ||
			theirs.Error.Message != "Task not found: "+id || unknown.Error.Message != "Task not found: gw-task-unknown" {
			t.Errorf("%s by another client: %d %q; of an unknown id: %d %q", method, theirs.Error.Code, theirs.Error.Message, unknown.Error.Code, unknown.Error.Message)
		}
	}
	if other := b.ok("tasks/list", map[string]any{}); fmt.Sprint(other["tasks"]) != "[]" {
		t.Errorf("tasks/list of another client = %v; want none", other["tasks"])
	}
	// The first client still gets its result.
	if again := a.ok("tasks/get", map[string]any{"taskId": id}); again["status"] != "completed" {
		t.Errorf("tasks/get of the creator after the other client's tries = %v", again)
	}
}

// A server asks the client to run a sampling request as a task, then polls
// the client's tasks/get and tasks/result: the ids are mapped both ways.
func TestTasksServerAsksClientTask(t *testing.T) {
	g := launchEverything(t)
	var mu sync.Mutex
	var polledWith []string
	answer := func(method string, params json.RawMessage) (any, error) {
		var p struct {
			TaskID string          `json:"taskId"`
			Task   json.RawMessage `json:"task"`
		}
		_ = json.Unmarshal(params, &p)
		now := time.Now().UTC().Format(time.RFC3339)
		switch method {
		case "sampling/createMessage":
			if p.Task == nil {
				return nil, fmt.Errorf("sampling/createMessage came without its task")
			}
			return map[string]any{"task": map[string]any{"taskId": "client-task-1", "status": "working", "ttl": 60000, "createdAt": now, "lastUpdatedAt": now}}, nil
		case "tasks/get":
			mu.Lock()
			polledWith = append(polledWith, p.TaskID)
			mu.Unlock()
			return map[string]any{"taskId": p.TaskID, "status": "completed", "ttl": 60000, "createdAt": now, "lastUpdatedAt": now}, nil
		case "tasks/result":
			mu.Lock()
			polledWith = append(polledWith, p.TaskID)
			mu.Unlock()
			return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "sampled by the client"}, "model": "test-model"}, nil
		}
		return nil, fmt.Errorf("unexpected %s", method)
	}
	c := newTaskClient(t, g.gw, `{"sampling":{},"tasks":{"requests":{"sampling":{"createMessage":{}}}}}`, answer)
	res := c.ok("tools/call", map[string]any{"name": "trigger-sampling-request-async", "arguments": map[string]any{"prompt": "hello"}})
	text, _ := json.Marshal(res["content"])
	if !strings.Contains(string(text), "[COMPLETED] Async sampling completed!") || !strings.Contains(string(text), "sampled by the client") {
		t.Fatalf("trigger-sampling-request-async = %s", text)
	}
	if !strings.Contains(string(text), "Task created: gw-task-") || strings.Contains(string(text), "client-task-1") {
		t.Errorf("the server saw the client's own task id, not the gateway's: %s", text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(polledWith) < 2 {
		t.Fatalf("the client was polled %v; want tasks/get and tasks/result", polledWith)
	}
	for _, id := range polledWith {
		if id != "client-task-1" {
			t.Errorf("the client was polled for %q; want its own id client-task-1", id)
		}
	}
}

// withExtensions makes the test server declare the extensions of the JSON
// object ext (E2E_SERVER_EXTENSIONS).
func withExtensions(opts *mcp.ServerOptions, ext string) *mcp.ServerOptions {
	if opts == nil {
		opts = &mcp.ServerOptions{}
	}
	var exts map[string]map[string]any
	if err := json.Unmarshal([]byte(ext), &exts); err != nil {
		panic(err)
	}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	for name, settings := range exts {
		caps.AddExtension(name, settings)
	}
	opts.Capabilities = caps
	return opts
}

// addClientCapsTool adds client_caps: the capabilities the server's client
// declared at initialize.
func addClientCapsTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "client_caps", Description: "Returns the capabilities its client declared."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b, _ := json.Marshal(req.Session.InitializeParams().Capabilities)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
}

// Extensions: what servers declare in capabilities.extensions is merged
// into the gateway's initialize and server/discover answers (the first
// server's settings for an identifier both declare); what a client declares
// reaches its own session of a per-client server.
func TestExtensionsPassThrough(t *testing.T) {
	one := `E2E_SERVER_EXTENSIONS='{"io.example/server-ext":{"feature":true},"io.example/shared":{"from":"a"}}' ` + testServerCmd()
	two := `E2E_SERVER_EXTENSIONS='{"io.example/shared":{"from":"b"},"io.example/other":{}}' ` + testServerCmd()
	g := startServe(t, fmt.Sprintf(`{"a": {"runCmd": %q, "share": "per-client"}, "b": {"runCmd": %q}}`, one, two))
	want := `{"io.example/other":{},"io.example/server-ext":{"feature":true},"io.example/shared":{"from":"a"}}`

	c := newTaskClient(t, g.gw, `{"extensions":{"io.example/client-ext":{"version":2}}}`, func(m string, _ json.RawMessage) (any, error) { return map[string]any{}, nil })
	got, _ := json.Marshal(c.init["capabilities"].(map[string]any)["extensions"])
	if string(got) != want {
		t.Errorf("initialize capabilities.extensions = %s, want %s", got, want)
	}
	res := c.ok("tools/call", map[string]any{"name": "client_caps", "arguments": map[string]any{}})
	text, _ := json.Marshal(res["content"])
	if !strings.Contains(string(text), `\"extensions\":{\"io.example/client-ext\":{\"version\":2}}`) {
		t.Errorf("the per-client server's session saw the client capabilities %s; want its extension", text)
	}

	ctx := context.Background()
	disc := postModern(ctx, t, g.gw, "server/discover", "", 1, map[string]any{})
	got, _ = json.Marshal(disc["result"].(map[string]any)["capabilities"].(map[string]any)["extensions"])
	if string(got) != want {
		t.Errorf("server/discover capabilities.extensions = %s, want %s", got, want)
	}
}

// 2026-07-28 results name the gateway in _meta, as its server/discover
// does, not the server behind it.
func TestStatelessResultsNameTheGateway(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"modern": {"runCmd": %q}}`, "E2E_SERVER_MODERN_ONLY=1 "+testServerCmd()))
	ctx := context.Background()
	disc := postModern(ctx, t, g.gw, "server/discover", "", 1, map[string]any{})
	want, _ := json.Marshal(disc["result"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"])
	if !strings.Contains(string(want), `"name":"mcp-gateway"`) {
		t.Fatalf("server/discover serverInfo = %s", want)
	}
	res := postModern(ctx, t, g.gw, "tools/call", "echo", 2, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	result, _ := res["result"].(map[string]any)
	meta, _ := result["_meta"].(map[string]any)
	got, _ := json.Marshal(meta["io.modelcontextprotocol/serverInfo"])
	if string(got) != string(want) {
		t.Errorf("tools/call result _meta serverInfo = %s, want the gateway's %s (result %v)", got, want, res)
	}
	if content, _ := json.Marshal(result["content"]); !strings.Contains(string(content), `"text":"hi"`) {
		t.Errorf("tools/call content = %s", content)
	}
}

// A task of a server whose process died ends as failed, saying so: the new
// process knows nothing of it.
func TestTasksOfARestartedServerFail(t *testing.T) {
	g := launchEverything(t)
	c := newTaskClient(t, g.gw, `{}`, func(m string, _ json.RawMessage) (any, error) { return nil, fmt.Errorf("not asked: %s", m) })
	created := c.ok("tools/call", map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "lost"}, "task": map[string]any{}})
	id, _ := created["task"].(map[string]any)["taskId"].(string)
	var killed []int
	for pid, cmd := range g.children() {
		if strings.Contains(cmd, "everything") {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed = append(killed, pid)
			}
		}
	}
	if len(killed) == 0 {
		t.Fatalf("no everything server among the gateway's children: %v", g.children())
	}
	for _, pid := range killed {
		for alive(pid) {
			time.Sleep(10 * time.Millisecond) // waiting for the kill to land, not deciding anything
		}
	}
	// A poll that reaches the process before the gateway has seen it die
	// gets that failure (once: the process is then known down); the next
	// starts a new process, which knows nothing of the task.
	first := c.call("tasks/get", map[string]any{"taskId": id})
	if first.Error != nil && !strings.Contains(first.Error.Message, `mcp server "everything" exited during the call`) {
		t.Fatalf("tasks/get right after the crash: %+v", first.Error)
	}
	got := c.ok("tasks/get", map[string]any{"taskId": id})
	if got["taskId"] != id || got["status"] != "failed" || got["statusMessage"] != `mcp server "everything" restarted since the task was created; the task is lost` {
		t.Errorf("tasks/get of a task of a restarted server = %v", got)
	}
	res := c.call("tasks/result", map[string]any{"taskId": id})
	if res.Error == nil || res.Error.Code != -32603 || !strings.Contains(res.Error.Message, "restarted since the task was created") {
		t.Errorf("tasks/result of a task of a restarted server = %s %+v", res.Result, res.Error)
	}
}

// The TypeScript SDK's own tasks API through the gateway: callToolStream
// of a task tool (created, polled, result), tasks/list, and a server's
// sampling run as a task by the SDK's task store.
func TestTasksWithTheTypeScriptClient(t *testing.T) {
	g := launchEverything(t)
	sdk, err := filepath.Abs(filepath.Join(npmBin, "..", "@modelcontextprotocol", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(npmBin, "node"), filepath.Join("testdata", "tasks-client.mjs"), sdk, g.url, g.token)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the TypeScript client: %v\n%s\n%s\nlog:\n%s", err, out, stderr, g.log())
	}
	var seen struct {
		TasksCapability map[string]any `json:"tasksCapability"`
		Stream          []struct {
			Type, TaskID, Status, Text, Related, Message string
		} `json:"stream"`
		Listed                []string `json:"listed"`
		SamplingTaskRequested bool     `json:"samplingTaskRequested"`
		Sampling              string   `json:"sampling"`
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if seen.TasksCapability["requests"] == nil {
		t.Errorf("the client saw the tasks capability %v", seen.TasksCapability)
	}
	if len(seen.Stream) < 3 || seen.Stream[0].Type != "taskCreated" || !strings.HasPrefix(seen.Stream[0].TaskID, "gw-task-") {
		t.Fatalf("callToolStream = %+v", seen.Stream)
	}
	id := seen.Stream[0].TaskID
	last := seen.Stream[len(seen.Stream)-1]
	if last.Type != "result" || !strings.Contains(last.Text, "# Research Report: sdk") || last.Related != id {
		t.Errorf("callToolStream ended with %+v; want the report, related to %s", last, id)
	}
	if !slices.Contains(seen.Listed, id+":completed") {
		t.Errorf("tasks/list = %v; want %s completed", seen.Listed, id)
	}
	if !seen.SamplingTaskRequested || !strings.Contains(seen.Sampling, "[COMPLETED]") || !strings.Contains(seen.Sampling, "sampled as a task by the TS client") {
		t.Errorf("trigger-sampling-request-async (asked as a task: %v) = %s", seen.SamplingTaskRequested, seen.Sampling)
	}
}
