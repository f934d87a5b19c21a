package gateway

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

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
//   - a session-era server with the 2025-11-25 tasks capability (every
//     stdio server is spoken to in the session era) gets the call as a
//     task-augmented one when its tool supports tasks ("optional" or
//     "required"); the gateway translates: the nested task becomes the flat
//     CreateTaskResult (ttl -> ttlMs, pollInterval -> pollIntervalMs), and
//     tasks/get of a finished task inlines the result the gateway asks the
//     server for (tasks/result), a tool error as completed with isError.
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
		// A session-era server asks its task's input by requests of its
		// own, never by inputRequests: no key is pending, and responses to
		// keys nobody asked are ignored, as the extension has it.
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
		// The server waits for input it asks for by requests of its own,
		// which the gateway does not turn into inputRequests yet: to the
		// client, the task is still working.
		out, _ = wire.Set(out, "status", json.RawMessage(`"working"`))
		out, _ = wire.Set(out, "statusMessage", wire.AppendString(nil, "the server waits for input it asks for outside the task's inputRequests, which the gateway does not bridge to a "+StatelessVersion+" client"))
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
			out, _ = wire.Set(out, "result", dropRelatedTask(res.Result))
		}
	}
	out, _ = wire.Set(out, "resultType", json.RawMessage(`"complete"`))
	return Reply{Result: out}
}
