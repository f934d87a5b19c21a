package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// LegacyVersions are the session-based protocol versions the gateway serves,
// newest first.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Info describes the gateway to clients.
type Info struct {
	Name, Version string
	Instructions  string
}

// Gateway is the merged MCP server that sessions talk to.
type Gateway struct {
	Router *Router
	Info   Info

	mu       sync.Mutex
	sessions map[*Session]struct{}
}

// New returns a gateway serving the router's merged view.
func New(r *Router, info Info) *Gateway {
	g := &Gateway{Router: r, Info: info, sessions: map[*Session]struct{}{}}
	r.onListChanged = g.listChanged
	return g
}

// outboxSize bounds the server-initiated messages waiting for a client's
// stream; beyond it a message is dropped (list_changed is idempotent).
const outboxSize = 64

// Session is one downstream client of the legacy era.
type Session struct {
	gw              *Gateway
	protocolVersion string
	clientInfo      json.RawMessage
	capabilities    json.RawMessage

	out       chan []byte
	done      chan struct{}
	closeOnce sync.Once
}

// Outbox carries server-initiated messages for the client's GET stream.
func (s *Session) Outbox() <-chan []byte { return s.out }

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close ends the session.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.gw.mu.Lock()
		delete(s.gw.sessions, s)
		s.gw.mu.Unlock()
		close(s.done)
	})
}

// send queues a server-initiated message for the client, dropping it when
// the client is not reading.
func (s *Session) send(msg []byte) {
	select {
	case s.out <- msg:
	default:
	}
}

// listChanged tells every session that a merged list changed.
func (g *Gateway) listChanged(kind listKind) {
	msg := wire.AppendNotification(nil, kind.changedNotification, nil)
	g.mu.Lock()
	defer g.mu.Unlock()
	for s := range g.sessions {
		s.send(msg)
	}
}

// ProtocolVersion is the version negotiated at initialize.
func (s *Session) ProtocolVersion() string { return s.protocolVersion }

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
	version := LegacyVersions[0]
	if slices.Contains(LegacyVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s := &Session{gw: g, protocolVersion: version, clientInfo: p.ClientInfo, capabilities: p.Capabilities,
		out: make(chan []byte, outboxSize), done: make(chan struct{})}
	g.mu.Lock()
	g.sessions[s] = struct{}{}
	g.mu.Unlock()
	res := initializeResult{
		ProtocolVersion: version,
		Capabilities:    map[string]any{"tools": map[string]any{"listChanged": true}},
		ServerInfo:      serverInfo{Name: g.Info.Name, Version: g.Info.Version},
		Instructions:    g.Info.Instructions,
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

// Handle answers one request of the session's client.
func (s *Session) Handle(ctx context.Context, m *wire.Message) Reply {
	switch m.Method {
	case "ping":
		return Reply{Result: json.RawMessage(`{}`)}
	case "tools/list":
		res, werr := s.gw.Router.ListTools(m.Params)
		if werr != nil {
			return errorReply(werr)
		}
		return Reply{Result: res}
	case "tools/call":
		resp, err := s.gw.Router.CallTool(ctx, m.Params)
		if err != nil {
			return errorReply(asWireError(err))
		}
		return Reply{Result: resp.Result, Error: resp.Error}
	case "initialize":
		return errorReply(wire.Errorf(wire.CodeInvalidRequest, "this session is already initialized; start a new session to initialize again"))
	default:
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", m.Method))
	}
}

// HandleNotification takes one notification of the session's client.
func (s *Session) HandleNotification(ctx context.Context, m *wire.Message) {
	// notifications/initialized and the rest need nothing from the gateway yet;
	// cancellation and roots changes are routed here when they are forwarded.
}

// asWireError turns a routing or transport error into a JSON-RPC error.
func asWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeInternalError, Message: err.Error()}
}
