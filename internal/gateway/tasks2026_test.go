package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The 2026-07-28 tasks extension (SEP-2663) through the gateway, in front
// of a session-era server with 2025-11-25 tasks (bridged) and of a
// 2026-07-28 server declaring the extension (passed).

const withTasksExt = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskTools are the tools of a task server: research requires a task,
// quick may run as one, plain never does.
var taskTools = []string{
	`{"name":"research","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
	`{"name":"quick","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`,
	`{"name":"plain","inputSchema":{"type":"object"}}`,
}

func newTaskServer26(name, ttl string) *taskServer {
	ts := newTaskServer(name, ttl)
	ts.tools = taskTools
	return ts
}

// modern makes a 2026-07-28 request from a client named client declaring
// caps.
func modern(t *testing.T, g *Gateway, client, caps, method, params string) Reply {
	t.Helper()
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	p, err := wire.Set(json.RawMessage(params), "_meta", json.RawMessage(meta))
	if err != nil {
		t.Fatal(err)
	}
	return g.HandleStateless(context.Background(), msg("9", method, string(p)), &recorder{})
}

func errCode(r Reply) int64 {
	if r.Error == nil {
		return 0
	}
	return wire.DecodeError(r.Error).Code
}

func TestTasks26Advertised(t *testing.T) {
	with := gatewayWith(t, RouterOptions{}, newTaskServer26("a", "1000"))
	caps := wire.Get(with.discover().Result, "capabilities")
	if got := string(wire.Get(wire.Get(caps, "extensions"), TasksExtension)); got != `{}` {
		t.Errorf("server/discover extensions[%s] = %q with a server offering tasks; want {}", TasksExtension, got)
	}
	if wire.Get(caps, "tasks") != nil {
		t.Errorf("server/discover capabilities = %s; the session era's tasks slot has no place there", caps)
	}
	without := gatewayWith(t, RouterOptions{}, &scripted{fakeUpstream: fakeUpstream{name: "b"}, caps: `{"tools":{},"tasks":{"list":{}}}`})
	if got := wire.Get(wire.Get(without.discover().Result, "capabilities"), "extensions"); got != nil {
		t.Errorf("server/discover extensions = %s without a server running tools as tasks; want none", got)
	}
}

func TestTasks26Bridged(t *testing.T) {
	ts := newTaskServer26("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	g.Tasks.MaxTTL = time.Minute

	created := modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"research","arguments":{}}`)
	id, _ := wire.GetString(created.Result, "taskId")
	if created.Error != nil || !strings.HasPrefix(id, "gw-task-") {
		t.Fatalf("tools/call = %s %s; want a CreateTaskResult of the gateway's id", created.Result, created.Error)
	}
	for key, want := range map[string]string{"resultType": `"task"`, "status": `"working"`, "ttlMs": `60000`, "task": ``, "ttl": ``, "createdAt": `"2026-01-01T00:00:00Z"`} {
		if got := string(wire.Get(created.Result, key)); got != want {
			t.Errorf("CreateTaskResult %s = %q, want %q (%s)", key, got, want, created.Result)
		}
	}
	if got := ts.requests()[0]; !strings.Contains(got, `"task":{"ttl":60000}`) || strings.Contains(got, "protocolVersion") {
		t.Errorf("the server got %s; want the call task-augmented, in the session era", got)
	}

	get := modern(t, g, "alice", withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`)
	if want := `{"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z","status":"working","taskId":"` + id + `","ttlMs":60000,"resultType":"complete"`; !strings.HasPrefix(string(get.Result), want) {
		t.Errorf("tasks/get = %s %s, want it to start %s", get.Result, get.Error, want)
	}
	ts.set("s-1", "completed")
	done := modern(t, g, "alice", withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`)
	if got := string(wire.Get(done.Result, "result")); got != `{"content":[{"type":"text","text":"done s-1"}],"resultType":"complete"}` {
		t.Errorf("tasks/get of a completed task inlines %s, want the server's result without related-task (%s)", got, done.Result)
	}
	if got := string(wire.Get(done.Result, "status")); got != `"completed"` {
		t.Errorf("tasks/get status = %s", got)
	}
	if ack := modern(t, g, "alice", withTasksExt, "tasks/cancel", `{"taskId":"`+id+`"}`); string(ack.Result) != `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"t"}}}` {
		t.Errorf("tasks/cancel = %s %s, want the empty ack", ack.Result, ack.Error)
	}

	// Another client, of either era: the id is as unknown.
	for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		theirs := modern(t, g, "mallory", withTasksExt, method, `{"taskId":"`+id+`","inputResponses":{}}`)
		unknown := modern(t, g, "mallory", withTasksExt, method, `{"taskId":"nope","inputResponses":{}}`)
		if want := strings.Replace(string(unknown.Error), "nope", id, 1); want == "" || string(theirs.Error) != want {
			t.Errorf("%s of another client's task = %s %s, want %s", method, theirs.Result, theirs.Error, want)
		}
	}
	if got := handle(t, newSession(t, g), "tasks/get", `{"taskId":"`+id+`"}`); errCode(got) != wire.CodeInvalidParams {
		t.Errorf("a session-era client's tasks/get of a 2026-07-28 client's task = %s %s, want not found", got.Result, got.Error)
	}
}

func TestTasks26BridgedOutcomes(t *testing.T) {
	ts := newTaskServer26("a", "1000")
	inner := ts.handle
	ts.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		if id, _ := wire.GetString(params, "taskId"); method == "tasks/result" && id == "s-2" {
			return &wire.Response{Error: json.RawMessage(`{"code":-32603,"message":"crashed running s-2"}`)}, nil
		}
		if id, _ := wire.GetString(params, "taskId"); method == "tasks/cancel" && id == "s-3" {
			return &wire.Response{Error: json.RawMessage(`{"code":-32602,"message":"Cannot cancel task in terminal status: completed"}`)}, nil
		}
		return inner(ctx, method, params)
	}
	g := gatewayWith(t, RouterOptions{}, ts)
	start := func() string {
		r := modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"quick","arguments":{}}`)
		id, _ := wire.GetString(r.Result, "taskId")
		if id == "" {
			t.Fatalf("tools/call of an optional-task tool by a client with the extension = %s %s; want a task", r.Result, r.Error)
		}
		return id
	}
	_, failing, terminal := start(), start(), start()
	ts.set("s-2", "failed")
	got := modern(t, g, "alice", withTasksExt, "tasks/get", `{"taskId":"`+failing+`"}`)
	if st, e := string(wire.Get(got.Result, "status")), string(wire.Get(got.Result, "error")); st != `"failed"` || !strings.Contains(e, `"crashed running gw-task-`) || wire.Get(got.Result, "result") != nil {
		t.Errorf("tasks/get of a task whose result is an error = %s, want failed with the error under the gateway's id", got.Result)
	}
	if ack := modern(t, g, "alice", withTasksExt, "tasks/cancel", `{"taskId":"`+terminal+`"}`); !strings.HasPrefix(string(ack.Result), `{"resultType":"complete"`) {
		t.Errorf("tasks/cancel of a finished task = %s %s, want the ack", ack.Result, ack.Error)
	}
	before := len(ts.requests())
	if up := modern(t, g, "alice", withTasksExt, "tasks/update", `{"taskId":"`+terminal+`","inputResponses":{"k":{"action":"accept"}}}`); !strings.HasPrefix(string(up.Result), `{"resultType":"complete"`) || len(ts.requests()) != before {
		t.Errorf("tasks/update with answers no request asked for = %s %s, want the ack, the session-era server not asked", up.Result, up.Error)
	}
}

func TestTasks26WithoutTheExtension(t *testing.T) {
	ts := newTaskServer26("a", "1000")
	g := gatewayWith(t, RouterOptions{}, ts)
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := modern(t, g, "c", `{}`, method, `{"taskId":"x","inputResponses":{}}`)
		if e := wire.DecodeError(r.Error); r.Error == nil || e.Code != -32021 || string(e.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
			t.Errorf("%s without the extension = %s %s, want -32021 naming it", method, r.Result, r.Error)
		}
	}
	for _, method := range []string{"tasks/result", "tasks/list"} {
		if r := modern(t, g, "c", withTasksExt, method, `{"taskId":"x"}`); errCode(r) != wire.CodeMethodNotFound {
			t.Errorf("%s = %s %s, want method not found", method, r.Result, r.Error)
		}
	}
	if r := modern(t, g, "c", `{}`, "tools/call", `{"name":"research","arguments":{}}`); errCode(r) != -32021 || len(ts.requests()) != 0 {
		t.Errorf("a required-task tool without the extension = %s %s (server got %v), want -32021 before the server", r.Result, r.Error, ts.requests())
	}
	r := modern(t, g, "c", `{}`, "tools/call", `{"name":"quick","arguments":{},"task":{"ttl":5}}`)
	if r.Error != nil || string(wire.Get(r.Result, "resultType")) != `"complete"` || strings.Contains(ts.requests()[0], `"task"`) {
		t.Errorf("an optional-task tool without the extension = %s %s (server got %v), want it run at once", r.Result, r.Error, ts.requests())
	}
	modern(t, g, "c", withTasksExt, "tools/call", `{"name":"plain","arguments":{},"task":{"ttl":5}}`)
	if got := ts.requests()[1]; strings.Contains(got, `"task"`) {
		t.Errorf("a legacy task param on a tool without task support reached the server: %s", got)
	}
}

func TestTasks26Bounded(t *testing.T) {
	g := gatewayWith(t, RouterOptions{}, newTaskServer26("a", "1000"))
	g.Tasks.MaxPerClient = 1
	if r := modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"research","arguments":{}}`); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	r := modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"research","arguments":{}}`)
	if e := wire.DecodeError(r.Error); r.Error == nil || !strings.Contains(e.Message, "--max-tasks-per-client") {
		t.Errorf("a second unfinished task at a limit of 1 = %s %s", r.Result, r.Error)
	}
	if r := modern(t, g, "bob", withTasksExt, "tools/call", `{"name":"research","arguments":{}}`); r.Error != nil {
		t.Errorf("another client's task at alice's limit = %s", r.Error)
	}
}

// modernTaskServer is a 2026-07-28 server declaring the extension: its
// tasks are flat and named m-1, m-2, ...
type modernTaskServer struct{ *scripted }

func (modernTaskServer) Stateless() bool { return true }

func TestTasks26ModernServerPassed(t *testing.T) {
	sc := &scripted{fakeUpstream: fakeUpstream{name: "m", tools: []string{tool("slow")}}, caps: `{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	sc.handle = func(_ context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		switch method {
		case "tools/call":
			if wire.Get(wire.Get(wire.Get(wire.Get(params, "_meta"), MetaClientCapabilities), "extensions"), TasksExtension) == nil {
				return &wire.Response{Result: json.RawMessage(`{"resultType":"complete","content":[]}`)}, nil
			}
			return &wire.Response{Result: json.RawMessage(`{"resultType":"task","taskId":"m-1","status":"working","ttlMs":999999999,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}`)}, nil
		case "tasks/get":
			return &wire.Response{Result: json.RawMessage(`{"resultType":"complete","taskId":"m-1","status":"completed","ttlMs":999999999,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z","result":{"content":[{"type":"text","text":"slow done"}]}}`)}, nil
		case "tasks/update", "tasks/cancel":
			return &wire.Response{Result: json.RawMessage(`{"resultType":"complete"}`)}, nil
		}
		return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
	}
	g := gatewayWith(t, RouterOptions{}, modernTaskServer{sc})
	g.Tasks.MaxTTL = time.Minute
	created := modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"slow","arguments":{}}`)
	id, _ := wire.GetString(created.Result, "taskId")
	if !strings.HasPrefix(id, "gw-task-") || string(wire.Get(created.Result, "ttlMs")) != "60000" || string(wire.Get(created.Result, "resultType")) != `"task"` {
		t.Fatalf("tools/call = %s %s; want the server's CreateTaskResult under the gateway's id, its ttl cut", created.Result, created.Error)
	}
	get := modern(t, g, "alice", withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`)
	if string(wire.Get(get.Result, "taskId")) != `"`+id+`"` || !strings.Contains(string(get.Result), "slow done") {
		t.Errorf("tasks/get = %s %s", get.Result, get.Error)
	}
	if last := sc.requests()[len(sc.requests())-1]; !strings.HasPrefix(last, `tasks/get {"taskId":"m-1"`) {
		t.Errorf("the server got %s; want its own id", last)
	}
	if r := modern(t, g, "mallory", withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`); errCode(r) != wire.CodeInvalidParams {
		t.Errorf("another client's tasks/get = %s %s", r.Result, r.Error)
	}
	if r := modern(t, g, "alice", withTasksExt, "tasks/cancel", `{"taskId":"`+id+`"}`); !strings.HasPrefix(string(r.Result), `{"resultType":"complete"`) {
		t.Errorf("tasks/cancel = %s %s", r.Result, r.Error)
	}
}

// A session-era client's task on a 2026-07-28 server with the extension:
// bridged the other way.
func TestTasks26ModernServerForASessionClient(t *testing.T) {
	var mu sync.Mutex
	status := "working"
	sc := &scripted{fakeUpstream: fakeUpstream{name: "m", tools: []string{tool("research")}}, caps: `{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	sc.handle = func(_ context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		switch method {
		case "tools/call":
			return &wire.Response{Result: json.RawMessage(`{"resultType":"task","taskId":"m-1","status":"working","ttlMs":30000,"pollIntervalMs":50,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}`)}, nil
		case "tasks/get":
			extra := ``
			if status == "completed" {
				extra = `,"result":{"content":[{"type":"text","text":"slow done"}]}`
			}
			return &wire.Response{Result: json.RawMessage(`{"resultType":"complete","taskId":"m-1","status":"` + status + `","ttlMs":30000,"pollIntervalMs":50,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z"` + extra + `}`)}, nil
		case "tasks/cancel":
			status = "cancelled"
			return &wire.Response{Result: json.RawMessage(`{"resultType":"complete"}`)}, nil
		}
		return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
	}
	g := gatewayWith(t, RouterOptions{}, modernTaskServer{sc})
	_, init, _ := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
	if got := string(wire.Get(wire.Get(init, "capabilities"), "tasks")); got != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("initialize capabilities.tasks = %s, want the bridged extension's", got)
	}
	s := newSession(t, g)
	id := startTask(t, s)
	if got := sc.requests()[0]; strings.Contains(got, `"task":`) || !strings.Contains(got, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("the server got %s; want no task param, the extension declared", got)
	}
	get := handle(t, s, "tasks/get", `{"taskId":"`+id+`"}`)
	if want := `{"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z","pollInterval":50,"status":"working","taskId":"` + id + `","ttl":30000}`; string(get.Result) != want {
		t.Errorf("tasks/get = %s %s, want %s", get.Result, get.Error, want)
	}
	go func() {
		mu.Lock()
		status = "completed"
		mu.Unlock()
	}()
	res := handle(t, s, "tasks/result", `{"taskId":"`+id+`"}`)
	if want := `{"content":[{"type":"text","text":"slow done"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}`; string(res.Result) != want {
		t.Errorf("tasks/result = %s %s, want %s", res.Result, res.Error, want)
	}
	if r := handle(t, s, "tasks/cancel", `{"taskId":"`+id+`"}`); errCode(r) != wire.CodeInvalidParams || !strings.Contains(string(r.Error), "terminal status: completed") {
		t.Errorf("tasks/cancel of a completed task = %s %s", r.Result, r.Error)
	}
	if list := string(handle(t, s, "tasks/list", `{}`).Result); !strings.Contains(list, `"ttl":30000`) || !strings.Contains(list, id) {
		t.Errorf("tasks/list = %s", list)
	}

	mu.Lock()
	status = "working"
	mu.Unlock()
	id2 := startTask(t, s)
	if r := handle(t, s, "tasks/cancel", `{"taskId":"`+id2+`"}`); string(wire.Get(r.Result, "status")) != `"cancelled"` || string(wire.Get(r.Result, "taskId")) != `"`+id2+`"` {
		t.Errorf("tasks/cancel = %s %s, want the cancelled task", r.Result, r.Error)
	}
	if r := handle(t, newSession(t, g), "tasks/get", `{"taskId":"`+id2+`"}`); errCode(r) != wire.CodeInvalidParams {
		t.Errorf("another session's tasks/get = %s %s", r.Result, r.Error)
	}
}

// A session-era server's request for the input of a 2026-07-28 client's
// task, sent while the gateway waits in tasks/result for it, is the task's
// inputRequests; tasks/update answers it, and another creator cannot.
func TestTasks26InputOfASessionEraTask(t *testing.T) {
	ts := newTaskServer26("a", "60000")
	var g *Gateway
	answered := make(chan json.RawMessage, 1)
	var asking atomic.Bool
	inner := ts.handle
	ts.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		if method != "tasks/result" || !asking.CompareAndSwap(false, true) {
			return inner(ctx, method, params) // the server asks once
		}
		// Ask the client, as a server of the session era does while its
		// client waits in tasks/result.
		res, werr := g.serverRequest(ctx, g.Router.all()[0], "elicitation/create",
			json.RawMessage(`{"message":"Which one?","requestedSchema":{"type":"object"},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"s-1"}}}`))
		if werr != nil {
			return &wire.Response{Error: werr.Marshal()}, nil
		}
		answered <- res
		ts.set("s-1", "completed")
		return inner(ctx, method, params)
	}
	g = gatewayWith(t, RouterOptions{}, ts)
	caps := `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	id, _ := wire.GetString(modern(t, g, "alice", caps, "tools/call", `{"name":"research","arguments":{}}`).Result, "taskId")
	ts.set("s-1", "input_required")

	var asks json.RawMessage
	for deadline := time.Now().Add(10 * time.Second); asks == nil; { // the drain runs in the background
		got := modern(t, g, "alice", caps, "tasks/get", `{"taskId":"`+id+`"}`)
		if st := string(wire.Get(got.Result, "status")); st != `"working"` && st != `"input_required"` || time.Now().After(deadline) {
			t.Fatalf("tasks/get = %s %s", got.Result, got.Error)
		}
		asks = wire.Get(got.Result, "inputRequests")
		time.Sleep(5 * time.Millisecond)
	}
	var key string
	wire.EachMember(asks, func(name []byte, v json.RawMessage) bool {
		key = string(name)
		if string(v) != `{"method":"elicitation/create","params":{"message":"Which one?","requestedSchema":{"type":"object"}}}` {
			t.Errorf("input request %s = %s", key, v)
		}
		return true
	})
	modern(t, g, "mallory", caps, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"`+key+`":{"action":"decline"}}}`)
	if ack := modern(t, g, "alice", caps, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"`+key+`":{"action":"accept","content":{"x":"y"}}}}`); !strings.HasPrefix(string(ack.Result), `{"resultType":"complete"`) {
		t.Errorf("tasks/update = %s %s", ack.Result, ack.Error)
	}
	if got := string(<-answered); got != `{"action":"accept","content":{"x":"y"}}` {
		t.Errorf("the server got the answer %s, want the creator's", got)
	}
	done := modern(t, g, "alice", caps, "tasks/get", `{"taskId":"`+id+`"}`)
	if st := string(wire.Get(done.Result, "status")); st != `"completed"` {
		t.Errorf("tasks/get after the answer = %s", done.Result)
	}
}

func TestTasks26OfARestartedServerFail(t *testing.T) {
	ts := newTaskServer26("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	id, _ := wire.GetString(modern(t, g, "alice", withTasksExt, "tools/call", `{"name":"research","arguments":{}}`).Result, "taskId")
	ts.gen.Add(1) // the process restarted
	get := modern(t, g, "alice", withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`)
	why := `mcp server "a" restarted since the task was created; the task is lost`
	if st, _ := wire.GetString(get.Result, "status"); st != "failed" {
		t.Errorf("tasks/get = %s %s, want failed", get.Result, get.Error)
	}
	if msg, _ := wire.GetString(wire.Get(get.Result, "error"), "message"); msg != why {
		t.Errorf("error = %s, want the message %q", wire.Get(get.Result, "error"), why)
	}
	if msg, _ := wire.GetString(get.Result, "statusMessage"); msg != why || wire.Get(get.Result, "ttlMs") == nil || wire.Get(get.Result, "ttl") != nil {
		t.Errorf("tasks/get = %s", get.Result)
	}
	if ack := modern(t, g, "alice", withTasksExt, "tasks/cancel", `{"taskId":"`+id+`"}`); !strings.HasPrefix(string(ack.Result), `{"resultType":"complete"`) {
		t.Errorf("tasks/cancel of a lost task = %s %s, want the ack", ack.Result, ack.Error)
	}
	if n := len(ts.requests()); n != 1 {
		t.Errorf("the restarted server was asked about the lost task: %v", ts.requests())
	}
}
