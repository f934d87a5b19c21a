package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Tasks of the 2026-07-28 era: the io.modelcontextprotocol/tasks extension
// (SEP-2663), through the gateway.
//
// A 2026-07-28 client that declares the extension (in the capabilities of
// its request's _meta) lets the server decide whether a tools/call becomes
// a task. The gateway keeps such a task in the same table as the session
// era's (tasks.go): an id of its own, unguessable, bound to its creator and
// to the server that runs it, within the same limits. A client's creator is
// its gateway in host mode (the sandbox), else the name its clientInfo
// declares: a 2026-07-28 client has no session, and the id, unguessable, is
// what proves it knows the task; another creator's tasks/get, tasks/update
// or tasks/cancel of the id is answered as for an unknown id.
//
// Behind the gateway the server may speak either generation:
//   - a 2026-07-28 server that declares the extension decides itself; its
//     flat CreateTaskResult and its tasks/get, tasks/update and
//     tasks/cancel pass with the ids rewritten;
//   - a session-era server with the 2025-11-25 tasks capability (a
//     dual-era stdio server is spoken to in the session era) gets the call
//     as a task-augmented one when its tool supports tasks ("optional" or
//     "required"); the gateway translates: the nested task becomes the flat
//     CreateTaskResult (ttl -> ttlMs, pollInterval -> pollIntervalMs),
//     tasks/get of a finished task inlines the result the gateway asks the
//     server for (tasks/result), a tool error as completed with isError,
//     and the requests such a server sends for a task waiting for input
//     (during a tasks/result the gateway runs for that) are the task's
//     inputRequests, answered by tasks/update.
//
// Session-era clients of a 2026-07-28 server are bridged the other way
// (see taskV1 below).
//
// A client that did not declare the extension gets -32021 for tasks/get,
// tasks/update and tasks/cancel, and for a tool that requires a task;
// tasks/result and tasks/list are not methods of 2026-07-28 (-32601).

// TasksExtension identifies the 2026-07-28 tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// taskCreator is the creator of a 2026-07-28 client's task outside host
// mode: the name its clientInfo declares (see clientKey).
type taskCreator struct{ client string }

// declaresTasks reports whether a 2026-07-28 client declared the tasks
// extension.
func (s *Session) declaresTasks() bool {
	v := wire.Get(wire.Get(s.capabilities, "extensions"), TasksExtension)
	return v != nil && string(v) != "null"
}

// missingTasksExtension is the -32021 answer to a client that did not
// declare the extension a request needs.
func missingTasksExtension(why string) *wire.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &wire.Error{Code: codeMissingRequiredClientCapabilities, Data: data,
		Message: "Missing required client capability: " + why + " needs the " + TasksExtension + " extension; declare it in _meta " + MetaClientCapabilities + ".extensions"}
}

// offersTasks1 reports whether a session-era server offers task-augmented
// tools/call (2025-11-25).
func offersTasks1(init json.RawMessage) bool {
	v := wire.Get(wire.Get(wire.Get(wire.Get(wire.Get(init, "capabilities"), "tasks"), "requests"), "tools"), "call")
	return v != nil && string(v) != "null"
}

// offersTasks2 reports whether a 2026-07-28 server declares the extension.
func offersTasks2(init json.RawMessage) bool {
	v := wire.Get(wire.Get(wire.Get(init, "capabilities"), "extensions"), TasksExtension)
	return v != nil && string(v) != "null"
}

// toolTaskSupport is the execution.taskSupport of the tool a tools/call of
// the client names, when srv serves it ("" for none or "forbidden").
func (g *Gateway) toolTaskSupport(srv *server, exposed string) string {
	v := g.Router.view(kindTools)
	if v == nil {
		return ""
	}
	it := v.byKey[exposed]
	if it == nil || it.server != srv {
		return ""
	}
	support, _ := wire.GetString(wire.Get(it.def, "execution"), "taskSupport")
	return support
}

// requestTask26 prepares a 2026-07-28 client's tools/call: a legacy task
// param is dropped (the server decides), a tool that requires a task is
// refused to a client without the extension, and a call that may become a
// task holds a place among its creator's tasks; to a session-era server it
// goes task-augmented.
func (g *Gateway) requestTask26(s *Session, srv *server, exposed string, params json.RawMessage) (*taskRequest, json.RawMessage, *wire.Error) {
	if wire.Get(params, "task") != nil {
		params, _ = wire.Delete(params, "task")
	}
	init := srv.up.InitializeResult()
	modern := isStateless(srv.up)
	if !modern && !offersTasks1(init) || modern && !offersTasks2(init) {
		return nil, params, nil
	}
	support := ""
	if !modern {
		support = g.toolTaskSupport(srv, exposed)
		if support != "optional" && support != "required" {
			return nil, params, nil
		}
	}
	if !s.declaresTasks() {
		if support == "required" {
			name, _ := wire.GetString(params, "name")
			return nil, nil, missingTasksExtension("tool " + strconv.Quote(name) + " runs only as a task, which")
		}
		return nil, params, nil
	}
	tr, werr := g.reserveTask(g.taskOwner(s))
	if werr != nil {
		return nil, nil, werr
	}
	if !modern {
		augment := json.RawMessage(`{"ttl":` + strconv.FormatInt(g.maxTaskTTL().Milliseconds(), 10) + `}`)
		if out, err := wire.Set(params, "task", augment); err == nil {
			params = out
		}
	}
	return tr, params, nil
}

// taskV2 is a 2025-11-25 Task object as the 2026-07-28 era writes it: ttl
// and pollInterval renamed, the related-task _meta dropped.
func taskV2(t json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return t
	}
	if v, ok := m["ttl"]; ok {
		m["ttlMs"] = v
		delete(m, "ttl")
	} else if _, ok := m["ttlMs"]; !ok {
		m["ttlMs"] = json.RawMessage(`null`)
	}
	if v, ok := m["pollInterval"]; ok {
		m["pollIntervalMs"] = v
		delete(m, "pollInterval")
	}
	delete(m, "_meta")
	b, err := json.Marshal(m)
	if err != nil {
		return t
	}
	return b
}

// dropRelatedTask removes the session era's related-task from a result's
// _meta (the 2026-07-28 task carries its id at its root).
func dropRelatedTask(msg json.RawMessage) json.RawMessage {
	meta := wire.Get(msg, "_meta")
	if wire.Get(meta, MetaRelatedTask) == nil {
		return msg
	}
	meta, _ = wire.Delete(meta, MetaRelatedTask)
	if string(meta) == "{}" {
		out, _ := wire.Delete(msg, "_meta")
		return out
	}
	if out, err := wire.Set(msg, "_meta", meta); err == nil {
		return out
	}
	return msg
}

// createdV2 is a CreateTaskResult for a 2026-07-28 client, from the
// server's as the gateway rewrote it (clientView): a session-era server's
// nested task flattened, a 2026-07-28 server's passed.
func createdV2(result json.RawMessage) json.RawMessage {
	inner := wire.Get(result, "task")
	if inner == nil {
		return result // a 2026-07-28 server's, flat already
	}
	flat := taskV2(inner)
	flat, _ = wire.Set(flat, "resultType", json.RawMessage(`"task"`))
	if meta := wire.Get(dropRelatedTask(result), "_meta"); meta != nil && string(meta) != "{}" {
		flat, _ = wire.Set(flat, "_meta", meta)
	}
	return flat
}

// stateV2 is what the gateway keeps of a 2026-07-28 server's task: the
// task without what it may inline (result, error, inputRequests).
func stateV2(t json.RawMessage) json.RawMessage {
	out, _ := wire.Delete(t, "result", "error", "inputRequests", "resultType", "_meta")
	return out
}

// handleTask26 answers a 2026-07-28 client's tasks/* request.
func (s *Session) handleTask26(ctx context.Context, m *wire.Message, stream Stream) Reply {
	switch m.Method {
	case "tasks/result", "tasks/list":
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s is not part of %s (the %s extension inlines a finished task's result in tasks/get and lists no tasks)", m.Method, StatelessVersion, TasksExtension))
	}
	if !s.declaresTasks() {
		return errorReply(missingTasksExtension(m.Method))
	}
	g := s.gw
	id, _ := wire.GetString(m.Params, "taskId")
	tk := g.tasks.lookup(g.taskOwner(s), id)
	if tk == nil {
		return taskNotFound(id)
	}
	if isStateless(tk.up) {
		return s.passTask26(ctx, m, stream, tk)
	}
	switch m.Method {
	case "tasks/get":
		return s.getBridged(ctx, m, stream, tk)
	case "tasks/cancel":
		if why := tk.lost(); why != "" {
			return ack()
		}
		params := taskIDParams(tk.upID)
		reply := s.forwardOn(ctx, &wire.Message{ID: m.ID, Method: "tasks/cancel", Params: params}, stream, tk.srv, tk.up, params, nil)
		if reply.Error != nil {
			if we := wire.DecodeError(reply.Error); we.Code == wire.CodeInvalidParams && strings.Contains(we.Message, "terminal") {
				return ack() // cancelling a finished task is acknowledged, changing nothing
			}
			return g.taskReply(tk, "tasks/cancel", reply)
		}
		g.taskReply(tk, "tasks/cancel", reply)
		return ack()
	case "tasks/update":
		// Each response answers the server's request of that key;
		// responses to keys nobody asked are ignored, as the extension has
		// it.
		var responses map[string]json.RawMessage
		_ = json.Unmarshal(wire.Get(m.Params, "inputResponses"), &responses)
		t := &g.tasks
		t.mu.Lock()
		for key, res := range responses {
			if in := tk.inputs[key]; in != nil {
				delete(tk.inputs, key)
				in.answer <- res // buffered: never blocks
			}
		}
		t.mu.Unlock()
		return ack()
	}
	return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", m.Method))
}

// ack is the empty acknowledgement of tasks/update and tasks/cancel.
func ack() Reply { return Reply{Result: json.RawMessage(`{"resultType":"complete"}`)} }

func taskIDParams(id string) json.RawMessage {
	return append(wire.AppendString([]byte(`{"taskId":`), id), '}')
}

// passTask26 sends a tasks/* request to the 2026-07-28 server that runs the
// task, under its id, and rewrites the answer to the client's.
func (s *Session) passTask26(ctx context.Context, m *wire.Message, stream Stream, tk *task) Reply {
	g := s.gw
	if why := tk.lost(); why != "" {
		if m.Method == "tasks/get" {
			return lostV2(g, tk, why)
		}
		return ack()
	}
	params, err := wire.SetString(m.Params, "taskId", tk.upID)
	if err != nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
	}
	reply := s.forwardOn(ctx, m, stream, tk.srv, tk.up, params, nil)
	if why := tk.lost(); why != "" && m.Method == "tasks/get" {
		return lostV2(g, tk, why)
	}
	if reply.Error != nil {
		return g.taskReply(tk, m.Method, reply)
	}
	reply.Result = g.clientView(tk, reply.Result)
	if m.Method == "tasks/get" {
		g.tasks.mu.Lock()
		tk.keep(stateV2(reply.Result))
		g.tasks.mu.Unlock()
	}
	return reply
}

// lostV2 is the failed task of a server that was lost, as tasks/get of the
// 2026-07-28 era answers it.
func lostV2(g *Gateway, tk *task, why string) Reply {
	g.tasks.mu.Lock()
	v := tk.view()
	g.tasks.mu.Unlock()
	v = taskV2(v)
	v, _ = wire.Delete(v, "statusMessage")
	errObj, _ := json.Marshal(wire.Errorf(wire.CodeInternalError, "%s", why))
	v, _ = wire.Set(v, "error", errObj)
	v, _ = wire.Set(v, "statusMessage", wire.AppendString(nil, why))
	v, _ = wire.Set(v, "resultType", json.RawMessage(`"complete"`))
	return Reply{Result: v}
}

// getBridged answers a 2026-07-28 client's tasks/get of a task a
// session-era server runs: the server's status, with its result (or error)
// inlined once the task has ended.
func (s *Session) getBridged(ctx context.Context, m *wire.Message, stream Stream, tk *task) Reply {
	g := s.gw
	if why := tk.lost(); why != "" {
		return lostV2(g, tk, why)
	}
	params := taskIDParams(tk.upID)
	reply := s.forwardOn(ctx, &wire.Message{ID: m.ID, Method: "tasks/get", Params: params}, stream, tk.srv, tk.up, params, nil)
	if why := tk.lost(); why != "" {
		return lostV2(g, tk, why)
	}
	reply = g.taskReply(tk, "tasks/get", reply)
	if reply.Error != nil {
		return reply
	}
	state := reply.Result
	status, _ := wire.GetString(state, "status")
	out := taskV2(state)
	switch status {
	case "input_required":
		// The session era's server asks its questions by requests of its
		// own, sent while the client waits in tasks/result: the gateway
		// waits there in the client's stead and shows what the server asks
		// as the task's inputRequests; until a question arrives, the task
		// is working to the client.
		s.drain(tk)
		if asks := g.pendingInputs(tk); asks != nil {
			out, _ = wire.Set(out, "inputRequests", asks)
		} else {
			out, _ = wire.Set(out, "status", json.RawMessage(`"working"`))
		}
	case "completed", "failed":
		// The session era gives the outcome by tasks/result: a result (a
		// tool's error among them: completed, isError) or an error (failed).
		res := s.forwardOn(ctx, &wire.Message{ID: m.ID, Method: "tasks/result", Params: params}, stream, tk.srv, tk.up, params, nil)
		res = g.taskReply(tk, "tasks/result", res)
		if res.Error != nil {
			out, _ = wire.Set(out, "status", json.RawMessage(`"failed"`))
			out, _ = wire.Set(out, "error", res.Error)
		} else {
			out, _ = wire.Set(out, "status", json.RawMessage(`"completed"`))
			out, _ = wire.Set(out, "result", complete(Reply{Result: dropRelatedTask(res.Result)}).Result)
		}
	}
	out, _ = wire.Set(out, "resultType", json.RawMessage(`"complete"`))
	return Reply{Result: out}
}

// The other way round: a session-era client's tasks on a 2026-07-28 server
// that declares the extension. The task-augmented tools/call goes without
// its task param, the extension added to the client capabilities its _meta
// carries (the server decides); the flat CreateTaskResult becomes the
// nested one (ttlMs -> ttl, pollIntervalMs -> pollInterval). tasks/get
// answers the task without what the extension inlines; tasks/result polls
// the server's tasks/get until the task ends, asking the client the
// inputRequests of a task waiting for input (and answering the server with
// tasks/update), and gives the inlined result or error; tasks/cancel
// answers the cancelled task, or the session era's error for a finished
// one.

// taskV1 is a 2026-07-28 task as the session era writes it.
func taskV1(t json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return t
	}
	if v, ok := m["ttlMs"]; ok {
		m["ttl"] = v
		delete(m, "ttlMs")
	}
	if v, ok := m["pollIntervalMs"]; ok {
		m["pollInterval"] = v
		delete(m, "pollIntervalMs")
	}
	for _, k := range []string{"resultType", "result", "error", "inputRequests", "_meta"} {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return t
	}
	return b
}

// withTasksDeclared gives a session-era client's call to a 2026-07-28
// server the client capabilities the server reads (bridgeMeta keeps them),
// with the extension declared.
func (s *Session) withTasksDeclared(params json.RawMessage) json.RawMessage {
	caps := s.capabilities
	if len(caps) == 0 || caps[0] != '{' {
		caps = json.RawMessage(`{}`)
	}
	exts := wire.Get(caps, "extensions")
	if len(exts) == 0 || exts[0] != '{' {
		exts = json.RawMessage(`{}`)
	}
	exts, err := wire.Set(exts, TasksExtension, json.RawMessage(`{}`))
	if err == nil {
		caps, err = wire.Set(caps, "extensions", exts)
	}
	meta := wire.Get(params, "_meta")
	if err == nil {
		meta, err = wire.Set(meta, MetaClientCapabilities, caps)
	}
	if err == nil {
		if out, err := wire.Set(params, "_meta", meta); err == nil {
			return out
		}
	}
	return params
}

// createdV1 is a 2026-07-28 server's CreateTaskResult (rewritten by
// clientView) as a session-era client reads it.
func createdV1(result json.RawMessage) json.RawMessage {
	out, err := wire.Set(json.RawMessage(`{}`), "task", taskV1(result))
	if err != nil {
		return result
	}
	return out
}

// viewV1 is a task's last status (view) as a session-era client reads it
// (under t.mu).
func (tk *task) viewV1() json.RawMessage {
	v := tk.view()
	if v != nil && isStateless(tk.up) {
		v = taskV1(v)
	}
	return v
}

// getModern asks a 2026-07-28 server for its task and records its status;
// the answer is the server's, under the gateway's id.
func (s *Session) getModern(ctx context.Context, m *wire.Message, stream Stream, tk *task) Reply {
	g := s.gw
	params := taskIDParams(tk.upID)
	reply := s.forwardOn(ctx, &wire.Message{ID: m.ID, Method: "tasks/get", Params: params}, stream, tk.srv, tk.up, s.withTasksDeclared(params), nil)
	if reply.Error != nil {
		return g.taskReply(tk, "tasks/get", reply)
	}
	reply.Result = g.clientView(tk, reply.Result)
	g.tasks.mu.Lock()
	tk.keep(stateV2(reply.Result))
	g.tasks.mu.Unlock()
	return reply
}

// handleTaskOnModern answers a session-era client's tasks/get, tasks/result
// or tasks/cancel of a task a 2026-07-28 server runs.
func (s *Session) handleTaskOnModern(ctx context.Context, m *wire.Message, stream Stream, tk *task) Reply {
	switch m.Method {
	case "tasks/get":
		reply := s.getModern(ctx, m, stream, tk)
		if reply.Error == nil {
			s.askInTheBackground(tk, reply.Result)
			reply.Result = taskV1(reply.Result)
		}
		return reply
	case "tasks/cancel":
		reply := s.getModern(ctx, m, stream, tk)
		if reply.Error != nil {
			return reply
		}
		if st, _ := wire.GetString(reply.Result, "status"); isTerminal(st) {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "Cannot cancel task in terminal status: %s", st))
		}
		params := s.withTasksDeclared(taskIDParams(tk.upID))
		if r := s.forwardOn(ctx, &wire.Message{ID: m.ID, Method: "tasks/cancel", Params: params}, stream, tk.srv, tk.up, params, nil); r.Error != nil {
			return s.gw.taskReply(tk, "tasks/cancel", r)
		}
		if reply = s.getModern(ctx, m, stream, tk); reply.Error == nil {
			reply.Result = taskV1(reply.Result)
		}
		return reply
	case "tasks/result":
		return s.resultOnModern(ctx, m, stream, tk)
	}
	return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", m.Method))
}

// resultOnModern waits for a 2026-07-28 server's task to end, as the
// session era's tasks/result does, and answers its outcome.
func (s *Session) resultOnModern(ctx context.Context, m *wire.Message, stream Stream, tk *task) Reply {
	g := s.gw
	for {
		reply := s.getModern(ctx, m, stream, tk)
		if reply.Error != nil {
			return reply
		}
		if why := tk.lost(); why != "" {
			return errorReply(wire.Errorf(wire.CodeInternalError, "%s", why))
		}
		state := reply.Result
		status, _ := wire.GetString(state, "status")
		switch status {
		case "completed":
			g.tasks.mu.Lock()
			tk.terminal = true
			g.tasks.mu.Unlock()
			res := wire.Get(state, "result")
			if res == nil {
				res = json.RawMessage(`{"content":[]}`)
			}
			res, _ = wire.Delete(res, "resultType") // not of the session era
			meta := wire.Get(res, "_meta")
			meta, _ = wire.Set(meta, MetaRelatedTask, append(wire.AppendString([]byte(`{"taskId":`), tk.id), '}'))
			if out, err := wire.Set(res, "_meta", meta); err == nil {
				res = out
			}
			return Reply{Result: res}
		case "failed":
			if e := wire.Get(state, "error"); e != nil {
				return Reply{Error: e}
			}
			return errorReply(wire.Errorf(wire.CodeInternalError, "task %s failed", tk.id))
		case "cancelled":
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "Task %s was cancelled", tk.id))
		case "input_required":
			asked, werr := s.answerInputs(ctx, m.ID, stream, tk, wire.Get(state, "inputRequests"))
			if werr != nil {
				return errorReply(werr)
			}
			if asked {
				continue
			}
			// Asked already (by an earlier poll), not yet answered: wait.
		}
		wait := 500 * time.Millisecond
		if ms, err := strconv.ParseInt(string(wire.Get(state, "pollIntervalMs")), 10, 64); err == nil && ms > 0 {
			wait = min(max(time.Duration(ms)*time.Millisecond, 50*time.Millisecond), 5*time.Second)
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return errorReply(wire.Errorf(wire.CodeInternalError, "tasks/result of %s: %v", tk.id, ctx.Err()))
		case <-s.done:
			timer.Stop()
			return errorReply(wire.Errorf(wire.CodeInternalError, "tasks/result of %s: the client's session ended", tk.id))
		}
	}
}

// answerInputs asks the session-era client each input request of a task
// that nobody asked it yet, related to the task, and gives the server the
// answers (tasks/update). It reports whether it asked anything.
func (s *Session) answerInputs(ctx context.Context, id json.RawMessage, stream Stream, tk *task, requests json.RawMessage) (bool, *wire.Error) {
	var asks map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(requests, &asks); err != nil {
		return false, wire.Errorf(wire.CodeInternalError, "mcp server %q: malformed inputRequests of task %s: %v", tk.srv.name, tk.id, err)
	}
	t := &s.gw.tasks
	var mine []string // the keys this call asks
	t.mu.Lock()
	for key := range asks {
		if !tk.asking[key] {
			if tk.asking == nil {
				tk.asking = map[string]bool{}
			}
			tk.asking[key] = true
			mine = append(mine, key)
		}
	}
	t.mu.Unlock()
	if len(mine) == 0 {
		return false, nil
	}
	done := false
	defer func() {
		if !done { // not answered: may be asked again
			t.mu.Lock()
			for _, key := range mine {
				delete(tk.asking, key)
			}
			t.mu.Unlock()
		}
	}()
	responses := map[string]json.RawMessage{}
	for _, key := range mine {
		ask := asks[key]
		if missing := s.lacks(ask.Method, ask.Params); missing != "" {
			return true, wire.Errorf(wire.CodeInvalidRequest, "task %s of mcp server %q needs the client capability %q for %s, which the client did not declare", tk.id, tk.srv.name, missing, ask.Method)
		}
		params := ask.Params
		if len(params) == 0 || params[0] != '{' {
			params = json.RawMessage(`{}`)
		}
		meta := wire.Get(params, "_meta")
		meta, _ = wire.Set(meta, MetaRelatedTask, append(wire.AppendString([]byte(`{"taskId":`), tk.id), '}'))
		params, _ = wire.Set(params, "_meta", meta)
		res, werr := s.request(ctx, stream, ask.Method, params)
		if werr != nil {
			return true, werr
		}
		responses[key] = res
	}
	b, _ := json.Marshal(responses)
	params, _ := wire.Set(taskIDParams(tk.upID), "inputResponses", b)
	params = s.withTasksDeclared(params)
	if r := s.forwardOn(ctx, &wire.Message{ID: id, Method: "tasks/update", Params: params}, stream, tk.srv, tk.up, params, nil); r.Error != nil {
		return true, wire.DecodeError(s.gw.taskReply(tk, "tasks/update", r).Error)
	}
	done = true
	return true, nil
}

// askInTheBackground answers a task's input requests seen by a poll
// (tasks/get, tasks/list), not by tasks/result: the session era lets a
// client poll without calling tasks/result, so the questions go to the
// session's own stream, and the answers to the server, in the background
// until the task expires or the session ends.
func (s *Session) askInTheBackground(tk *task, state json.RawMessage) {
	if st, _ := wire.GetString(state, "status"); st != "input_required" || s.stateless {
		return
	}
	requests := wire.Get(state, "inputRequests")
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), tk.expires)
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		id := wire.AppendString(nil, s.gw.newID("gw-task-input-"))
		if _, werr := s.answerInputs(ctx, id, nil, tk, requests); werr != nil {
			s.gw.Router.log.Warn(fmt.Sprintf("mcp server %q: the input its task %s asked for was not answered; the task waits for it (the client may call tasks/result)", tk.srv.name, tk.id), "error", werr.Message)
		}
	}()
}

// taskInput is a session-era server's request for the input of a task a
// 2026-07-28 client created, waiting for its answer by tasks/update.
type taskInput struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage
}

// taskOfStateless is the task a server's request relates to when a
// 2026-07-28 client created it, else nil.
func (g *Gateway) taskOfStateless(up Upstream, params json.RawMessage) *task {
	upID, ok := wire.GetString(wire.Get(wire.Get(params, "_meta"), MetaRelatedTask), "taskId")
	if !ok {
		return nil
	}
	g.tasks.mu.Lock()
	defer g.tasks.mu.Unlock()
	tk := g.tasks.byUp[taskKey{up, upID}]
	if tk == nil || !tk.sess.stateless {
		return nil
	}
	return tk
}

// maxTaskInputs bounds the questions one task may have waiting.
const maxTaskInputs = 16

// parkTaskInput keeps a session-era server's request for the input of a
// 2026-07-28 client's task until the client answers it by tasks/update (or
// the server gives up, or the task expires).
func (g *Gateway) parkTaskInput(ctx context.Context, tk *task, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	if _, known := clientCapabilityFor[method]; !known {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
	}
	if missing := tk.sess.lacks(method, params); missing != "" {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: the client that created task %s did not declare the %s capability", method, tk.id, missing)
	}
	meta, _ := wire.Delete(wire.Get(params, "_meta"), MetaRelatedTask)
	if string(meta) == "{}" {
		params, _ = wire.Delete(params, "_meta")
	} else {
		params, _ = wire.Set(params, "_meta", meta)
	}
	in := &taskInput{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	key := g.newID("gw-input-")
	t := &g.tasks
	t.mu.Lock()
	if len(tk.inputs) >= maxTaskInputs {
		t.mu.Unlock()
		return nil, wire.Errorf(wire.CodeInvalidRequest, "%s refused: task %s already waits for %d answers", method, tk.id, maxTaskInputs)
	}
	if tk.inputs == nil {
		tk.inputs = map[string]*taskInput{}
	}
	tk.inputs[key] = in
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(tk.inputs, key)
		t.mu.Unlock()
	}()
	expiry := time.NewTimer(time.Until(tk.expires))
	defer expiry.Stop()
	select {
	case res := <-in.answer:
		return res, nil
	case <-ctx.Done():
		return nil, wire.Errorf(wire.CodeInternalError, "%s of task %s: %v", method, tk.id, ctx.Err())
	case <-expiry.C:
		return nil, wire.Errorf(wire.CodeInternalError, "%s of task %s: the task expired before its client answered", method, tk.id)
	}
}

// pendingInputs is the inputRequests object of a task's waiting questions,
// or nil for none.
func (g *Gateway) pendingInputs(tk *task) json.RawMessage {
	g.tasks.mu.Lock()
	defer g.tasks.mu.Unlock()
	if len(tk.inputs) == 0 {
		return nil
	}
	asks := make(map[string]any, len(tk.inputs))
	for key, in := range tk.inputs {
		asks[key] = map[string]any{"method": in.method, "params": in.params}
	}
	return mustJSON(asks)
}

// drain runs the session era's tasks/result of a task waiting for input,
// once at a time, so that its server sends the questions it holds for the
// client; the result itself is asked again once the task has ended.
func (s *Session) drain(tk *task) {
	t := &s.gw.tasks
	t.mu.Lock()
	if tk.draining {
		t.mu.Unlock()
		return
	}
	tk.draining = true
	t.mu.Unlock()
	go func() {
		defer func() {
			t.mu.Lock()
			tk.draining = false
			t.mu.Unlock()
		}()
		ctx, cancel := context.WithDeadline(context.Background(), tk.expires)
		defer cancel()
		params := taskIDParams(tk.upID)
		id := wire.AppendString(nil, s.gw.newID("gw-task-drain-"))
		s.forwardOn(ctx, &wire.Message{ID: id, Method: "tasks/result", Params: params}, nil, tk.srv, tk.up, params, nil)
	}()
}
