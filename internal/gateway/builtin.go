package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// BuiltinServer is the name the gateway's own tools are listed under in
// logs; no registered server may take it.
const BuiltinServer = "mcp-gateway"

// Builtin is a tool the gateway serves itself (host mode's mcp-find,
// mcp-add, mcp-config-set, mcp-exec). Its name is reserved: it is listed
// first and keeps its name, and a server's tool of the same name is renamed
// by the naming rule.
type Builtin struct {
	// Tool is its definition as listed (a Tool object with a "name").
	Tool json.RawMessage
	// Call runs it and returns a CallToolResult. An error becomes a tool
	// error result (isError) carrying its message.
	Call func(ctx context.Context, c *BuiltinCall) (json.RawMessage, error)
	// Generated marks a tool added while the gateway runs (SetBuiltin,
	// a code-mode tool): SetBuiltins keeps it.
	Generated bool
	// Observed: a call of it passes the Observer like a forwarded call
	// (metrics, a span), so the calls it makes (CallInner) are counted and
	// traced under it.
	Observed bool
}

// BuiltinCall is one call of a built-in tool.
type BuiltinCall struct {
	// Arguments are the call's arguments object, raw ("{}" when absent).
	Arguments json.RawMessage
	// Params are the call's params as sent: a 2026-07-28 client's retry of
	// an input_required result carries its requestState and
	// inputResponses there.
	Params json.RawMessage

	// Name is the tool's name.
	Name string

	sess   *Session
	stream Stream
	id     json.RawMessage
	run    string // the call's run id: the calls it makes are linked to it (RunOf)
	inner  atomic.Uint64
}

// Ask sends a request (elicitation/create, ...) to the calling client and
// waits for its answer. asked is false, with no error, when the client
// cannot be asked: it is of the 2026-07-28 era, or did not declare the
// capability (for an elicitation, its mode).
func (c *BuiltinCall) Ask(ctx context.Context, method string, params json.RawMessage) (result json.RawMessage, asked bool, err error) {
	if c.sess.stateless || c.sess.lacks(method, params) != "" {
		return nil, false, nil
	}
	res, werr := c.sess.request(ctx, c.stream, method, params)
	if werr != nil {
		return nil, true, werr
	}
	return res, true, nil
}

// CanRequireInput reports whether the calling client is of the
// 2026-07-28 era and declared what method (params) needs, so that the tool
// may answer with an input_required result asking it; the client retries
// the call with its answer (Params' inputResponses) and the result's
// requestState, which must not start with the gateway's own "mcp-gateway:".
func (c *BuiltinCall) CanRequireInput(method string, params json.RawMessage) bool {
	return c.sess.stateless && c.sess.lacks(method, params) == ""
}

// CallTool calls a tool of the view by its exposed name on behalf of the
// same client, with what the client's own call would get: its progress,
// its requests for input, its server sessions. It returns the tool's
// CallToolResult, or an error for a JSON-RPC error.
func (c *BuiltinCall) CallTool(ctx context.Context, name string, arguments json.RawMessage) (json.RawMessage, error) {
	if it := c.sess.gw.Router.view(kindTools).byKey[name]; it != nil && it.server.builtin != nil && !it.server.builtin[it.original].Generated {
		return nil, fmt.Errorf("%s is one of the gateway's own tools: call it directly", name)
	}
	if len(arguments) == 0 {
		arguments = json.RawMessage(`{}`)
	}
	params := wire.AppendString([]byte(`{"name":`), name)
	params = append(params, `,"arguments":`...)
	params = append(params, arguments...)
	params = append(params, '}')
	m := &wire.Message{ID: c.id, Method: "tools/call", Params: params}
	reply := c.sess.callNamed(ctx, m, c.stream, kindTools, "Unknown tool: %s")
	if reply.Error != nil {
		return nil, wire.DecodeError(reply.Error)
	}
	return reply.Result, nil
}

// SetBuiltins gives the router the gateway's own tools (replacing any
// given before, except the Generated ones, which stay).
func (r *Router) SetBuiltins(tools []Builtin) error {
	r.builtinMu.Lock()
	defer r.builtinMu.Unlock()
	if old := r.server(BuiltinServer); old != nil {
		for _, name := range sortedBuiltins(old.builtin) {
			if b := old.builtin[name]; b.Generated && !slices.ContainsFunc(tools, func(t Builtin) bool { n, _ := wire.GetString(t.Tool, "name"); return n == name }) {
				tools = append(tools, b)
			}
		}
	}
	return r.setBuiltins(tools)
}

// setBuiltins makes tools the gateway's own; builtinMu is held.
func (r *Router) setBuiltins(tools []Builtin) error {
	byName := make(map[string]Builtin, len(tools))
	defs := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		name, ok := wire.GetString(t.Tool, "name")
		if !ok || name == "" {
			return fmt.Errorf("a built-in tool without a name: %s", t.Tool)
		}
		byName[name] = t
		defs[i] = t.Tool
	}
	s := newServer(&builtinUpstream{defs: defs})
	s.builtin = byName
	s.state = "ready"
	s.items[kindTools.index] = defs
	s.listedGen.Store(1)
	r.replaceBuiltinServer(s)
	r.rebuild(kindTools)
	return nil
}

// callBuiltin runs one of the gateway's own tools.
func (s *Session) callBuiltin(ctx context.Context, m *wire.Message, stream Stream, it *item) Reply {
	t := it.server.builtin[it.original]
	args := wire.Get(m.Params, "arguments")
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if stream == nil {
		stream = noStream{}
	}
	ctx, stop := s.trackBuiltin(ctx, m.ID)
	defer stop()
	bc := &BuiltinCall{Arguments: args, Params: m.Params, Name: it.original, sess: s, stream: stream, id: m.ID, run: RunOf(ctx)}
	if bc.run == "" {
		bc.run = s.gw.newID("run-")
	}
	ctx = withRun(ctx, bc.run)
	var end func(CallEnd)
	if o := s.gw.Observer; o != nil && t.Observed {
		ctx, end = o.StartCall(ctx, CallInfo{Server: BuiltinServer, Method: m.Method, Name: it.original, ProtocolVersion: s.protocolVersion, RequestBytes: len(m.Params)})
	}
	var reply Reply
	result, err := t.Call(ctx, bc)
	if err != nil {
		reply = Reply{Result: toolError(err.Error())}
	} else {
		reply = Reply{Result: result}
	}
	if end != nil {
		end(CallEnd{Reply: reply})
	}
	return reply
}

// Tools returns the exposed definitions of one server's tools.
func (r *Router) Tools(server string) []json.RawMessage {
	var defs []json.RawMessage
	for _, it := range r.view(kindTools).items {
		if it.server.name == server && it.server.builtin == nil {
			defs = append(defs, it.def)
		}
	}
	return defs
}

// builtinUpstream stands for the gateway's own tools where the router
// expects an upstream: it lists them; calls never reach it (forward runs
// them).
type builtinUpstream struct{ defs []json.RawMessage }

func (b *builtinUpstream) Name() string                    { return BuiltinServer }
func (b *builtinUpstream) Start(ctx context.Context) error { return nil }
func (b *builtinUpstream) Notify(context.Context, string, json.RawMessage) error {
	return nil
}
func (b *builtinUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"capabilities":{"tools":{"listChanged":true}}}`)
}
func (b *builtinUpstream) Generation() uint64 { return 1 }
func (b *builtinUpstream) Close() error       { return nil }

func (b *builtinUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	if method != "tools/list" {
		return &wire.Response{Error: wire.Errorf(wire.CodeMethodNotFound, "%s is not served by the gateway's own tools", method).Marshal()}, nil
	}
	list, _ := json.Marshal(map[string]any{"tools": b.defs})
	return &wire.Response{Result: list}, nil
}
