package gateway

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

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
	// toolRefs is BuiltinCall.Tools' last answer, for its views and servers.
	toolRefs atomic.Pointer[toolRefsCache]
	// Observer, when set (before serving), watches every forwarded call.
	Observer Observer
	// Tasks bound the tasks the gateway keeps for its clients (set before
	// serving); see tasks.go.
	Tasks TaskOptions
	tasks taskTable

	identityOnce sync.Once       // identityJSON: Info as serverInfo, encoded once
	identityJSON json.RawMessage // (stateless.go, asGateway)

	nextID   atomic.Uint64 // progress tokens and server-to-client request ids
	progress sync.Map      // gateway progress token → *call

	clients     clients                          // the clients with a queue
	mu          sync.Mutex                       // guards subs and serverLevel
	subs        map[string]map[*Session]struct{} // resource URI → subscribed sessions
	serverLevel int                              // log level asked of the servers; -1: none yet

	multiRoundTripState multiRoundTripState
	quotaState          // Limits and what the clients hold against them (quota.go)
	closing             chan struct{}
	closeOnce           sync.Once
}

// New returns a gateway serving the router's merged view, and gives the
// router the gateway's clients as the sink of its changes. Build each
// server's upstream with the gateway's UpstreamHooks, add it to the router
// with those hooks (AddShared, AddPerClient), then Start the router.
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

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Reply is the answer to one request: exactly one of Result and Error (a raw
// JSON-RPC error object) is set.
type Reply struct {
	Result json.RawMessage
	Error  json.RawMessage
}

func errorReply(e *wire.Error) Reply { return Reply{Error: e.Marshal()} }

var emptyResult = Reply{Result: json.RawMessage(`{}`)}

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
