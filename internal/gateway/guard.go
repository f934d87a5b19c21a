package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Guard decides what a gateway's client may see and call (policy) and
// records what it calls (audit). The gateway consults it at one place per
// list request and one per call; nil lets everything through.
type Guard interface {
	// Visible reports whether an item of a merged list is shown.
	Visible(it GuardItem) bool
	// Version changes whenever Visible's answers may change, so the
	// filtered lists are computed again only then.
	Version() uint64
	// Admit decides a call before it runs. A non-nil error refuses it
	// (the client gets that error); otherwise done is called with the
	// call's reply once it is over. It may wait (approval by a person).
	Admit(ctx context.Context, c *GuardCall) (done func(Reply), werr *wire.Error)
}

// Kinds of GuardItem.
const (
	GuardTool     = "tool"
	GuardPrompt   = "prompt"
	GuardResource = "resource"
	GuardTemplate = "template"
	GuardBuiltin  = "builtin" // one of the gateway's own tools
)

// GuardItem is a tool, prompt, resource or built-in tool as the guard sees
// it: by its server and its original name, never the exposed one.
type GuardItem struct {
	Kind   string
	Server string          // the server's name ("" for a built-in tool)
	Name   string          // the original name; a resource's URI
	Def    json.RawMessage // its definition as listed (annotations); nil for a read of an unlisted URI
	// Template is, for a resource URI, another name of MCP::Resource it is
	// decided by as well: a forbid of it refuses the URI too. It is a listed
	// template the URI matches (a forbid hides the template from the list;
	// without this, a read of a URI made from it would go through), or the
	// first of the listed resources and templates its server could resolve
	// it to that a forbid refuses (see resourceuri.go and decideCandidates).
	Template string
	settled  bool // decideCandidates has set Template
}

// GuardCall is one call the guard decides.
type GuardCall struct {
	GuardItem
	Method     string
	Arguments  json.RawMessage // a tool's arguments or a prompt's; nil otherwise
	ClientInfo json.RawMessage
	Stateless  bool // a 2026-07-28 request
	// Elicit asks the client a form elicitation (elicitation/create's
	// params) and returns its result; nil when the client cannot be asked.
	Elicit func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// Refers marks a request that refers to the item without using it
	// (completion/complete, resources/subscribe): it is decided like a use
	// of the item, so the client learns nothing it could not read, but
	// nobody is asked: a decision needing approval refuses it.
	Refers bool
	// Run is the id of the built-in tool call (a code-mode run, mcp-exec)
	// this call is, or was made by (an inner call); "" for neither. The
	// audit record carries it, linking a run's inner calls to it.
	Run string
}

// guardedView is a view filtered by the guard, for one base view and
// guard version.
type guardedView struct {
	base    *view
	version uint64
	v       *view
}

// listView returns the view of kind k the session's client sees. When the
// guard's decisions changed what it shows, the clients hear list_changed:
// whoever computes the new filtered view first (GuardChanged, or a list
// request that comes before it) compares it with the one it replaces.
func (g *Gateway) listView(k *listKind) *view {
	base := g.Router.view(k)
	if g.Guard == nil {
		return base
	}
	ver := g.Guard.Version()
	slot := &g.guarded[k.index]
	old := slot.Load()
	if old != nil && old.base == base && old.version == ver {
		return old.v
	}
	v := g.filter(base)
	// A changed base was announced by the router; a changed guard is announced here.
	if slot.CompareAndSwap(old, &guardedView{base: base, version: ver, v: v}) &&
		old != nil && old.base == base && old.version != ver && !v.sameAs(old.v) {
		g.clients.listChanged(k)
	}
	return v
}

// filter returns base less what the guard hides.
func (g *Gateway) filter(base *view) *view {
	var kept []*item
	for _, it := range base.items {
		if g.Guard.Visible(guardItem(base.kind, it)) {
			kept = append(kept, it)
		}
	}
	if len(kept) == len(base.items) {
		return base
	}
	v := &view{kind: base.kind, byKey: make(map[string]*item, len(kept)), items: kept, pageSize: base.pageSize}
	for _, it := range kept {
		name, _ := wire.GetString(it.def, base.kind.key)
		v.byKey[name] = it
	}
	v.pages = encodePages(kept, base.kind.field, base.pageSize)
	return v
}

func guardItem(k *listKind, it *item) GuardItem {
	gi := GuardItem{Server: it.server.name, Name: it.original, Def: it.def}
	switch {
	case it.server.builtin != nil:
		gi.Kind, gi.Server = GuardBuiltin, ""
	case k == kindTools:
		gi.Kind = GuardTool
	case k == kindPrompts:
		gi.Kind = GuardPrompt
	case k == kindTemplates:
		gi.Kind = GuardTemplate
	default:
		gi.Kind = GuardResource
	}
	return gi
}

// resourceItem is the GuardItem of a resource by URI, served by srv.
func (r *Router) resourceItem(srv *server, uri string) GuardItem {
	gi := GuardItem{Kind: GuardResource, Server: srv.name, Name: uri}
	if r.view(kindResources).byKey[uri] == nil {
		for _, it := range r.view(kindTemplates).items {
			if it.server == srv && it.match.matches(uri) {
				gi.Template = it.original
				break
			}
		}
	}
	return gi
}

// Restriction is how a guard's policies hold a use of an item, from the
// least to the most restrictive; it compares the candidates of a resource
// URI (decideCandidates).
type Restriction int

const (
	Unrestricted  Restriction = iota // permitted (or left to the default)
	NeedsApproval                    // a matching permit requires approval
	Forbidden                        // a matching forbid refuses it
)

// restricter is a Guard that can tell quietly (no audit, nobody asked) how
// its policies hold a use of an item (internal/policy's Guard).
type restricter interface {
	Restricts(c *GuardCall) Restriction
}

// decideCandidates makes a resource call decided by every listed resource
// and template its server could resolve the URI to (resourceCandidates):
// the most restrictive (the first a forbid refuses, else the first whose
// permit requires approval) becomes the call's Template, which the guard
// honours (its forbid refuses the call, its approval is asked, and it is
// named in the error and the audit record). A guard that cannot tell is
// given the first candidate, when the call has no Template yet.
func (g *Gateway) decideCandidates(c *GuardCall) {
	if c.Kind != GuardResource || c.settled {
		return
	}
	c.settled = true
	candidates := g.Router.resourceCandidates(c.Server, c.Name)
	if len(candidates) == 0 {
		return
	}
	f, ok := g.Guard.(restricter)
	if !ok {
		if c.Template == "" {
			c.Template = candidates[0]
		}
		return
	}
	strictest, chosen := Unrestricted, ""
	for _, name := range candidates {
		probe := *c
		probe.GuardItem = GuardItem{Kind: GuardResource, Server: c.Server, Name: name}
		if r := f.Restricts(&probe); r > strictest {
			strictest, chosen = r, name
			if r == Forbidden {
				break
			}
		}
	}
	if chosen != "" {
		c.Template = chosen
	}
}

// GuardChanged computes the filtered lists again after the guard's
// decisions changed (a policy was set or removed), and tells the clients
// of each list that changed (see listView).
func (g *Gateway) GuardChanged() {
	if g.Guard == nil {
		return
	}
	for _, k := range kinds {
		if g.guarded[k.index].Load() != nil { // never listed: nobody has seen it
			g.listView(k)
		}
	}
}

// guarded runs a call through the guard: refused, or forwarded along rt
// and reported.
func (s *Session) guarded(ctx context.Context, m *wire.Message, stream Stream, gi GuardItem, rt route) Reply {
	if werr := foldedArgument(m, gi); werr != nil {
		return errorReply(werr) // what the guard would decide on is not what the server would read
	}
	guard := s.gw.Guard
	if guard == nil {
		return s.forward(ctx, m, stream, rt)
	}
	c := &GuardCall{GuardItem: gi, Method: m.Method, ClientInfo: s.clientInfo, Stateless: s.stateless, Run: RunOf(ctx)}
	if m.Method == "tools/call" || m.Method == "prompts/get" {
		c.Arguments = wire.Get(m.Params, "arguments")
	}
	if gi.Kind == GuardBuiltin && c.Run == "" {
		c.Run = s.gw.newID("run-")
		ctx = withRun(ctx, c.Run)
	}
	s.gw.decideCandidates(c)
	canElicit := s.lacks("elicitation/create", json.RawMessage(`{"mode":"form"}`)) == ""
	inner := isInner(ctx)
	if s.stateless && inner {
		// A run's inner call cannot end in an input-required result: it is
		// asked the way the run's own call is, if it was (guardedStateless).
		c.Elicit = outerAsk(ctx)
	} else if s.stateless && canElicit && mayAsk(guard) {
		return s.guardedStateless(ctx, m, stream, c, rt)
	}
	if !s.stateless && canElicit {
		c.Elicit = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			res, werr := s.request(ctx, stream, "elicitation/create", params)
			if werr != nil {
				return nil, werr
			}
			return res, nil
		}
	}
	actx, stop := ctx, func() {}
	if !s.stateless && mayAsk(guard) {
		actx, stop = s.whileCallerWaits(ctx, m.ID)
	}
	done, werr := guard.Admit(actx, c)
	gone := actx.Err() != nil && ctx.Err() == nil
	stop()
	if gone && werr == nil { // answered as its caller went: it must not run
		werr = wire.Errorf(wire.CodeInternalError, "%s %q: the caller went away while the call waited for approval, so it was not run", m.Method, gi.Name)
	}
	if werr != nil {
		return s.denied(ctx, m, gi, werr)
	}
	reply := s.forward(ctx, m, stream, rt)
	if done != nil {
		done(reply)
	}
	return reply
}

// callerGoneKey is the context key of WithCallerGone.
type callerGoneKey struct{}

// WithCallerGone is ctx without its cancellation, for the session's Handle
// of a request whose connection is caller: a session-era call is not
// cancelled by that connection's end (the client may resume its stream),
// but a call still waiting for a person's approval is withdrawn, so nobody
// approves a call whose caller is gone. caller's Done is asked for only by
// a call that waits.
func WithCallerGone(ctx, caller context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), callerGoneKey{}, caller)
}

// whileCallerWaits is the context of a session-era call while the guard
// decides it (and may wait for approval): it ends when the client cancels
// the request (notifications/cancelled), its session ends, or the request's
// connection closes (WithCallerGone). stop forgets it.
func (s *Session) whileCallerWaits(ctx context.Context, id json.RawMessage) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &call{sess: s, id: string(id), cancel: cancel}
	s.mu.Lock()
	if s.calls[c.id] == nil { // a client reusing an id in flight cancels the first
		s.calls[c.id] = c
	}
	s.mu.Unlock()
	var gone <-chan struct{} // nil: never
	if caller, ok := ctx.Value(callerGoneKey{}).(context.Context); ok {
		gone = caller.Done()
	}
	watch := make(chan struct{})
	go func() {
		select {
		case <-s.done:
		case <-gone:
		case <-watch:
			return
		}
		cancel()
	}()
	return ctx, func() {
		close(watch)
		cancel()
		s.mu.Lock()
		if s.calls[c.id] == c {
			delete(s.calls, c.id)
		}
		s.mu.Unlock()
	}
}

// guardedRef runs a request that refers to an item (a completion of a
// prompt's argument or a resource template's, a subscription to a
// resource) through the guard, decided like a use of the item (Refers):
// refused, or run and reported. args are the arguments known so far.
func (s *Session) guardedRef(ctx context.Context, m *wire.Message, gi GuardItem, args json.RawMessage, run func() Reply) Reply {
	guard := s.gw.Guard
	if guard == nil {
		return run()
	}
	c := &GuardCall{GuardItem: gi, Method: m.Method, Arguments: args, ClientInfo: s.clientInfo, Stateless: s.stateless, Refers: true}
	s.gw.decideCandidates(c)
	done, werr := guard.Admit(ctx, c)
	if werr != nil {
		return s.denied(ctx, m, c.GuardItem, werr)
	}
	reply := run()
	if done != nil {
		done(reply)
	}
	return reply
}

// guardedCompletion runs a completion/complete of a prompt's argument or
// a resource template's through the guard (see guardedRef), deciding it
// with the arguments known so far: its context's resolved arguments and
// the value being completed. When the guard can decide quietly (Permits),
// each value the server proposes is decided the same way and the values a
// use with them would be denied are left out: a client must not learn
// through completions a value it could not use.
func (s *Session) guardedCompletion(ctx context.Context, m *wire.Message, stream Stream, gi GuardItem, rt route) Reply {
	if s.gw.Guard == nil {
		return s.forward(ctx, m, stream, rt)
	}
	args := map[string]any{}
	if raw := wire.Get(wire.Get(m.Params, "context"), "arguments"); raw != nil {
		_ = json.Unmarshal(raw, &args)
	}
	name, _ := wire.GetString(wire.Get(m.Params, "argument"), "name")
	value, _ := wire.GetString(wire.Get(m.Params, "argument"), "value")
	args[name] = value
	b, _ := json.Marshal(args)
	// The candidates are settled once, so each value is decided the same way.
	settled := &GuardCall{GuardItem: gi, Method: m.Method, Arguments: b, ClientInfo: s.clientInfo, Stateless: s.stateless, Refers: true}
	s.gw.decideCandidates(settled)
	gi = settled.GuardItem
	reply := s.guardedRef(ctx, m, gi, b, func() Reply { return s.forward(ctx, m, stream, rt) })
	q, ok := s.gw.Guard.(interface{ Permits(c *GuardCall) bool })
	if reply.Result == nil || !ok {
		return reply
	}
	comp := wire.Get(reply.Result, "completion")
	var values []string
	if err := json.Unmarshal(wire.Get(comp, "values"), &values); err != nil || len(values) == 0 {
		return reply
	}
	kept := values[:0:0]
	for _, v := range values {
		args[name] = v
		b, _ := json.Marshal(args)
		if q.Permits(&GuardCall{GuardItem: gi, Method: m.Method, Arguments: b, ClientInfo: s.clientInfo, Stateless: s.stateless, Refers: true}) {
			kept = append(kept, v)
		}
	}
	if len(kept) == len(values) {
		return reply
	}
	vb, _ := json.Marshal(kept)
	comp, err := wire.Set(comp, "values", vb)
	if err == nil {
		comp, _ = wire.Delete(comp, "total") // the server's count includes what is hidden
		reply.Result, err = wire.Set(reply.Result, "completion", comp)
	}
	if err != nil {
		return errorReply(wire.Errorf(wire.CodeInternalError, "filtering the completion's values: %v", err))
	}
	return reply
}

// DeniedMeta is the _meta key of a refused tools/call's result: its value
// is the refusal as the JSON-RPC error object any other method gets
// (code, message, data).
const DeniedMeta = "io.github.mcp-gateway/denied"

// denied answers a call the guard refused, and counts it with the
// Observer as a call that ended denied without reaching its server.
func (s *Session) denied(ctx context.Context, m *wire.Message, gi GuardItem, werr *wire.Error) Reply {
	reply := deniedReply(m.Method, werr)
	if o := s.gw.Observer; o != nil {
		server := gi.Server
		if server == "" {
			server = BuiltinServer
		}
		info := CallInfo{Server: server, Method: m.Method, ProtocolVersion: s.protocolVersion, RequestBytes: len(m.Params)}
		if m.Method == "tools/call" || m.Method == "prompts/get" {
			info.Name = gi.Name
		}
		_, end := o.StartCall(ctx, info)
		end(CallEnd{Reply: reply, Denied: true})
	}
	return reply
}

// deniedReply is the answer to a refused call: a JSON-RPC error, except
// for tools/call, whose refusal is a tool result with isError, so the
// model reads why (clients hand a tool's result to the model, while a
// JSON-RPC error is the client's, and some read it as a broken connection
// or a reason to retry); the error itself rides in its _meta (DeniedMeta),
// for programs that tell a refusal from a tool's own failure.
func deniedReply(method string, werr *wire.Error) Reply {
	if method != "tools/call" {
		return errorReply(werr)
	}
	res, err := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": werr.Message}},
		"isError": true,
		"_meta":   map[string]json.RawMessage{DeniedMeta: werr.Marshal()},
	})
	if err != nil {
		return errorReply(werr)
	}
	return Reply{Result: res}
}

// mayAsk reports whether a guard may ask the client during Admit (it has
// an approval rule); a guard that does not say is taken to.
func mayAsk(g Guard) bool {
	if a, ok := g.(interface{ MayAsk() bool }); ok {
		return a.MayAsk()
	}
	return true
}

// guardedStateless admits and runs a 2026-07-28 client's call in the
// background, so the guard can ask the client (approval by elicitation):
// its question goes back as an input-required result, and the client's
// retry with the answer continues the call, as with a server's own
// questions (see forwardStateless).
func (s *Session) guardedStateless(ctx context.Context, m *wire.Message, stream Stream, c *GuardCall, rt route) Reply {
	g := s.gw
	events := make(chan callEvent, 4)
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inputWaitTTL)
	sw := &switchStream{cur: stream}
	c.Elicit = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		resp, _, err := g.askInput(ctx, events, "elicitation/create", params)
		switch {
		case err != nil:
			return nil, err
		case resp.Error != nil:
			return nil, wire.DecodeError(resp.Error)
		}
		return resp.Result, nil
	}
	w := &inputWait{method: m.Method, name: waitName(m.Params), events: events, stream: sw, cancel: cancel, client: clientKey(s.clientInfo)}
	callCtx = context.WithValue(callCtx, outerAskKey{}, c.Elicit)
	go func() {
		defer cancel()
		var reply Reply
		done, werr := g.Guard.Admit(callCtx, c)
		if werr != nil {
			reply = s.denied(callCtx, m, c.GuardItem, werr)
		} else {
			reply = s.forward(callCtx, m, sw, rt)
			if done != nil {
				done(reply)
			}
		}
		g.endWait(w)
		select { // nobody may be waiting any more: never block
		case events <- callEvent{reply: reply}:
		default:
		}
	}()
	return g.await(ctx, w, cancel)
}

// guardCache is embedded in Gateway: the filtered views, by kind.
type guardCache = [4]atomic.Pointer[guardedView]
