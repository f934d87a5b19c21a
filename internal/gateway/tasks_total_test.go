package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The bound on the tasks of all clients together (--max-tasks): a
// 2026-07-28 client owns its tasks by its clientInfo name, so a client
// inventing names holds tasks under many owners. At the bound a new task of
// one of them is refused, naming the limit and its flag, while a victim at
// its own per-client limit goes on: its oldest finished task makes room for
// its next. A task whose ttl has passed, whoever's, frees its place.
func TestTasksBoundedInAll(t *testing.T) {
	ts := newTaskServer26("a", "600000")
	g := gatewayWith(t, RouterOptions{}, ts)
	g.Tasks.MaxPerClient, g.Tasks.MaxTotal = 2, 5
	create := func(client string) Reply {
		t.Helper()
		return modern(t, g, client, withTasksExt, "tools/call", `{"name":"research","arguments":{}}`)
	}
	taskID := func(r Reply) string {
		t.Helper()
		id, _ := wire.GetString(r.Result, "taskId")
		if r.Error != nil || id == "" {
			t.Fatalf("tools/call = %s %s, want a task", r.Result, r.Error)
		}
		return id
	}
	status := func(client, id string) string {
		t.Helper()
		r := modern(t, g, client, withTasksExt, "tasks/get", `{"taskId":"`+id+`"}`)
		st, _ := wire.GetString(r.Result, "status")
		if r.Error != nil {
			return string(r.Error)
		}
		return st
	}

	v1, v2 := taskID(create("victim")), taskID(create("victim"))
	ts.set("s-1", "completed")
	ts.set("s-2", "completed")
	if a, b := status("victim", v1), status("victim", v2); a != "completed" || b != "completed" {
		t.Fatalf("the victim's tasks are %s and %s, want completed", a, b)
	}
	for i := range 3 {
		taskID(create(fmt.Sprintf("mallory-%d", i)))
	}
	refused := create("mallory-3")
	want := "too many tasks: the gateway holds 5 tasks of all its clients, its limit (--max-tasks), and none is a finished one of this client's to make room for another; try again when tasks have finished, or cancel one of this client's (tasks/cancel)"
	if e := wire.DecodeError(refused.Error); refused.Error == nil || e.Code != wire.CodeInvalidRequest || e.Message != want {
		t.Fatalf("a sixth task at a bound of 5 = %s %s, want error %d %q", refused.Result, refused.Error, wire.CodeInvalidRequest, want)
	}
	if r := create("mallory-0"); !strings.Contains(string(r.Error), "(--max-tasks)") {
		t.Errorf("a known attacker's new task at the bound = %s %s, want refused", r.Result, r.Error)
	}

	// The victim at its own limit: its oldest finished task makes room.
	v3 := taskID(create("victim"))
	if got := status("victim", v3); got != "working" {
		t.Errorf("the victim's new task is %s, want working", got)
	}
	if got := status("victim", v2); got != "completed" {
		t.Errorf("the victim's kept task is %s, want completed", got)
	}
	st := g.QuotaStatus()
	if st.Tasks != 5 || st.Refused[LimitTasks] != 2 || st.Refused[LimitTasksPerClient] != 0 {
		t.Errorf("QuotaStatus: tasks %d, refused %v; want 5 tasks, 2 refused at %s", st.Tasks, st.Refused, LimitTasks)
	}

	// Expired tasks (the attacker's) free their places for anyone.
	g.tasks.mu.Lock()
	for _, tk := range g.tasks.byID {
		if tk.owner != (taskCreator{"victim"}) {
			tk.expires = time.Now().Add(-time.Second)
		}
	}
	g.tasks.mu.Unlock()
	taskID(create("mallory-3"))
	if st := g.QuotaStatus(); st.Tasks != 3 {
		t.Errorf("after the attacker's tasks expired and one was created: %d tasks held, want 3", st.Tasks)
	}

	// No bound: negative.
	g.Tasks.MaxTotal = -1
	for i := range 4 {
		taskID(create(fmt.Sprintf("many-%d", i)))
	}
}
