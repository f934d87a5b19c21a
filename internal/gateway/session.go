package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// SessionVersions are the session-based protocol versions the gateway serves,
// newest first.
var SessionVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Info describes the gateway to clients.
type Info struct {
	Name, Version string
}

// Gateway is the merged MCP server that sessions talk to.
type Gateway struct {
	Router *Router
	Info   Info
	// Guard decides what the clients may see and call, and records it
	// (policy, audit); nil: everything is allowed. Set it before serving.
	Guard   Guard
	guarded guardCache
	// Observer, when set (before serving), watches every forwarded call.
	Observer Observer

	nextID   atomic.Uint64 // progress tokens and server-to-client request ids
	progress sync.Map      // gateway progress token → *call

	clients     clients // the clients with a queue
	mu          sync.Mutex
	subs        map[string]map[*Session]struct{} // resource URI → subscribed sessions
	serverLevel int                              // log level asked of the servers; -1: none yet

	multiRoundTripState multiRoundTripState
	closing             chan struct{}
	closeOnce           sync.Once
}

// New returns a gateway serving the router's merged view. Build upstreams
// with its UpstreamHooks, Add them to the router, then Start the router.
func New(r *Router, info Info) *Gateway {
	g := &Gateway{Router: r, Info: info, subs: map[string]map[*Session]struct{}{},
		serverLevel: -1, closing: make(chan struct{})}
	r.clients = &g.clients
	return g
}

// Drain ends every subscriptions/listen stream gracefully, first step of a
// shutdown: calls in flight go on.
func (g *Gateway) Drain() {
	g.closeOnce.Do(func() { close(g.closing) })
}

// Closing is closed once the gateway drains, for streams that must end then.
func (g *Gateway) Closing() <-chan struct{} { return g.closing }

// Close drains and ends every session (cancelling what is still in flight).
func (g *Gateway) Close() {
	g.Drain()
	for _, s := range g.clients.list() {
		s.Close()
	}
}

// outboxSize bounds the server-initiated messages waiting for a client's
// stream; beyond it a message is dropped.
const outboxSize = 256

// Stream carries the messages that belong to one client request and come
// before its response: progress, log messages, requests to the client. The
// front writes them on that request's own HTTP response.
type Stream interface {
	Send(msg []byte) error
}

// Session is one downstream client of the session era (2025-11-25 and earlier).
type Session struct {
	gw              *Gateway
	protocolVersion string
	clientInfo      json.RawMessage
	capabilities    json.RawMessage

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

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      serverInfo     `json:"serverInfo"`
	Instructions    string         `json:"instructions,omitempty"`
}

// Reply is the answer to one request: exactly one of Result and Error (a raw
// JSON-RPC error object) is set.
type Reply struct {
	Result json.RawMessage
	Error  json.RawMessage
}

func errorReply(e *wire.Error) Reply { return Reply{Error: e.Marshal()} }

var emptyResult = Reply{Result: json.RawMessage(`{}`)}

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
		return s.callNamed(ctx, m, stream, kindTools, "Unknown tool: %s")
	case "prompts/get":
		return s.callNamed(ctx, m, stream, kindPrompts, "Unknown prompt: %s")
	case "resources/read":
		uri, _ := wire.GetString(m.Params, "uri")
		srv := r.resourceServer(uri)
		if srv == nil {
			return errorReply(s.resourceNotFound(uri))
		}
		return s.guarded(ctx, m, stream, r.resourceItem(srv, uri), func(ctx context.Context, stream Stream) Reply {
			return s.forward(ctx, m, stream, srv, m.Params)
		})
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

// callNamed forwards a request naming a tool or prompt to its server, under
// the name the server knows it by.
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
	return s.guarded(ctx, m, stream, guardItem(k, it), func(ctx context.Context, stream Stream) Reply {
		return s.callItem(ctx, m, stream, it, name)
	})
}

// callItem runs a call of a tool or prompt the guard admitted.
func (s *Session) callItem(ctx context.Context, m *wire.Message, stream Stream, it *item, name string) Reply {
	if it.server.builtin != nil {
		return s.callBuiltin(ctx, m, stream, it)
	}
	params := m.Params
	if it.original != name {
		var err error
		if params, err = wire.SetString(params, "name", it.original); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
		}
	}
	return s.forward(ctx, m, stream, it.server, params)
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
		return s.guardedCompletion(ctx, m, guardItem(kindPrompts, it), func() Reply {
			return s.forward(ctx, m, stream, it.server, params)
		})
	case "ref/resource":
		uri, _ := wire.GetString(ref, "uri")
		// Decided like resources/read of the template (or resource).
		if it := r.view(kindTemplates).byKey[uri]; it != nil {
			return s.guardedCompletion(ctx, m, guardItem(kindTemplates, it), func() Reply {
				return s.forward(ctx, m, stream, it.server, m.Params)
			})
		}
		if srv := r.resourceServer(uri); srv != nil {
			return s.guardedCompletion(ctx, m, r.resourceItem(srv, uri), func() Reply {
				return s.forward(ctx, m, stream, srv, m.Params)
			})
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

// newID returns a gateway-unique id for progress tokens and requests:
// prefix, a sequence number (unique by construction) and 130 random bits
// from crypto/rand (unguessable: a server or client that could guess
// another call's progress token or request id could send progress, or an
// answer, in its name). Nothing parses it back; it is a map key.
func (g *Gateway) newID(prefix string) string {
	return prefix + strconv.FormatUint(g.nextID.Add(1), 10) + "-" + rand.Text()
}

// asWireError turns a routing or transport error into a JSON-RPC error.
func asWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeInternalError, Message: err.Error()}
}
