package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// taskServer is a server running task-augmented tools/call as tasks "s-1",
// "s-2", ...: tasks/get tells the status set in status, tasks/result its
// result.
type taskServer struct {
	*scripted
	mu     sync.Mutex
	n      int
	status map[string]string
}

func newTaskServer(name, ttl string) *taskServer {
	ts := &taskServer{status: map[string]string{}}
	ts.scripted = &scripted{fakeUpstream: fakeUpstream{name: name, tools: []string{tool("research")}},
		caps: `{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`}
	ts.handle = func(_ context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		id, _ := wire.GetString(params, "taskId")
		switch method {
		case "tools/call":
			if wire.Get(params, "task") == nil {
				return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
			}
			ts.n++
			id = fmt.Sprintf("s-%d", ts.n)
			ts.status[id] = "working"
			return &wire.Response{Result: json.RawMessage(`{"task":{"taskId":"` + id + `","status":"working","ttl":` + ttl + `,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z"}}`)}, nil
		case "tasks/get", "tasks/cancel":
			st, ok := ts.status[id]
			if !ok {
				return &wire.Response{Error: json.RawMessage(`{"code":-32602,"message":"Task not found: ` + id + `"}`)}, nil
			}
			if method == "tasks/cancel" {
				st = "cancelled"
				ts.status[id] = st
			}
			return &wire.Response{Result: json.RawMessage(`{"taskId":"` + id + `","status":"` + st + `","ttl":` + ttl + `,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:01Z"}`)}, nil
		case "tasks/result":
			return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"done ` + id + `"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}`)}, nil
		}
		return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
	}
	return ts
}

func (ts *taskServer) set(id, status string) {
	ts.mu.Lock()
	ts.status[id] = status
	ts.mu.Unlock()
}

func handle(t *testing.T, s *Session, method, params string) Reply {
	t.Helper()
	return s.Handle(context.Background(), msg("7", method, params), &recorder{})
}

// startTask calls the research tool as a task and returns the gateway's id.
func startTask(t *testing.T, s *Session) string {
	t.Helper()
	r := handle(t, s, "tools/call", `{"name":"research","task":{"ttl":999999999}}`)
	id, _ := wire.GetString(wire.Get(r.Result, "task"), "taskId")
	if r.Error != nil || !strings.HasPrefix(id, "gw-task-") {
		t.Fatalf("task-augmented tools/call = %s %s; want a task of the gateway's id", r.Result, r.Error)
	}
	return id
}

func TestTaskCapabilityMerged(t *testing.T) {
	tests := []struct {
		name string
		caps []string
		want string
	}{
		{"no server offers tasks", []string{`{"tools":{}}`}, ``},
		{"list only", []string{`{"tools":{},"tasks":{"list":{}}}`}, `{"list":{}}`},
		{"merged across servers", []string{`{"tasks":{"cancel":{}}}`, `{"tasks":{"requests":{"tools":{"call":{}},"other":{}}}}`}, `{"cancel":{},"requests":{"tools":{"call":{}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ups []Upstream
			for i, c := range tt.caps {
				ups = append(ups, &scripted{fakeUpstream: fakeUpstream{name: fmt.Sprint("s", i)}, caps: c})
			}
			g := gatewayWith(t, RouterOptions{}, ups...)
			_, res, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
			if werr != nil {
				t.Fatal(werr)
			}
			if got := string(wire.Get(wire.Get(res, "capabilities"), "tasks")); got != tt.want {
				t.Errorf("capabilities.tasks = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTaskIDsAreTheGatewaysAndBoundToTheirClient(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	g.Tasks.MaxTTL = time.Minute
	alice, bob := newSession(t, g), newSession(t, g)
	id := startTask(t, alice)
	if got := ts.requests()[0]; !strings.Contains(got, `"ttl":60000`) {
		t.Errorf("the server got %s; want the requested ttl cut to the ceiling", got)
	}

	get := handle(t, alice, "tasks/get", `{"taskId":"`+id+`"}`)
	if want := `{"taskId":"` + id + `","status":"working","ttl":60000,`; !strings.HasPrefix(string(get.Result), want) {
		t.Errorf("tasks/get = %s %s, want it to start %s", get.Result, get.Error, want)
	}
	if last := ts.requests()[len(ts.requests())-1]; last != `tasks/get {"taskId":"s-1"}` {
		t.Errorf("the server got %q; want its own id", last)
	}
	res := handle(t, alice, "tasks/result", `{"taskId":"`+id+`"}`)
	if want := `{"content":[{"type":"text","text":"done s-1"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}`; string(res.Result) != want {
		t.Errorf("tasks/result = %s, want %s", res.Result, want)
	}

	// Bob: Alice's id is an unknown id; he lists nothing.
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs := handle(t, bob, method, `{"taskId":"`+id+`"}`)
		unknown := handle(t, bob, method, `{"taskId":"nope"}`)
		if want := strings.Replace(string(unknown.Error), "nope", id, 1); string(theirs.Error) != want {
			t.Errorf("%s of another client's task = %s %s, want %s", method, theirs.Result, theirs.Error, want)
		}
	}
	if got := string(handle(t, bob, "tasks/list", `{}`).Result); got != `{"tasks":[]}` {
		t.Errorf("bob's tasks/list = %s", got)
	}
	if got := string(handle(t, alice, "tasks/list", `{}`).Result); !strings.Contains(got, id) {
		t.Errorf("alice's tasks/list = %s, want her task", got)
	}

	// The server's id in its own error becomes the gateway's.
	ts.mu.Lock()
	delete(ts.status, "s-1")
	ts.mu.Unlock()
	if got := string(handle(t, alice, "tasks/get", `{"taskId":"`+id+`"}`).Error); !strings.Contains(got, id) || strings.Contains(got, "s-1") {
		t.Errorf("a server error about the task = %s; want the gateway's id in it", got)
	}
}

func TestTaskStatusReachesOnlyItsCreator(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice, bob := newSession(t, g), newSession(t, g)
	id := startTask(t, alice)
	g.serverNotification(g.Router.server("a"), "notifications/tasks/status", json.RawMessage(`{"taskId":"s-1","status":"completed","ttl":600000}`))
	g.serverNotification(g.Router.server("a"), "notifications/tasks/status", json.RawMessage(`{"taskId":"s-99","status":"completed"}`))
	select {
	case m := <-alice.Outbox():
		if want := `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"` + id + `","status":"completed","ttl":600000}}`; string(m) != want {
			t.Errorf("alice got %s, want %s", m, want)
		}
	default:
		t.Error("alice got no status notification")
	}
	select {
	case m := <-bob.Outbox():
		t.Errorf("bob got %s", m)
	case m := <-alice.Outbox():
		t.Errorf("alice got a notification of a task she does not hold: %s", m)
	default:
	}
}

func TestTasksPerClientAreBounded(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	g.Tasks.MaxPerClient = 2
	alice, bob := newSession(t, g), newSession(t, g)
	first, second := startTask(t, alice), startTask(t, alice)
	r := handle(t, alice, "tools/call", `{"name":"research","task":{}}`)
	if !strings.Contains(string(r.Error), "too many tasks: this client holds 2 unfinished tasks") {
		t.Fatalf("a third task at the limit = %s %s", r.Result, r.Error)
	}
	startTask(t, bob) // another client's limit is its own

	// Once one is finished, the oldest finished one makes room.
	ts.set("s-2", "completed")
	handle(t, alice, "tasks/get", `{"taskId":"`+second+`"}`)
	startTask(t, alice)
	if got := string(handle(t, alice, "tasks/get", `{"taskId":"`+second+`"}`).Error); !strings.Contains(got, "Task not found") {
		t.Errorf("the finished task forgotten at the limit: tasks/get = %s", got)
	}
	if got := handle(t, alice, "tasks/get", `{"taskId":"`+first+`"}`); got.Error != nil {
		t.Errorf("the running task was forgotten: %s", got.Error)
	}
	// A call that makes no task holds no place.
	if r := handle(t, bob, "tools/call", `{"name":"research"}`); r.Error != nil {
		t.Fatal(string(r.Error))
	}
}

func TestTaskOfARestartedServerFails(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice := newSession(t, g)
	id := startTask(t, alice)
	ts.gen.Add(1) // the process restarted
	get := handle(t, alice, "tasks/get", `{"taskId":"`+id+`"}`)
	if st, _ := wire.GetString(get.Result, "status"); st != "failed" {
		t.Errorf("tasks/get = %s %s, want failed", get.Result, get.Error)
	}
	if msg, _ := wire.GetString(get.Result, "statusMessage"); msg != `mcp server "a" restarted since the task was created; the task is lost` {
		t.Errorf("statusMessage = %q", msg)
	}
	if got := string(handle(t, alice, "tasks/result", `{"taskId":"`+id+`"}`).Error); !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "restarted") {
		t.Errorf("tasks/result = %s", got)
	}
	if list := string(handle(t, alice, "tasks/list", `{}`).Result); !strings.Contains(list, `"status":"failed"`) {
		t.Errorf("tasks/list = %s", list)
	}
	if n := len(ts.requests()); n != 1 {
		t.Errorf("the restarted server was asked about the lost task: %v", ts.requests())
	}
}

func TestTasksEndWithTheirSession(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice := newSession(t, g)
	startTask(t, alice)
	alice.Close()
	g.tasks.mu.Lock()
	defer g.tasks.mu.Unlock()
	if len(g.tasks.byID) != 0 || len(g.tasks.owned) != 0 {
		t.Errorf("a closed session's tasks are kept: %v", g.tasks.byID)
	}
}

// A server's polls of a task it had a client create reach that client under
// its own id; another server's polls of the same id find nothing.
func TestServerPollsOfAClientTask(t *testing.T) {
	a := &scripted{fakeUpstream: fakeUpstream{name: "a"}}
	b := &scripted{fakeUpstream: fakeUpstream{name: "b"}}
	g := gatewayWith(t, RouterOptions{}, a, b)
	alice := sessionWith(t, g, `{"sampling":{},"tasks":{"requests":{"sampling":{"createMessage":{}}}}}`)
	plain := sessionWith(t, g, `{"sampling":{}}`)
	answers := make(chan string, 4)
	answer := func(s *Session, result string) {
		go func() {
			for m := range s.Outbox() {
				answers <- string(m)
				id := wire.Get(m, "id")
				s.HandleResponse(&wire.Message{ID: id, Result: json.RawMessage(result)})
				return
			}
		}()
	}
	answer(alice, `{"task":{"taskId":"c-1","status":"working"}}`)
	res, werr := g.askClient(context.Background(), alice, g.Router.server("a"), nil, "sampling/createMessage", json.RawMessage(`{"messages":[],"task":{"ttl":1000}}`))
	id, _ := wire.GetString(wire.Get(res, "task"), "taskId")
	if werr != nil || !strings.HasPrefix(id, "gw-task-") {
		t.Fatalf("the server got %s %v; want a task of the gateway's id", res, werr)
	}
	if sent := <-answers; !strings.Contains(sent, `"task":{"ttl":1000}`) {
		t.Errorf("the client got %s; want the task", sent)
	}
	if _, werr, _ := g.serverTaskRequest(context.Background(), g.Router.server("b"), "tasks/get", json.RawMessage(`{"taskId":"`+id+`"}`)); werr == nil || werr.Message != "Task not found: "+id {
		t.Errorf("another server's poll = %v; want not found", werr)
	}
	answer(alice, `{"taskId":"c-1","status":"completed"}`)
	got, werr, _ := g.serverTaskRequest(context.Background(), g.Router.server("a"), "tasks/get", json.RawMessage(`{"taskId":"`+id+`"}`))
	if sent := <-answers; !strings.Contains(sent, `"params":{"taskId":"c-1"}`) {
		t.Errorf("the client was polled with %s; want its own id", sent)
	}
	if werr != nil || string(got) != `{"taskId":"`+id+`","status":"completed"}` {
		t.Errorf("the server's poll = %s %v", got, werr)
	}

	// A client that cannot run it as a task gets the request without it.
	answer(plain, `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`)
	if _, werr := g.askClient(context.Background(), plain, g.Router.server("a"), nil, "sampling/createMessage", json.RawMessage(`{"messages":[],"task":{"ttl":1000}}`)); werr != nil {
		t.Fatal(werr)
	}
	if sent := <-answers; strings.Contains(sent, `"task"`) {
		t.Errorf("a client without tasks.requests.sampling got %s", sent)
	}
}

// The progress token of a task-augmented call stays valid for the task:
// the server's progress after the call ended reaches the client's stream
// under the client's token, until the task is forgotten.
func TestTaskProgressOutlivesItsCall(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice := newSession(t, g)
	r := handle(t, alice, "tools/call", `{"name":"research","task":{},"_meta":{"progressToken":"p-1"}}`)
	if r.Error != nil {
		t.Fatal(string(r.Error))
	}
	tok, _ := wire.GetString(wire.Get(json.RawMessage(strings.TrimPrefix(ts.requests()[0], "tools/call ")), "_meta"), "progressToken")
	if !strings.HasPrefix(tok, "gw-progress-") {
		t.Fatalf("the server got the progress token %q", tok)
	}
	g.serverNotification(g.Router.server("a"), "notifications/progress", json.RawMessage(`{"progressToken":"`+tok+`","progress":1}`))
	select {
	case m := <-alice.Outbox():
		if want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1}}`; string(m) != want {
			t.Errorf("alice got %s, want %s", m, want)
		}
	default:
		t.Fatal("the task's progress was dropped once its call had ended")
	}
	alice.Close()
	if _, ok := g.progress.Load(tok); ok {
		t.Error("the progress token of a forgotten task is still mapped")
	}
}

// In host mode a task belongs to the sandbox: another session of it may
// poll it.
func TestTasksPerGateway(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	g.Tasks.PerGateway = true
	alice, bob := newSession(t, g), newSession(t, g)
	id := startTask(t, alice)
	alice.Close()
	if got := handle(t, bob, "tasks/get", `{"taskId":"`+id+`"}`); got.Error != nil {
		t.Errorf("another session of the sandbox: tasks/get = %s", got.Error)
	}
	if got := string(handle(t, bob, "tasks/list", `{}`).Result); !strings.Contains(got, id) {
		t.Errorf("another session of the sandbox: tasks/list = %s", got)
	}
}

// A request about a task that finds its server's process gone starts a new
// one, which does not know the task: the task has failed.
func TestTaskOfAServerRestartedByThePoll(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice := newSession(t, g)
	id := startTask(t, alice)
	inner := ts.handle
	ts.handle = func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
		ts.gen.Add(1) // the call restarted the process
		return &wire.Response{Error: json.RawMessage(`{"code":-32602,"message":"Task not found: s-1"}`)}, nil
	}
	defer func() { ts.handle = inner }()
	get := handle(t, alice, "tasks/get", `{"taskId":"`+id+`"}`)
	if st, _ := wire.GetString(get.Result, "status"); st != "failed" {
		t.Errorf("tasks/get = %s %s, want failed", get.Result, get.Error)
	}
}

// A server's request related to a task goes to the task's client, under the
// gateway's id, even while another client's call is in flight on the server.
func TestRequestOfATaskGoesToItsClient(t *testing.T) {
	ts := newTaskServer("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	alice := sessionWith(t, g, `{"elicitation":{}}`)
	bob := sessionWith(t, g, `{"elicitation":{}}`)
	id := startTask(t, alice)
	srv := g.Router.server("a")
	bobsCall := &call{sess: bob, server: srv, id: "9", stream: noStream{}, cancel: func() {}}
	bob.track(bobsCall)
	defer bob.untrack(bobsCall)
	got := make(chan string, 1)
	go func() {
		m := <-alice.Outbox()
		got <- string(m)
		alice.HandleResponse(&wire.Message{ID: wire.Get(m, "id"), Result: json.RawMessage(`{"action":"accept","content":{}}`)})
	}()
	params := json.RawMessage(`{"message":"which?","requestedSchema":{"type":"object"},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"s-1"}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a bound if it went to bob, who never answers
	defer cancel()
	if _, werr := g.serverRequest(ctx, srv, "elicitation/create", params); werr != nil {
		t.Fatal(werr)
	}
	if m := <-got; !strings.Contains(m, `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) {
		t.Errorf("alice got %s; want it related to her task %s", m, id)
	}
	select {
	case m := <-bob.Outbox():
		t.Errorf("bob got %s", m)
	default:
	}
}
