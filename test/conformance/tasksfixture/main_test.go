package main

import (
	"encoding/json"
	"testing"
	"time"
)

const ext = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

func call(t *testing.T, s *server, method, params string) (map[string]any, *rpcError) {
	t.Helper()
	res, rerr := s.handle(request{ID: json.RawMessage(`1`), Method: method, Params: json.RawMessage(params)})
	if rerr != nil {
		return nil, rerr
	}
	b, _ := json.Marshal(res)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m, nil
}

// until polls tasks/get until the task's status is want (the fixture's
// own goroutine moves it; the bound is for a broken fixture).
func until(t *testing.T, s *server, id, want string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		got, rerr := call(t, s, "tasks/get", `{"taskId":"`+id+`",`+ext+`}`)
		if rerr != nil {
			t.Fatalf("tasks/get: %+v", rerr)
		}
		if got["status"] == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTasksFixture(t *testing.T) {
	s := &server{tasks: map[string]*task{}}
	if _, rerr := call(t, s, "tools/call", `{"name":"failing_job","arguments":{}}`); rerr == nil || rerr.Code != codeMissing {
		t.Errorf("a required-task tool without the extension: %+v, want -32021", rerr)
	}
	if _, rerr := call(t, s, "tasks/get", `{"taskId":"x"}`); rerr == nil || rerr.Code != codeMissing {
		t.Errorf("tasks/get without the extension: %+v, want -32021", rerr)
	}
	created, _ := call(t, s, "tools/call", `{"name":"confirm_delete","arguments":{"filename":"f"},`+ext+`}`)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" || created["ttlMs"] == nil {
		t.Fatalf("CreateTaskResult = %v", created)
	}
	asked := until(t, s, id, "input_required")
	if _, ok := asked["inputRequests"].(map[string]any)["confirm"]; !ok {
		t.Fatalf("input_required task = %v", asked)
	}
	if ack, _ := call(t, s, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},`+ext+`}`); ack["resultType"] != "complete" || len(ack) != 1 {
		t.Errorf("tasks/update = %v, want the empty ack", ack)
	}
	done := until(t, s, id, "completed")
	if b, _ := json.Marshal(done["result"]); string(b) != `{"content":[{"text":"deleted f","type":"text"}],"resultType":"complete"}` {
		t.Errorf("completed task = %v", done)
	}
	if ack, _ := call(t, s, "tasks/cancel", `{"taskId":"`+id+`",`+ext+`}`); ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel of a finished task = %v", ack)
	}
	if got := until(t, s, id, "completed"); got["status"] != "completed" {
		t.Errorf("a finished task changed on cancel: %v", got)
	}
}
