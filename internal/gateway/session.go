package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// SessionVersions are the session-based protocol versions the gateway serves,
// newest first.
var SessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Session is one downstream client: of the session era (2025-11-25 and
// earlier), one per initialized session, kept by the front; of the
// 2026-07-28 era, one per request (statelessSession) or listen stream.
type Session struct {
	gw              *Gateway
	protocolVersion string
	clientInfo      json.RawMessage
	capabilities    json.RawMessage
	// unasked: a server's request during this 2026-07-28 request's call
	// waits to go out in an input-required result (see callerOf).
	unasked atomic.Bool

	out       chan []byte
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	calls    map[string]*call              // in flight, by the client's request id
	outgoing map[string]chan *wire.Message // requests to the client, by the gateway's id
	logLevel int                           // index in logLevels; -1: never set
	subs     map[string]struct{}           // subscribed resource URIs

	ups       map[*server]Upstream // this client's own sessions of per-client servers
	upsClosed bool                 // Close has closed ups: a session started later is closed, not kept

	// A 2026-07-28 request: one request's client, without a session.
	stateless bool
	inputs    chan callEvent // the call's input requests and final reply
	direct    bool           // a 2026-07-28 call runs on its request's goroutine
	failure   *wire.Error    // why failStateless ended that call
}

// Gateway is the gateway the session belongs to.
func (s *Session) Gateway() *Gateway { return s.gw }

// ProtocolVersion is the version negotiated at initialize.
func (s *Session) ProtocolVersion() string { return s.protocolVersion }

// Outbox carries server-initiated messages for the client's GET stream.
func (s *Session) Outbox() <-chan []byte { return s.out }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close ends the session: its calls are cancelled and its subscriptions dropped.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		g := s.gw
		g.clients.remove(s)
		s.mu.Lock()
		calls := make([]*call, 0, len(s.calls))
		for _, c := range s.calls {
			calls = append(calls, c)
		}
		uris := make([]string, 0, len(s.subs))
		for u := range s.subs {
			uris = append(uris, u)
		}
		s.mu.Unlock()
		for _, c := range calls {
			c.cancel()
		}
		for _, u := range uris {
			g.unsubscribe(context.Background(), s, u, nil, nil)
		}
		s.mu.Lock()
		ups := s.ups
		s.ups, s.upsClosed = nil, true
		s.mu.Unlock()
		for _, up := range ups {
			_ = up.Close()
		}
		g.forgetTasks(s)
		close(s.done)
	})
}

// send queues a server-initiated message for the client's GET stream,
// dropping it when the client is not reading.
func (s *Session) send(msg []byte) {
	select {
	case s.out <- msg:
	default:
	}
}

// hasCapability reports whether the client declared a capability.
func (s *Session) hasCapability(name string) bool {
	v := wire.Get(s.capabilities, name)
	return v != nil && string(v) != "null"
}

// lacks names the client capability a server request needs and the client
// did not declare, or "" when it has it. An elicitation needs the mode it
// uses ("form" when absent, which an empty elicitation capability implies).
func (s *Session) lacks(method string, params json.RawMessage) string {
	capability := clientCapabilityFor[method]
	if !s.hasCapability(capability) {
		return capability
	}
	if method != "elicitation/create" {
		return ""
	}
	mode, _ := wire.GetString(params, "mode")
	if mode == "" {
		mode = "form"
	}
	declared := wire.Get(s.capabilities, "elicitation")
	if wire.Get(declared, mode) != nil {
		return ""
	}
	if mode == "form" && wire.Get(declared, "url") == nil {
		return "" // {} is the form mode of clients before 2025-11-25
	}
	return "elicitation." + mode
}

// canBeAsked reports whether the client declared a capability a server
// may ask it to use during a call (sampling, elicitation, roots).
func (s *Session) canBeAsked() bool {
	for _, c := range clientCapabilityFor {
		if s.hasCapability(c) {
			return true
		}
	}
	return false
}

// Initialize answers an initialize request and returns the new session.
func (g *Gateway) Initialize(params json.RawMessage) (*Session, json.RawMessage, *wire.Error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil, nil, wire.Errorf(wire.CodeInvalidParams, "initialize needs params with protocolVersion, capabilities and clientInfo")
	}
	version := SessionVersions[0]
	if slices.Contains(SessionVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s := &Session{
		gw: g, protocolVersion: version, clientInfo: p.ClientInfo, capabilities: p.Capabilities,
		out: make(chan []byte, outboxSize), done: make(chan struct{}),
		calls: map[string]*call{}, logLevel: -1, // outgoing and subs are made when first needed
	}
	g.clients.add(s)
	res := initializeResult{
		ProtocolVersion: version,
		Capabilities:    g.Router.capabilities(),
		ServerInfo:      serverInfo{Name: g.Info.Name, Version: g.Info.Version},
		Instructions:    g.Router.instructions(),
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeInternalError, "encoding the initialize result: %v", err)
	}
	return s, b, nil
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      serverInfo     `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

// Handle answers one request of the session's client. Messages that belong
// to the request and come before its answer are written to stream.
func (s *Session) Handle(ctx context.Context, m *wire.Message, stream Stream) Reply {
	r := s.gw.Router
	switch m.Method {
	case "ping":
		return emptyResult
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		res, werr := s.gw.listView(kindByMethod(m.Method)).page(m.Params)
		if werr != nil {
			return errorReply(werr)
		}
		return Reply{Result: res}
	case "tools/call":
		if isAppCall(m.Params) || r.unexposedTool(m.Params) { // apps.go: an app's calls go to its own server
			return s.appCall(ctx, m, stream)
		}
		return r.appResult(m.Params, s.callNamed(ctx, m, stream, kindTools, "Unknown tool: %s"))
	case "prompts/get":
		return s.callNamed(ctx, m, stream, kindPrompts, "Unknown prompt: %s")
	case "resources/read":
		return s.readResource(ctx, m, stream) // apps.go: renamed ui:// URIs
	case "resources/subscribe":
		return s.gw.subscribe(ctx, s, m.Params, m, stream)
	case "resources/unsubscribe":
		uri, _ := wire.GetString(m.Params, "uri")
		s.gw.unsubscribe(ctx, s, uri, m, stream)
		return emptyResult
	case "completion/complete":
		return s.complete(ctx, m, stream)
	case "logging/setLevel":
		return s.gw.setLevel(ctx, s, m.Params)
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		return s.handleTask(ctx, m, stream)
	case "initialize":
		return errorReply(wire.Errorf(wire.CodeInvalidRequest, "this session is already initialized; start a new session to initialize again"))
	default:
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", m.Method))
	}
}

// resourceNotFound is the specification's error for an unknown resource in
// the client's era: -32002 until 2025-11-25, invalid params since.
func (s *Session) resourceNotFound(uri string) *wire.Error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	code := int64(-32002)
	if s.stateless {
		code = wire.CodeInvalidParams
	}
	return &wire.Error{Code: code, Message: "Resource not found: " + uri, Data: data}
}

// callNamed routes a request naming a tool or prompt: to its server, under
// the name the server knows it by, or to the gateway's own tool; the guard
// decides it first.
func (s *Session) callNamed(ctx context.Context, m *wire.Message, stream Stream, k *listKind, unknown string) Reply {
	name, ok := wire.GetString(m.Params, "name")
	if !ok {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s needs params.name", m.Method))
	}
	it := s.gw.Router.view(k).byKey[name]
	if it == nil {
		if why := s.gw.Router.unavailable(name); why != "" {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, unknown+": %s", name, why))
		}
		return errorReply(wire.Errorf(wire.CodeInvalidParams, unknown, name))
	}
	rt := route{srv: it.server, params: m.Params}
	switch {
	case it.server.builtin != nil:
		rt.builtin = it
	case it.original != name:
		var err error
		if rt.params, err = wire.SetString(m.Params, "name", it.original); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
		}
	}
	return s.guarded(ctx, m, stream, guardItem(k, it), rt)
}

// complete routes completion/complete by the prompt or resource it names.
func (s *Session) complete(ctx context.Context, m *wire.Message, stream Stream) Reply {
	r := s.gw.Router
	ref := wire.Get(m.Params, "ref")
	typ, _ := wire.GetString(ref, "type")
	switch typ {
	case "ref/prompt":
		name, _ := wire.GetString(ref, "name")
		it := r.view(kindPrompts).byKey[name]
		if it == nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "Unknown prompt: %s", name))
		}
		params := m.Params
		if it.original != name {
			newRef, err := wire.SetString(ref, "name", it.original)
			if err == nil {
				params, err = wire.Set(params, "ref", newRef)
			}
			if err != nil {
				return errorReply(wire.Errorf(wire.CodeInvalidParams, "completion/complete params: %v", err))
			}
		}
		// Decided like prompts/get of the prompt, with the arguments known so far.
		return s.guardedCompletion(ctx, m, stream, guardItem(kindPrompts, it), route{srv: it.server, params: params})
	case "ref/resource":
		uri, _ := wire.GetString(ref, "uri")
		// Decided like resources/read of the template (or resource). A
		// renamed ui:// template or URI (apps.go) goes to its server under
		// the one the server knows.
		if it := r.view(kindTemplates).byKey[uri]; it != nil {
			params, werr := completeRefURI(m.Params, ref, uri, it.original)
			if werr != nil {
				return errorReply(werr)
			}
			return s.guardedCompletion(ctx, m, stream, guardItem(kindTemplates, it), route{srv: it.server, params: params})
		}
		if srv, original := r.resourceTarget(uri); srv != nil {
			params, werr := completeRefURI(m.Params, ref, uri, original)
			if werr != nil {
				return errorReply(werr)
			}
			return s.guardedCompletion(ctx, m, stream, r.resourceItem(srv, original), route{srv: srv, params: params})
		}
		return errorReply(s.resourceNotFound(uri))
	}
	return errorReply(wire.Errorf(wire.CodeInvalidParams, "completion/complete needs params.ref of type ref/prompt or ref/resource"))
}

// HandleNotification takes one notification of the session's client.
func (s *Session) HandleNotification(ctx context.Context, m *wire.Message) {
	switch m.Method {
	case "notifications/cancelled":
		id := wire.Get(m.Params, "requestId")
		s.mu.Lock()
		c := s.calls[string(id)]
		s.mu.Unlock()
		if c != nil {
			c.cancel()
		}
	case "notifications/roots/list_changed":
		// The roots/list each server sends back is for this client.
		for _, srv := range s.gw.Router.all() {
			srv.activeMu.Lock()
			srv.rootsOwner, srv.rootsAt = s, time.Now()
			srv.activeMu.Unlock()
			_ = srv.up.Notify(ctx, m.Method, m.Params)
		}
	}
}

// HandleResponse takes the client's answer to a request the gateway sent it.
func (s *Session) HandleResponse(m *wire.Message) {
	s.mu.Lock()
	ch := s.outgoing[string(m.ID)]
	delete(s.outgoing, string(m.ID))
	s.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}
