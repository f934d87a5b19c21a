// Command tasksfixture is a small MCP server of the 2026-07-28 era with the
// io.modelcontextprotocol/tasks extension (SEP-2663), written for the
// conformance suite's tasks-* scenarios, which the Go SDK's fixture cannot
// pass (it has no tasks). It serves the tools those scenarios call:
//
//	greet               sync only: "Hello, {name}!"
//	slow_compute        task optional: sleeps seconds, then a result (at
//	                    once, without a task, for seconds 0); cancellable
//	failing_job         task required: a tool error after a moment
//	protocol_error_job  task required: a protocol error (failed)
//	confirm_delete      task: asks one elicitation (inputRequests), then
//	                    completes with the answer
//	multi_input         task: asks two elicitations at once
//	test_tool_with_task task required: an input-required round (MRTR)
//	                    asking user_name, then a task greeting that name
//
// With -http ADDR it serves streamable HTTP at /mcp (one JSON answer per
// POST, headers checked as SEP-2243 and SEP-2663 ask); without, it speaks
// line-delimited JSON-RPC on stdin and stdout, where it refuses initialize
// (it speaks 2026-07-28 only) so a client asks server/discover.
//
// Tasks live in memory for the life of the process.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"
)

const (
	version       = "2026-07-28"
	tasksExt      = "io.modelcontextprotocol/tasks"
	metaCaps      = "io.modelcontextprotocol/clientCapabilities"
	ttlMs         = 60000
	pollMs        = 100
	codeMismatch  = -32020
	codeMissing   = -32021
	codeNoMethod  = -32601
	codeBadParams = -32602
	codeInternal  = -32603
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	s := &server{tasks: map[string]*task{}}
	if *addr != "" {
		http.HandleFunc("/mcp", s.serveHTTP)
		log.Fatal(http.ListenAndServe(*addr, nil))
	}
	s.serveStdio(os.Stdin, os.Stdout)
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func errorf(code int, format string, a ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, a...)}
}

type server struct {
	mu    sync.Mutex
	n     int
	tasks map[string]*task
}

// task is one task: its status, and what it asks or ended with.
type task struct {
	id, status, message string
	created, updated    time.Time
	result              map[string]any
	err                 *rpcError
	asks                map[string]any            // pending inputRequests by key
	answers             chan map[string]any       // what tasks/update delivers
	cancel              chan struct{}             // closed by tasks/cancel
	got                 map[string]map[string]any // answers received, by key
}

func (s *server) serveStdio(in io.Reader, out io.Writer) {
	var wmu sync.Mutex
	enc := json.NewEncoder(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var req request
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil || req.Method == "" {
			continue // notifications and responses: nothing to do
		}
		if req.Method == "subscriptions/listen" {
			continue // no notifications: the stream stays open, silent
		}
		go func() {
			res, rerr := s.handle(req)
			wmu.Lock()
			defer wmu.Unlock()
			_ = enc.Encode(reply(req.ID, res, rerr))
		}()
	}
}

func reply(id json.RawMessage, res any, rerr *rpcError) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		m["error"] = rerr
	} else {
		m["result"] = res
	}
	return m
}

func (s *server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, reply(nil, nil, errorf(-32700, "parse error: %v", err)))
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if rerr := checkHeaders(r, req); rerr != nil {
		writeJSON(w, http.StatusBadRequest, reply(req.ID, nil, rerr))
		return
	}
	res, rerr := s.handle(req)
	status := http.StatusOK
	if rerr != nil && rerr.Code == codeMissing {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, reply(req.ID, res, rerr))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// checkHeaders checks Mcp-Method against the body, and Mcp-Name against
// the tool's name or the task's id.
func checkHeaders(r *http.Request, req request) *rpcError {
	if m := r.Header.Get("Mcp-Method"); m != "" && m != req.Method {
		return errorf(codeMismatch, "Header mismatch: Mcp-Method %q does not match body method %q", m, req.Method)
	}
	var p struct{ Name, TaskID string }
	_ = json.Unmarshal(req.Params, &p)
	want := ""
	switch req.Method {
	case "tools/call":
		want = p.Name
	case "tasks/get", "tasks/update", "tasks/cancel":
		want = p.TaskID
	default:
		return nil
	}
	if n := r.Header.Get("Mcp-Name"); n != "" && n != want {
		return errorf(codeMismatch, "Header mismatch: Mcp-Name %q does not match body value %q", n, want)
	}
	return nil
}

var tools = []map[string]any{
	tool("greet", "Greets by name.", "", map[string]any{"name": map[string]any{"type": "string"}}),
	tool("slow_compute", "Sleeps seconds, then answers; a task when the client has the tasks extension.", "optional",
		map[string]any{"seconds": map[string]any{"type": "number"}, "label": map[string]any{"type": "string"}}),
	tool("failing_job", "A task that ends with a tool error.", "required", nil),
	tool("protocol_error_job", "A task that ends with a protocol error.", "required", nil),
	tool("confirm_delete", "A task that asks for confirmation first.", "optional", map[string]any{"filename": map[string]any{"type": "string"}}),
	tool("multi_input", "A task that asks two questions at once.", "optional", nil),
	tool("test_tool_with_task", "Asks user_name (input required), then runs a task greeting it.", "required", nil),
}

func tool(name, desc, support string, props map[string]any) map[string]any {
	schema := map[string]any{"type": "object"}
	if props != nil {
		schema["properties"] = props
	}
	t := map[string]any{"name": name, "description": desc, "inputSchema": schema}
	if support != "" {
		t["execution"] = map[string]any{"taskSupport": support}
	}
	return t
}

func supportOf(name string) (string, bool) {
	for _, t := range tools {
		if t["name"] == name {
			e, _ := t["execution"].(map[string]any)
			s, _ := e["taskSupport"].(string)
			return s, true
		}
	}
	return "", false
}

// declares reports whether the request's client declared the extension.
func declares(params json.RawMessage) bool {
	var p struct {
		Meta map[string]struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	_, ok := p.Meta[metaCaps].Extensions[tasksExt]
	return ok
}

func missing(why string) *rpcError {
	e := errorf(codeMissing, "Missing required client capability: %s needs the %s extension", why, tasksExt)
	e.Data = map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExt: map[string]any{}}}}
	return e
}

func text(s string, isError bool) map[string]any {
	r := map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	if isError {
		r["isError"] = true
	}
	return r
}

func complete(m map[string]any) map[string]any {
	m["resultType"] = "complete"
	return m
}

func (s *server) handle(req request) (any, *rpcError) {
	switch req.Method {
	case "initialize":
		return nil, errorf(codeBadParams, "unsupported protocol version: this server speaks %s only (ask server/discover)", version)
	case "server/discover":
		return map[string]any{
			"resultType":        "complete",
			"supportedVersions": []string{version},
			"ttlMs":             60000,
			"cacheScope":        "public",
			"capabilities":      map[string]any{"tools": map[string]any{}, "extensions": map[string]any{tasksExt: map[string]any{}}},
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "tasksfixture", "version": "1"}},
		}, nil
	case "ping":
		return complete(map[string]any{}), nil
	case "tools/list":
		return complete(map[string]any{"tools": tools}), nil
	case "tools/call":
		return s.call(req.Params)
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !declares(req.Params) {
			return nil, missing(req.Method)
		}
		var p struct {
			TaskID         string                    `json:"taskId"`
			InputResponses map[string]map[string]any `json:"inputResponses"`
		}
		_ = json.Unmarshal(req.Params, &p)
		s.mu.Lock()
		t := s.tasks[p.TaskID]
		s.mu.Unlock()
		if t == nil {
			return nil, errorf(codeBadParams, "Task not found: %s", p.TaskID)
		}
		switch req.Method {
		case "tasks/get":
			return s.detailed(t), nil
		case "tasks/update":
			s.update(t, p.InputResponses)
		default:
			s.cancelTask(t)
		}
		return complete(map[string]any{}), nil
	}
	return nil, errorf(codeNoMethod, "Method not found: %s", req.Method)
}

func (s *server) call(raw json.RawMessage) (any, *rpcError) {
	var p struct {
		Name           string                    `json:"name"`
		Arguments      map[string]any            `json:"arguments"`
		InputResponses map[string]map[string]any `json:"inputResponses"`
		RequestState   string                    `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, errorf(codeBadParams, "tools/call params: %v", err)
	}
	support, ok := supportOf(p.Name)
	if !ok {
		return nil, errorf(codeBadParams, "Unknown tool: %s", p.Name)
	}
	withTasks := declares(raw)
	if support == "required" && !withTasks {
		return nil, missing("tool " + p.Name + " runs only as a task, which")
	}
	switch p.Name {
	case "greet":
		name, _ := p.Arguments["name"].(string)
		return complete(text("Hello, "+name+"!", false)), nil
	case "slow_compute":
		secs, _ := p.Arguments["seconds"].(float64)
		label, _ := p.Arguments["label"].(string)
		d := time.Duration(secs * float64(time.Second))
		if !withTasks || secs <= 0 {
			time.Sleep(d)
			return complete(text("computed "+label, false)), nil
		}
		return s.start(func(t *task) (map[string]any, *rpcError) {
			select {
			case <-time.After(d):
				return text("computed "+label, false), nil
			case <-t.cancel:
				return nil, nil
			}
		}), nil
	case "failing_job":
		return s.start(func(t *task) (map[string]any, *rpcError) {
			time.Sleep(200 * time.Millisecond)
			return text("the job failed", true), nil
		}), nil
	case "protocol_error_job":
		return s.start(func(t *task) (map[string]any, *rpcError) {
			time.Sleep(100 * time.Millisecond)
			return nil, errorf(codeInternal, "internal error: the job crashed")
		}), nil
	case "confirm_delete":
		if !withTasks {
			return complete(text("not deleted: confirming needs the tasks extension", true)), nil
		}
		file, _ := p.Arguments["filename"].(string)
		return s.start(func(t *task) (map[string]any, *rpcError) {
			got, ok := s.ask(t, map[string]any{"confirm": elicit("Delete " + file + "?")})
			if !ok {
				return nil, nil
			}
			if got["confirm"]["action"] == "accept" {
				return text("deleted "+file, false), nil
			}
			return text("kept "+file, false), nil
		}), nil
	case "multi_input":
		if !withTasks {
			return complete(text("multi_input needs the tasks extension", true)), nil
		}
		return s.start(func(t *task) (map[string]any, *rpcError) {
			got, ok := s.ask(t, map[string]any{"first": elicit("First answer?"), "second": elicit("Second answer?")})
			if !ok {
				return nil, nil
			}
			return text(fmt.Sprintf("answers: %v, %v", got["first"]["content"], got["second"]["content"]), false), nil
		}), nil
	case "test_tool_with_task":
		answer, ok := p.InputResponses["user_name"]
		if !ok {
			return map[string]any{
				"resultType":    "input_required",
				"inputRequests": map[string]any{"user_name": elicit("What is your name?")},
				"requestState":  "awaiting-user_name",
			}, nil
		}
		content, _ := answer["content"].(map[string]any)
		name, _ := content["name"].(string)
		return s.start(func(t *task) (map[string]any, *rpcError) {
			time.Sleep(100 * time.Millisecond)
			return text("Hello, "+name+"!", false), nil
		}), nil
	}
	return nil, errorf(codeBadParams, "Unknown tool: %s", p.Name)
}

func elicit(message string) map[string]any {
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message,
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "confirm": map[string]any{"type": "boolean"}}},
	}}
}

// start makes a task running run, and answers its CreateTaskResult. run's
// nil result and nil error mean it was cancelled.
func (s *server) start(run func(*task) (map[string]any, *rpcError)) map[string]any {
	now := time.Now().UTC()
	s.mu.Lock()
	s.n++
	t := &task{id: fmt.Sprintf("fixture-task-%d-%d", s.n, now.UnixNano()), status: "working", created: now, updated: now,
		answers: make(chan map[string]any, 8), cancel: make(chan struct{}), got: map[string]map[string]any{}}
	s.tasks[t.id] = t
	created := s.envelope(t)
	s.mu.Unlock()
	created["resultType"] = "task"
	go func() {
		res, rerr := run(t)
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.status == "cancelled" {
			return
		}
		t.updated, t.asks = time.Now().UTC(), nil
		switch {
		case rerr != nil:
			t.status, t.err = "failed", rerr
		case res != nil:
			t.status, t.result = "completed", complete(res) // the inlined result is a complete one
		default:
			t.status = "cancelled"
		}
	}()
	return created
}

// ask parks the task in input_required with asks until every key is
// answered; false when it was cancelled meanwhile.
func (s *server) ask(t *task, asks map[string]any) (map[string]map[string]any, bool) {
	s.mu.Lock()
	t.status, t.asks, t.updated = "input_required", asks, time.Now().UTC()
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if len(t.asks) == 0 {
			t.status, t.updated = "working", time.Now().UTC()
			got := t.got
			s.mu.Unlock()
			return got, true
		}
		s.mu.Unlock()
		select {
		case <-t.answers:
		case <-t.cancel:
			return nil, false
		}
	}
}

func (s *server) update(t *task, responses map[string]map[string]any) {
	s.mu.Lock()
	for key, r := range responses {
		if _, pending := t.asks[key]; pending {
			delete(t.asks, key)
			t.got[key] = r
		}
	}
	s.mu.Unlock()
	select {
	case t.answers <- nil:
	default:
	}
}

func (s *server) cancelTask(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.status == "completed" || t.status == "failed" || t.status == "cancelled" {
		return // idempotent: a finished task stays as it ended
	}
	t.status, t.updated, t.asks = "cancelled", time.Now().UTC(), nil
	close(t.cancel)
}

// envelope is the task's base fields (under s.mu).
func (s *server) envelope(t *task) map[string]any {
	m := map[string]any{
		"taskId": t.id, "status": t.status,
		"createdAt": t.created.Format(time.RFC3339Nano), "lastUpdatedAt": t.updated.Format(time.RFC3339Nano),
		"ttlMs": ttlMs, "pollIntervalMs": pollMs,
	}
	if t.message != "" {
		m["statusMessage"] = t.message
	}
	return m
}

// detailed is tasks/get's answer: the task with what its status inlines.
func (s *server) detailed(t *task) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.envelope(t)
	switch t.status {
	case "completed":
		m["result"] = t.result
	case "failed":
		m["error"] = t.err
	case "input_required":
		asks := map[string]any{}
		for k, v := range t.asks {
			asks[k] = v
		}
		m["inputRequests"] = asks
	}
	return complete(m)
}
