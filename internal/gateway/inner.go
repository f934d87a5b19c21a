package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Inner calls: a built-in tool (a code-mode run) calling the view's tools
// on behalf of its caller. Each goes through the path a client's own
// tools/call takes (callNamed: the guard, its approval and audit record,
// the Observer, the call timeout, progress and cancellation), with an id of
// its own, and is linked to the built-in call that made it by its run id.

// runKey is the context key of a built-in call's run id.
type runKey struct{}

// innerKey marks the context of an inner call: a 2026-07-28 client cannot
// be handed an input-required result in the middle of a run, so the call
// runs on the run's goroutine and its approval is asked the way the run's
// own call would be (outerAskKey), or not at all.
type innerKey struct{}

// outerAskKey carries, in a 2026-07-28 call run in the background
// (guardedStateless), how its client is asked a form elicitation: the calls
// the run makes ask their approvals that way.
type outerAskKey struct{}

// RunOf returns the run id of the built-in tool call ctx belongs to, "" for
// none: the audit records of the calls it makes carry it.
func RunOf(ctx context.Context) string {
	id, _ := ctx.Value(runKey{}).(string)
	return id
}

func withRun(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runKey{}, id)
}

func isInner(ctx context.Context) bool { return ctx.Value(innerKey{}) != nil }

// outerAsk is the elicitation of the run's own 2026-07-28 call, nil without one.
func outerAsk(ctx context.Context) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	f, _ := ctx.Value(outerAskKey{}).(func(context.Context, json.RawMessage) (json.RawMessage, error))
	return f
}

// Run is the id of this built-in call (its run): the audit records of the
// calls it makes carry it.
func (c *BuiltinCall) Run() string { return c.run }

// Client is the calling client's name (its clientInfo.name).
func (c *BuiltinCall) Client() string {
	name, _ := wire.GetString(c.sess.clientInfo, "name")
	return name
}

// ProgressToken is the caller's progress token, nil without one.
func (c *BuiltinCall) ProgressToken() json.RawMessage {
	return wire.Get(wire.Get(c.Params, "_meta"), "progressToken")
}

// ToolRef is a tool of the view as a built-in sees it.
type ToolRef struct {
	Server  string          // its server's configured name
	Name    string          // its name at the server (policy and audit use it)
	Exposed string          // its name in tools/list (the one CallInner takes)
	Def     json.RawMessage // its definition as listed
	// Hidden: the guard hides it from the calling client's tools/list. A
	// call of it is still decided by the guard (refused, with the policy's
	// reason, as a client's own tools/call of it would be).
	Hidden bool
}

// Tools returns the servers' tools, in the view's order (every server's
// when servers is empty), marked Hidden when the calling client does not
// see them. The gateway's own tools are not among them.
func (c *BuiltinCall) Tools(servers []string) []ToolRef {
	g := c.sess.gw
	seen := g.listView(kindTools)
	base := g.Router.view(kindTools)
	key := strings.Join(servers, "\x00")
	if kept := g.toolRefs.Load(); kept != nil && kept.base == base && kept.seen == seen && kept.servers == key {
		return kept.refs
	}
	var only map[string]bool
	if len(servers) > 0 {
		only = make(map[string]bool, len(servers))
		for _, s := range servers {
			only[s] = true
		}
	}
	items := base.items
	out := make([]ToolRef, 0, len(items))
	for _, it := range items {
		if it.server.builtin != nil || only != nil && !only[it.server.name] {
			continue
		}
		name, _ := wire.GetString(it.def, "name")
		out = append(out, ToolRef{Server: it.server.name, Name: it.original, Exposed: name, Def: it.def, Hidden: seen.byKey[name] != it})
	}
	g.toolRefs.Store(&toolRefsCache{base: base, seen: seen, servers: key, refs: out})
	return out
}

// toolRefsCache is the tools of a view as a guarded view shows them, of
// some servers: the same until either view changes. Its refs are shared:
// callers do not change them.
type toolRefsCache struct {
	base, seen *view
	servers    string
	refs       []ToolRef
}

// ServerNames are the names of the gateway's servers (not its own tools).
func (c *BuiltinCall) ServerNames() []string { return c.sess.gw.Router.Servers() }

// CallInner calls a tool of the view by its exposed name on behalf of the
// calling client, as one of this built-in call's inner calls: through the
// same path as the client's own tools/call (policy with the client as
// principal, approval, an audit record linked to the run, metrics and a
// span under the run's, the call timeout), under an id of its own. Its
// progress reaches the caller under the caller's progress token, counted
// across the run and with a message naming label. Cancelling ctx (the run)
// cancels it at its server. It returns the CallToolResult, or an error for
// a JSON-RPC error.
func (c *BuiltinCall) CallInner(ctx context.Context, name, label string, arguments json.RawMessage, progress *atomic.Uint64) (json.RawMessage, error) {
	if it := c.sess.gw.Router.view(kindTools).byKey[name]; it != nil && it.server.builtin != nil {
		return nil, fmt.Errorf("%s is one of the gateway's own tools: a program calls servers' tools only", name)
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage(`{}`)
	}
	params := wire.AppendString([]byte(`{"name":`), name)
	params = append(params, `,"arguments":`...)
	params = append(params, arguments...)
	var stream Stream = c.stream
	if tok := c.ProgressToken(); tok != nil {
		params = append(params, `,"_meta":{"progressToken":`...)
		params = append(params, tok...)
		params = append(params, '}')
		stream = &labelledProgress{Stream: c.stream, label: label, seq: progress}
	}
	params = append(params, '}')
	n := c.inner.Add(1)
	id := wire.AppendString(nil, c.run+"/"+strconv.FormatUint(n, 10))
	m := &wire.Message{ID: id, Method: "tools/call", Params: params}
	ctx = context.WithValue(ctx, innerKey{}, true)
	reply := c.sess.callNamed(ctx, m, stream, kindTools, "Unknown tool: %s")
	if reply.Error != nil {
		return nil, wire.DecodeError(reply.Error)
	}
	return reply.Result, nil
}

// labelledProgress is the stream of an inner call: its progress goes to
// the caller numbered across the run (one token carries every inner call's
// progress, which must keep increasing), with a message naming the call.
type labelledProgress struct {
	Stream
	label string
	seq   *atomic.Uint64
}

func (p *labelledProgress) Send(msg []byte) error {
	if m, ok := wire.GetString(msg, "method"); !ok || m != "notifications/progress" {
		return p.Stream.Send(msg)
	}
	params := wire.Get(msg, "params")
	text := p.label
	if m, _ := wire.GetString(params, "message"); m != "" {
		text += ": " + m
	}
	if v := wire.Get(params, "progress"); v != nil {
		text += " (" + string(v)
		if t := wire.Get(params, "total"); t != nil {
			text += "/" + string(t)
		}
		text += ")"
	}
	params, _ = wire.Delete(params, "total")
	params, err := wire.Set(params, "progress", json.RawMessage(strconv.FormatUint(p.seq.Add(1), 10)))
	if err == nil {
		params, err = wire.Set(params, "message", wire.AppendString(nil, text))
	}
	if err != nil {
		return p.Stream.Send(msg)
	}
	return p.Stream.Send(wire.AppendNotification(nil, "notifications/progress", params))
}

// SetBuiltin adds one of the gateway's own tools (Generated: SetBuiltins
// keeps it), or replaces the one of its name; every client hears
// list_changed.
func (r *Router) SetBuiltin(b Builtin) error {
	name, ok := wire.GetString(b.Tool, "name")
	if !ok || name == "" {
		return fmt.Errorf("a built-in tool without a name: %s", b.Tool)
	}
	b.Generated = true
	r.builtinMu.Lock()
	defer r.builtinMu.Unlock()
	tools := r.builtinsExcept(name)
	return r.setBuiltins(append(tools, b))
}

// RemoveBuiltin removes one of the gateway's own tools; it reports whether
// there was one of that name.
func (r *Router) RemoveBuiltin(name string) bool {
	r.builtinMu.Lock()
	defer r.builtinMu.Unlock()
	old := r.server(BuiltinServer)
	if old == nil {
		return false
	}
	if _, ok := old.builtin[name]; !ok {
		return false
	}
	_ = r.setBuiltins(r.builtinsExcept(name))
	return true
}

// Builtin returns the gateway's own tool of that name.
func (r *Router) Builtin(name string) (Builtin, bool) {
	s := r.server(BuiltinServer)
	if s == nil {
		return Builtin{}, false
	}
	b, ok := s.builtin[name]
	return b, ok
}

// builtinsExcept lists the current built-in tools in their listed order,
// without the one named; builtinMu is held.
func (r *Router) builtinsExcept(name string) []Builtin {
	old := r.server(BuiltinServer)
	if old == nil {
		return nil
	}
	var out []Builtin
	for _, def := range old.items[kindTools.index] {
		if n, _ := wire.GetString(def, "name"); n != name {
			out = append(out, old.builtin[n])
		}
	}
	return out
}

// sortedBuiltins are the names of a built-in map, sorted.
func sortedBuiltins(m map[string]Builtin) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// replaceBuiltinServer puts s in the place of the built-in tools' server
// in one step, so a call never finds the gateway's own tools missing.
func (r *Router) replaceBuiltinServer(s *server) {
	r.serversMu.Lock()
	next := slices.Clone(r.all())
	var old *server
	if i := slices.IndexFunc(next, func(x *server) bool { return x.builtin != nil }); i >= 0 {
		old, next[i] = next[i], s
	} else {
		next = append([]*server{s}, next...)
	}
	r.servers.Store(&next)
	r.serversMu.Unlock()
	if old != nil {
		close(old.gone)
		r.rebuildMu.Lock()
		for _, c := range r.claims {
			c.release(old)
		}
		r.rebuildMu.Unlock()
	}
}

// trackBuiltin makes a built-in call cancellable by its client
// (notifications/cancelled of its id, the end of its session): its inner
// calls, which have ids of their own, end with it. stop forgets it.
func (s *Session) trackBuiltin(ctx context.Context, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &call{sess: s, id: string(id), cancel: cancel}
	s.mu.Lock()
	if s.calls[c.id] == nil {
		s.calls[c.id] = c
	}
	s.mu.Unlock()
	return ctx, func() {
		cancel()
		s.mu.Lock()
		if s.calls[c.id] == c {
			delete(s.calls, c.id)
		}
		s.mu.Unlock()
	}
}
