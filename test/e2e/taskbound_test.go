package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTasksBoundedInAll: serve mode's --max-tasks bounds the tasks of all
// clients together. 2026-07-28 tasks are owned by the client's clientInfo
// name, so an attacker inventing names holds tasks under many owners; past
// the bound its next task is refused with a JSON-RPC error naming the limit
// and the flag, counted in /metrics, while a victim at its own
// --max-tasks-per-client keeps creating (its oldest finished task makes
// room), polling and completing tasks on the real everything server.
func TestTasksBoundedInAll(t *testing.T) {
	g := startServe(t, fmt.Sprintf(`{"everything": {"runCmd": %q}}`, npmBin+"/mcp-server-everything"),
		"--max-tasks-per-client", "2", "--max-tasks", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g.gw, "simulate-research-query")
	create := func(client, topic string) (int, map[string]any) {
		return postModernFromAs(ctx, t, g.gw, client, tasksExt, "tools/call", "simulate-research-query", 2,
			map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": topic}})
	}
	created := func(client, topic string) string {
		t.Helper()
		status, out := create(client, topic)
		id, _ := resultOf(t, client+"'s tools/call", status, out)["taskId"].(string)
		if !strings.HasPrefix(id, "gw-task-") {
			t.Fatalf("%s's tools/call = %v, want a task", client, out)
		}
		return id
	}
	completes := func(client, id string) {
		t.Helper()
		if done, seen := pollModern(ctx, t, g.gw, client, id); done["status"] != "completed" {
			t.Fatalf("%s's task %s went %v, ending %v; want completed", client, id, seen, done)
		}
	}
	const want = "too many tasks: the gateway holds 4 tasks of all its clients, its limit (--max-tasks), and none is a finished one of this client's to make room for another; try again when tasks have finished, or cancel one of this client's (tasks/cancel)"
	refused := func(client string) {
		t.Helper()
		status, out := create(client, "flood")
		if code, msg := errorOf(out); code != -32600 || msg != want {
			t.Errorf("%s's task past --max-tasks: HTTP %d %v; want error -32600 %q", client, status, out, want)
		}
	}

	v1, v2 := created("victim", "one"), created("victim", "two")
	completes("victim", v1)
	completes("victim", v2)
	for i := range 2 {
		created(fmt.Sprintf("attacker-%d", i), "flood")
	}
	refused("attacker-2")

	// The victim at its own limit: its next task takes the place of its
	// oldest finished one, and runs to its end.
	v3 := created("victim", "three")
	completes("victim", v3)
	if got := modernOK(ctx, t, g.gw, "victim", tasksExt, "tasks/get", v2, nil); got["status"] != "completed" {
		t.Errorf("the victim's kept task: %v", got)
	}
	refused("attacker-3")

	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port), g.token)
	for series, want := range map[string]string{
		`mcp_gateway_tasks`: "4",
		`mcp_gateway_limit_refusals_total{limit="max-tasks"}`:            "2",
		`mcp_gateway_limit_refusals_total{limit="max-tasks-per-client"}`: "0",
	} {
		if v := metricLine(scraped, series); v != want {
			t.Errorf("%s = %q, want %s", series, v, want)
		}
	}
}
