package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Tasks (MCP 2025-11-25, experimental; SEP-1686) through the gateway.
//
// A task-augmented tools/call passes to its server like any call (the guard
// decides and audits it as the call it is); when the server answers with a
// CreateTaskResult, the gateway keeps a record of the task and gives the
// client an id of its own, unguessable, bound to the client that created it
// and to the server (and upstream session) that runs it. tasks/get,
// tasks/result and tasks/cancel of that id go to that server under the
// server's id; anyone else's request for it is answered exactly like a
// request for an unknown id. tasks/list lists the caller's own tasks. The
// server's notifications/tasks/status reach the creating client only.
//
// The other way round, a server may ask a client to run its request
// (sampling/createMessage, elicitation/create) as a task, then poll the
// client's tasks/get and tasks/result: the server sees an id of the
// gateway's, bound to that server, and its polls reach the client under the
// client's own id.
//
// The gateway keeps no result: a finished task keeps its ids, its owner and
// its last status (at most maxKeptTaskState bytes of it), until its ttl (at
// most TaskOptions.MaxTTL) passes or, at its owner's limit, a newer task
// needs its place.

// TaskOptions bound the tasks the gateway keeps. The zero value works.
type TaskOptions struct {
	// MaxPerClient is how many tasks one client may hold (running or
	// finished but not yet expired); 0 means DefaultMaxTasksPerClient. At the
	// limit the client's own oldest finished task is forgotten; when none is
	// finished, a new task is refused.
	MaxPerClient int
	// MaxTotal bounds the tasks of all clients together (a 2026-07-28
	// client's are owned by its clientInfo name, so one client inventing
	// names is several owners); 0 means DefaultMaxTasks, negative no bound.
	// At the limit the tasks whose ttl has passed are forgotten, then the
	// creator's own oldest finished one; when it has none, a new task is
	// refused. With PerGateway the gateway has one owner, bounded by
	// MaxPerClient, and MaxTotal is not used.
	MaxTotal int
	// MaxTTL bounds how long a task is kept after its creation: a longer ttl
	// the client asks for, or the server grants, is cut to it; 0 means
	// DefaultMaxTaskTTL.
	MaxTTL time.Duration
	// PerGateway binds tasks to the gateway rather than to the session that
	// created them (host mode, where a gateway is one sandbox): any session
	// of the sandbox may poll them.
	PerGateway bool
}

// Defaults of TaskOptions.
const (
	DefaultMaxTasksPerClient = 64
	DefaultMaxTasks          = 1024
	DefaultMaxTaskTTL        = time.Hour
)

// MetaRelatedTask is the _meta key relating a message to a task.
const MetaRelatedTask = "io.modelcontextprotocol/related-task"

// maxKeptTaskState bounds the last status the gateway keeps of a task; a
// longer one is kept without its statusMessage.
const maxKeptTaskState = 4096

// task is one task a server runs for a client.
type task struct {
	id, upID string // the gateway's id (the client's), the server's
	owner    any    // *Session, or the *Gateway with PerGateway
	sess     *Session
	srv      *server
	up       Upstream
	gen      uint64 // up's generation when the task was created
	expires  time.Time
	state    json.RawMessage // the last Task object, as the client sees it
	terminal bool
	progress string                // the gateway's progress token of the call that made it, if any
	asking   map[string]bool       // a 2026-07-28 server's input requests the client is being asked (under t.mu)
	inputs   map[string]*taskInput // a session-era server's requests for a 2026-07-28 creator's input, by key (under t.mu)
	draining bool                  // a tasks/result runs to receive them (under t.mu)
	forget   func()                // releases what the task holds beyond the table, if anything
}

// clientTask is one task a server had a client create.
type clientTask struct {
	id, clientID string // the id the server sees, the client's
	sess         *Session
	srv          *server
	expires      time.Time
}

type taskKey struct {
	up Upstream
	id string
}

// taskTable is the gateway's record of tasks.
type taskTable struct {
	mu      sync.Mutex
	byID    map[string]*task
	byUp    map[taskKey]*task
	owned   map[any]*taskHolding
	asked   map[string]*clientTask
	askedOf map[*Session][]*clientTask
	pending int // the task-augmented calls in flight, of every owner
}

// taskHolding is what one owner holds: its tasks in creation order, and
// the task-augmented calls in flight that may add one.
type taskHolding struct {
	tasks   []*task
	pending int
}

func (g *Gateway) maxTasks() int {
	if g.Tasks.MaxPerClient > 0 {
		return g.Tasks.MaxPerClient
	}
	return DefaultMaxTasksPerClient
}

// maxTasksTotal is the bound on the tasks of all owners; 0 when there is none.
func (g *Gateway) maxTasksTotal() int {
	switch {
	case g.Tasks.PerGateway || g.Tasks.MaxTotal < 0:
		return 0
	case g.Tasks.MaxTotal == 0:
		return DefaultMaxTasks
	}
	return g.Tasks.MaxTotal
}

func (g *Gateway) maxTaskTTL() time.Duration {
	if g.Tasks.MaxTTL > 0 {
		return g.Tasks.MaxTTL
	}
	return DefaultMaxTaskTTL
}

func (g *Gateway) taskOwner(s *Session) any {
	switch {
	case g.Tasks.PerGateway:
		return g
	case s.stateless:
		return taskCreator{clientKey(s.clientInfo)}
	}
	return s
}

func isTerminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// taskNotFound is the answer to a task id the caller does not hold, the
// same whether nobody holds it or someone else does.
func taskNotFound(id string) Reply {
	return errorReply(wire.Errorf(wire.CodeInvalidParams, "Task not found: %s", id))
}

// taskRequest is a task-augmented call on its way to its server: it holds
// a place among its owner's tasks until the server answers.
type taskRequest struct {
	g     *Gateway
	owner any
	done  bool
	task  *task // the task the call made, if any
}

// keepsProgress reports whether the call made a task that keeps its
// progress token: progress of a task goes on until it is forgotten.
func (r *taskRequest) keepsProgress() bool { return r != nil && r.task != nil && r.task.progress != "" }

// requestTask prepares a task-augmented tools/call of a session-era client:
// it reserves a place among the client's tasks (forgetting its oldest
// finished one at the limit) and cuts a requested ttl to the ceiling.
// Neither is done for another request (nil taskRequest).
// A 2026-07-28 client's is prepared by requestTask26; exposed is the
// tool's name as the client called it.
func (g *Gateway) requestTask(s *Session, srv *server, exposed, method string, params json.RawMessage) (*taskRequest, json.RawMessage, *wire.Error) {
	if method != "tools/call" {
		return nil, params, nil
	}
	if s.stateless {
		return g.requestTask26(s, srv, exposed, params)
	}
	if !bytes.Contains(params, []byte(`"task"`)) {
		return nil, params, nil // the call path's common case, decided without a scan
	}
	augment := wire.Get(params, "task")
	if augment == nil || string(augment) == "null" {
		return nil, params, nil
	}
	tr, werr := g.reserveTask(g.taskOwner(s))
	if werr != nil {
		return nil, nil, werr
	}
	if isStateless(srv.up) && offersTasks2(srv.up.InitializeResult()) {
		// A 2026-07-28 server decides itself, for a client of the extension.
		params, _ = wire.Delete(params, "task")
		return tr, s.withTasksDeclared(params), nil
	}
	ceiling := g.maxTaskTTL().Milliseconds()
	if ttl, err := strconv.ParseInt(string(wire.Get(augment, "ttl")), 10, 64); err == nil && ttl > ceiling {
		if augment, err = wire.Set(augment, "ttl", json.RawMessage(strconv.FormatInt(ceiling, 10))); err == nil {
			params, _ = wire.Set(params, "task", augment)
		}
	}
	return tr, params, nil
}

// reserveTask holds a place among the owner's tasks for a call that may
// make one, forgetting its oldest finished task at the limit.
func (g *Gateway) reserveTask(owner any) (*taskRequest, *wire.Error) {
	t := &g.tasks
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.holding(owner)
	t.prune(h, time.Now())
	if len(h.tasks)+h.pending >= g.maxTasks() {
		if !t.forgetOldestFinished(h) {
			g.quota.refuse(LimitTasksPerClient)
			return nil, wire.Errorf(wire.CodeInvalidRequest, "too many tasks: this client holds %d unfinished tasks, the gateway's limit (--max-tasks-per-client); wait for one to finish or cancel one (tasks/cancel) before starting another", len(h.tasks)+h.pending)
		}
	}
	if bound := g.maxTasksTotal(); bound > 0 && t.held() >= bound {
		t.pruneAll(time.Now())
		h = t.holding(owner) // pruneAll drops an emptied holding
		if t.held() >= bound && !t.forgetOldestFinished(h) {
			g.quota.refuse(LimitTasks)
			t.dropIfEmpty(owner, h)
			return nil, wire.Errorf(wire.CodeInvalidRequest, "too many tasks: the gateway holds %d tasks of all its clients, its limit (--max-tasks), and none is a finished one of this client's to make room for another; try again when tasks have finished, or cancel one of this client's (tasks/cancel)", t.held())
		}
	}
	h.pending++
	t.pending++
	return &taskRequest{g: g, owner: owner}, nil
}

// Names of the task limits, as QuotaStatus counts their refusals.
const (
	LimitTasksPerClient = "max-tasks-per-client"
	LimitTasks          = "max-tasks"
)

// held is how many tasks the gateway holds: those it keeps, and the
// task-augmented calls in flight that may add one.
func (t *taskTable) held() int { return len(t.byID) + t.pending }

// pruneAll forgets every owner's tasks whose ttl has passed.
func (t *taskTable) pruneAll(now time.Time) {
	for owner, h := range t.owned {
		t.prune(h, now)
		t.dropIfEmpty(owner, h)
	}
}

// release gives back the place of a call that made no task.
func (r *taskRequest) release() {
	if r == nil || r.done {
		return
	}
	r.done = true
	t := &r.g.tasks
	t.mu.Lock()
	t.pending--
	if h := t.owned[r.owner]; h != nil {
		h.pending--
		t.dropIfEmpty(r.owner, h)
	}
	t.mu.Unlock()
}

// adopt takes a server's answer to a task-augmented call: a CreateTaskResult
// becomes a task of the gateway's, under the gateway's id; any other answer
// (the server ran the call at once) passes unchanged.
func (r *taskRequest) adopt(c *call, up Upstream, result json.RawMessage) json.RawMessage {
	s, srv := c.sess, c.server
	taskObj := wire.Get(result, "task")
	upID, ok := wire.GetString(taskObj, "taskId")
	if t, _ := wire.GetString(result, "resultType"); taskObj == nil && t == "task" {
		upID, ok = wire.GetString(result, "taskId") // a 2026-07-28 server's, flat
	}
	if r == nil || !ok || upID == "" {
		r.release()
		return result
	}
	g := r.g
	tk := &task{id: g.newID("gw-task-"), upID: upID, owner: r.owner, sess: s, srv: srv, up: up, gen: up.Generation()}
	ttl := g.maxTaskTTL()
	granted := wire.Get(taskObj, "ttl")
	if taskObj == nil {
		granted = wire.Get(result, "ttlMs")
	}
	if ms, err := strconv.ParseInt(string(granted), 10, 64); err == nil && ms >= 0 {
		ttl = min(ttl, time.Duration(ms)*time.Millisecond)
	}
	tk.expires = time.Now().Add(ttl)
	result = g.clientView(tk, result)
	if s.stateless {
		// Flat, in the 2026-07-28 names; kept as the server wrote it.
		if taskObj == nil {
			tk.keep(stateV2(result))
		} else {
			tk.keep(wire.Get(result, "task"))
		}
		result = createdV2(result)
	} else {
		if taskObj == nil { // a 2026-07-28 server's, for a session-era client
			tk.keep(stateV2(result))
			result = createdV1(result)
		}
		tk.keep(wire.Get(result, "task"))
	}
	if c.gwToken != "" && !s.stateless {
		// Its progress now goes to the client's own stream, the call's
		// having ended, until the task is forgotten.
		tk.progress = c.gwToken
		g.progress.Store(c.gwToken, &call{sess: s, server: srv, progressToken: c.progressToken, stream: outbox{s}})
		tk.forget = func() { g.progress.Delete(tk.progress) }
	}
	r.task = tk

	t := &g.tasks
	t.mu.Lock()
	r.done = true
	h := t.holding(r.owner)
	h.pending--
	t.pending--
	h.tasks = append(h.tasks, tk)
	t.byID[tk.id] = tk
	t.byUp[taskKey{up, upID}] = tk
	t.mu.Unlock()
	return result
}

func (t *taskTable) holding(owner any) *taskHolding {
	if t.owned == nil {
		t.byID, t.byUp, t.owned = map[string]*task{}, map[taskKey]*task{}, map[any]*taskHolding{}
	}
	h := t.owned[owner]
	if h == nil {
		h = &taskHolding{}
		t.owned[owner] = h
	}
	return h
}

// prune forgets the owner's tasks whose ttl has passed.
func (t *taskTable) prune(h *taskHolding, now time.Time) {
	kept := h.tasks[:0]
	for _, tk := range h.tasks {
		if now.After(tk.expires) {
			t.unindex(tk)
			continue
		}
		kept = append(kept, tk)
	}
	clear(h.tasks[len(kept):])
	h.tasks = kept
}

// forgetOldestFinished forgets the owner's oldest finished task, if any.
func (t *taskTable) forgetOldestFinished(h *taskHolding) bool {
	for i, tk := range h.tasks {
		if tk.finished() {
			t.unindex(tk)
			h.tasks = append(h.tasks[:i], h.tasks[i+1:]...)
			return true
		}
	}
	return false
}

func (t *taskTable) unindex(tk *task) {
	delete(t.byID, tk.id)
	delete(t.byUp, taskKey{tk.up, tk.upID})
	if tk.forget != nil {
		tk.forget()
	}
}

// outbox is a session's own stream (its GET stream's queue), for what
// comes after the request it belongs to has ended.
type outbox struct{ s *Session }

func (o outbox) Send(msg []byte) error {
	o.s.send(msg)
	return nil
}

func (t *taskTable) dropIfEmpty(owner any, h *taskHolding) {
	if len(h.tasks) == 0 && h.pending == 0 {
		delete(t.owned, owner)
	}
}

// lookup finds a task of the owner by the gateway's id; nil when the
// owner holds none of that id.
func (t *taskTable) lookup(owner any, id string) *task {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk := t.byID[id]
	if tk == nil || tk.owner != owner {
		return nil
	}
	if time.Now().After(tk.expires) {
		if h := t.owned[owner]; h != nil {
			t.prune(h, time.Now())
			t.dropIfEmpty(owner, h)
		}
		return nil
	}
	return tk
}

// forgetSession forgets the tasks a closing session holds, and those it
// was asked to run.
func (g *Gateway) forgetTasks(s *Session) {
	t := &g.tasks
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.owned[s]; h != nil && !g.Tasks.PerGateway {
		for _, tk := range h.tasks {
			t.unindex(tk)
		}
		delete(t.owned, s)
	}
	for _, ct := range t.askedOf[s] {
		delete(t.asked, ct.id)
	}
	delete(t.askedOf, s)
}

// finished reports whether a task has ended, at its server or by the loss
// of its server.
func (tk *task) finished() bool { return tk.terminal || tk.lost() != "" }

// lost says why a task ended without its server: the server was removed,
// or restarted (a new process knows nothing of it); "" while it runs.
func (tk *task) lost() string {
	select {
	case <-tk.srv.gone:
		return fmt.Sprintf("mcp server %q was removed from the gateway; the task is lost", tk.srv.name)
	default:
	}
	if tk.up.Generation() != tk.gen {
		return fmt.Sprintf("mcp server %q restarted since the task was created; the task is lost", tk.srv.name)
	}
	return ""
}

// keep records a task's last status as the client sees it (under t.mu or
// before the task is shared).
func (tk *task) keep(state json.RawMessage) {
	if state == nil {
		return
	}
	if len(state) > maxKeptTaskState {
		state, _ = wire.Delete(state, "statusMessage")
		if len(state) > maxKeptTaskState {
			return
		}
	}
	tk.state = append(json.RawMessage(nil), state...)
	status, _ := wire.GetString(state, "status")
	tk.terminal = tk.terminal || isTerminal(status)
}

// view is the task's last status, or failed when its server is lost
// (under t.mu).
func (tk *task) view() json.RawMessage {
	state := tk.state
	if why := tk.lost(); why != "" {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if state == nil {
			state = json.RawMessage(`{}`)
		}
		state = withMember(state, "taskId", wire.AppendString(nil, tk.id))
		state, _ = wire.Set(state, "status", json.RawMessage(`"failed"`))
		state, _ = wire.Set(state, "statusMessage", wire.AppendString(nil, why))
		state, _ = wire.Set(state, "lastUpdatedAt", wire.AppendString(nil, now))
	}
	return state
}

// withMember sets key only when obj lacks it.
func withMember(obj []byte, key string, value json.RawMessage) []byte {
	if wire.Get(obj, key) != nil {
		return obj
	}
	out, err := wire.Set(obj, key, value)
	if err != nil {
		return obj
	}
	return out
}

// clientView rewrites what a server says of a task for the client: the
// server's id becomes the gateway's (as taskId, in task, in _meta's
// related-task), and a ttl beyond the gateway's keeping is cut to it.
func (g *Gateway) clientView(tk *task, msg json.RawMessage) json.RawMessage {
	ceiling := json.RawMessage(strconv.FormatInt(g.maxTaskTTL().Milliseconds(), 10))
	fix := func(obj json.RawMessage) json.RawMessage {
		if id, ok := wire.GetString(obj, "taskId"); ok && id == tk.upID {
			obj, _ = wire.SetString(obj, "taskId", tk.id)
		}
		for _, key := range []string{"ttl", "ttlMs"} { // the 2025-11-25 name, the 2026-07-28 one
			if ttl := wire.Get(obj, key); ttl != nil {
				if ms, err := strconv.ParseInt(string(ttl), 10, 64); err != nil || ms > g.maxTaskTTL().Milliseconds() {
					obj, _ = wire.Set(obj, key, ceiling)
				}
			}
		}
		return obj
	}
	if inner := wire.Get(msg, "task"); inner != nil {
		if out, err := wire.Set(msg, "task", fix(inner)); err == nil {
			msg = out
		}
	}
	msg = fix(msg)
	return setRelatedTask(msg, tk.upID, tk.id)
}

// setRelatedTask rewrites _meta's related-task id from one id to another.
func setRelatedTask(msg json.RawMessage, from, to string) json.RawMessage {
	meta := wire.Get(msg, "_meta")
	related := wire.Get(meta, MetaRelatedTask)
	if id, ok := wire.GetString(related, "taskId"); !ok || id != from {
		return msg
	}
	related, err := wire.SetString(related, "taskId", to)
	if err == nil {
		meta, err = wire.Set(meta, MetaRelatedTask, related)
	}
	if err == nil {
		msg, err = wire.Set(msg, "_meta", meta)
	}
	if err != nil {
		return nil
	}
	return msg
}

// handleTask answers a client's tasks/get, tasks/result, tasks/cancel and
// tasks/list.
func (s *Session) handleTask(ctx context.Context, m *wire.Message, stream Stream) Reply {
	if s.stateless {
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s is not part of %s", m.Method, StatelessVersion))
	}
	g := s.gw
	if m.Method == "tasks/list" {
		return s.listTasks(ctx, m)
	}
	id, _ := wire.GetString(m.Params, "taskId")
	tk := g.tasks.lookup(g.taskOwner(s), id)
	if tk == nil {
		return taskNotFound(id)
	}
	if why := tk.lost(); why != "" {
		return g.lostTask(tk, m.Method, why)
	}
	if isStateless(tk.up) {
		return s.handleTaskOnModern(ctx, m, stream, tk)
	}
	params, err := wire.SetString(m.Params, "taskId", tk.upID)
	if err != nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
	}
	reply := s.forwardOn(ctx, m, stream, tk.srv, tk.up, params, nil)
	if why := tk.lost(); why != "" {
		// The request found the server's process gone and started a new
		// one, which knows nothing of the task.
		return g.lostTask(tk, m.Method, why)
	}
	return g.taskReply(tk, m.Method, reply)
}

// lostTask answers a request about a task whose server was lost: the task
// has failed, saying why.
func (g *Gateway) lostTask(tk *task, method, why string) Reply {
	switch method {
	case "tasks/get":
		g.tasks.mu.Lock()
		defer g.tasks.mu.Unlock()
		return Reply{Result: tk.viewV1()}
	case "tasks/cancel":
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "Cannot cancel task in terminal status: failed (%s)", why))
	}
	return errorReply(wire.Errorf(wire.CodeInternalError, "%s", why))
}

// taskReply gives a server's answer about a task the client's ids, and
// records the status it tells.
func (g *Gateway) taskReply(tk *task, method string, reply Reply) Reply {
	if reply.Error != nil {
		if we := wire.DecodeError(reply.Error); we != nil && strings.Contains(we.Message, tk.upID) {
			we.Message = strings.ReplaceAll(we.Message, tk.upID, tk.id)
			reply.Error = we.Marshal()
		}
		return reply
	}
	reply.Result = g.clientView(tk, reply.Result)
	g.tasks.mu.Lock()
	switch method {
	case "tasks/get", "tasks/cancel":
		tk.keep(reply.Result)
	case "tasks/result":
		tk.terminal = true // a result is given only once the task has ended
	}
	g.tasks.mu.Unlock()
	return reply
}

// listTasks answers tasks/list with the caller's own tasks, across servers,
// in pages of the gateway's own cursor. Running tasks' statuses are asked
// of their servers first, since not every server tells each change.
func (s *Session) listTasks(ctx context.Context, m *wire.Message) Reply {
	g := s.gw
	offset := 0
	if c, ok := wire.GetString(m.Params, "cursor"); ok {
		var valid bool
		if offset, valid = decodeCursor(c); !valid {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "tasks/list: invalid cursor"))
		}
	}
	owner := g.taskOwner(s)
	t := &g.tasks
	t.mu.Lock()
	var mine []*task
	if h := t.owned[owner]; h != nil {
		t.prune(h, time.Now())
		mine = append(mine, h.tasks...)
	}
	t.mu.Unlock()
	pageSize := g.Router.opts.PageSize
	if offset > len(mine) {
		offset = len(mine)
	}
	page := mine[offset:min(len(mine), offset+pageSize)]
	items := make([]json.RawMessage, 0, len(page))
	for _, tk := range page {
		t.mu.Lock()
		running := !tk.finished()
		t.mu.Unlock()
		if running && isStateless(tk.up) {
			if r := s.getModern(ctx, m, nil, tk); r.Error == nil {
				s.askInTheBackground(tk, r.Result)
			}
		} else if running {
			params := wire.AppendString([]byte(`{"taskId":`), tk.upID)
			params = append(params, '}')
			get := &wire.Message{ID: m.ID, Method: "tasks/get", Params: params}
			g.taskReply(tk, "tasks/get", s.forwardOn(ctx, get, nil, tk.srv, tk.up, params, nil))
		}
		t.mu.Lock()
		v := tk.viewV1()
		t.mu.Unlock()
		if v != nil {
			items = append(items, v)
		}
	}
	res := map[string]any{"tasks": items}
	if next := offset + len(page); next < len(mine) {
		res["nextCursor"] = encodeCursor(next)
	}
	return Reply{Result: mustJSON(res)}
}

// taskStatus routes a server's notifications/tasks/status to the client
// that created the task, under its id; one of a task nobody here holds is
// dropped.
func (g *Gateway) taskStatus(up Upstream, params json.RawMessage) {
	upID, _ := wire.GetString(params, "taskId")
	t := &g.tasks
	t.mu.Lock()
	tk := t.byUp[taskKey{up, upID}]
	if tk == nil {
		t.mu.Unlock()
		return
	}
	params = g.clientView(tk, params)
	tk.keep(params)
	sess := tk.sess
	t.mu.Unlock()
	select {
	case <-sess.done:
	default:
		sess.send(wire.AppendNotification(nil, "notifications/tasks/status", params))
	}
}

// relatedTask rewrites the related-task of a server's message to a client
// (the server's id of a task to the gateway's) and returns the session of
// that task, or nil when the message relates to no task of the gateway's.
func (g *Gateway) relatedTask(up Upstream, params json.RawMessage) (json.RawMessage, *Session) {
	upID, ok := wire.GetString(wire.Get(wire.Get(params, "_meta"), MetaRelatedTask), "taskId")
	if !ok {
		return params, nil
	}
	g.tasks.mu.Lock()
	tk := g.tasks.byUp[taskKey{up, upID}]
	g.tasks.mu.Unlock()
	if tk == nil {
		return params, nil
	}
	if out := setRelatedTask(params, tk.upID, tk.id); out != nil {
		params = out
	}
	return params, tk.sess
}

// taskArea names the client capability (under tasks.requests) that lets a
// server ask a client to run a request as a task.
var taskArea = map[string][2]string{
	"sampling/createMessage": {"sampling", "createMessage"},
	"elicitation/create":     {"elicitation", "create"},
}

// askClient sends a server's request to a client and returns its answer.
// A task-augmented one goes as it is when the client can run it as a task
// (its answer's task id becomes one of the gateway's, bound to the server),
// else without its task: the client answers at once, which the server
// takes as the request's result.
func (g *Gateway) askClient(ctx context.Context, sess *Session, srv *server, stream Stream, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	augment := wire.Get(params, "task")
	if augment == nil {
		return sess.request(ctx, stream, method, params)
	}
	area, ok := taskArea[method]
	if !ok || wire.Get(wire.Get(wire.Get(wire.Get(sess.capabilities, "tasks"), "requests"), area[0]), area[1]) == nil {
		params, _ = wire.Delete(params, "task")
		return sess.request(ctx, stream, method, params)
	}
	res, werr := sess.request(ctx, stream, method, params)
	if werr != nil {
		return res, werr
	}
	taskObj := wire.Get(res, "task")
	clientID, ok := wire.GetString(taskObj, "taskId")
	if !ok {
		return res, nil
	}
	ct := &clientTask{id: g.newID("gw-task-"), clientID: clientID, sess: sess, srv: srv, expires: time.Now().Add(g.maxTaskTTL())}
	if taskObj, err := wire.SetString(taskObj, "taskId", ct.id); err == nil {
		if out, err := wire.Set(res, "task", taskObj); err == nil {
			res = out
		}
	}
	t := &g.tasks
	t.mu.Lock()
	if t.asked == nil {
		t.asked, t.askedOf = map[string]*clientTask{}, map[*Session][]*clientTask{}
	}
	now := time.Now()
	kept := t.askedOf[sess][:0]
	for _, old := range t.askedOf[sess] {
		if now.After(old.expires) {
			delete(t.asked, old.id)
			continue
		}
		kept = append(kept, old)
	}
	if len(kept) >= g.maxTasks() {
		delete(t.asked, kept[0].id) // the oldest the client was asked to run
		kept = kept[1:]
	}
	t.asked[ct.id] = ct
	t.askedOf[sess] = append(kept, ct)
	t.mu.Unlock()
	return res, nil
}

// serverTaskRequest routes a server's tasks/get, tasks/result, tasks/cancel
// of a task it had a client create to that client, under the client's id.
// handled is false for any other request.
func (g *Gateway) serverTaskRequest(ctx context.Context, srv *server, method string, params json.RawMessage) (res json.RawMessage, werr *wire.Error, handled bool) {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel":
	case "tasks/list":
		return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: the gateway does not list a client's tasks to a server; poll each task with tasks/get"), true
	default:
		return nil, nil, false
	}
	id, _ := wire.GetString(params, "taskId")
	t := &g.tasks
	t.mu.Lock()
	ct := t.asked[id]
	t.mu.Unlock()
	if ct == nil || ct.srv != srv || time.Now().After(ct.expires) {
		return nil, wire.Errorf(wire.CodeInvalidParams, "Task not found: %s", id), true
	}
	params, err := wire.SetString(params, "taskId", ct.clientID)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%s params: %v", method, err), true
	}
	params = setRelatedTask(params, id, ct.clientID)
	res, werr = ct.sess.request(ctx, ct.sess.streamOn(srv), method, params)
	if werr != nil {
		werr.Message = strings.ReplaceAll(werr.Message, ct.clientID, ct.id)
		return nil, werr, true
	}
	if got, ok := wire.GetString(res, "taskId"); ok && got == ct.clientID {
		res, _ = wire.SetString(res, "taskId", ct.id)
	}
	if out := setRelatedTask(res, ct.clientID, ct.id); out != nil {
		res = out
	}
	return res, nil, true
}

// streamOn is the stream of the session's call in flight on srv, or nil.
func (s *Session) streamOn(srv *server) Stream {
	if c := s.callOn(srv); c != nil {
		return c.stream
	}
	return nil
}

// callOn is the session's call in flight on srv, or nil.
func (s *Session) callOn(srv *server) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.server == srv {
			return c
		}
	}
	return nil
}

// bridgedTasks is what a 2026-07-28 server declaring the tasks extension
// offers session-era clients through the gateway, which bridges it: list
// (the gateway's own record), cancel and requests.tools.call.
var bridgedTasks = json.RawMessage(`{"capabilities":{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}}`)

// mergeTasks adds what a server's tasks capability offers to the gateway's
// merged one: list, cancel and requests.tools.call, each when some server
// offers it (the gateway lists and cancels only through the servers).
func mergeTasks(caps map[string]any, init json.RawMessage) {
	offered := wire.Get(wire.Get(init, "capabilities"), "tasks")
	if offered == nil || string(offered) == "null" {
		return
	}
	merged, _ := caps["tasks"].(map[string]any)
	if merged == nil {
		merged = map[string]any{}
		caps["tasks"] = merged
	}
	for _, c := range []string{"list", "cancel"} {
		if v := wire.Get(offered, c); v != nil && string(v) != "null" {
			merged[c] = map[string]any{}
		}
	}
	if v := wire.Get(wire.Get(wire.Get(offered, "requests"), "tools"), "call"); v != nil && string(v) != "null" {
		merged["requests"] = map[string]any{"tools": map[string]any{"call": map[string]any{}}}
	}
}

// ownUpstream is the session's own upstream session of a per-client
// server, or nil.
func (s *Session) ownUpstream(srv *server) Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ups[srv]
}
