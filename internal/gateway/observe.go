package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Observer watches the gateway's traffic with its servers: metrics, traces
// and the call log (internal/telemetry implements it). It is called at one
// place, where a client's request is forwarded to a server and answered, so
// every forwarded call passes it exactly once.
type Observer interface {
	// StartCall is called as a request is forwarded. The call goes on with
	// the context it returns (which may carry a span the upstream passes
	// on to the server), and end is called once with how it ended.
	StartCall(ctx context.Context, c CallInfo) (_ context.Context, end func(CallEnd))
	// ListRefetched is called when a server's list (method "tools/list",
	// ...) is fetched again because the server announced a change or was
	// restarted.
	ListRefetched(server, method string)
	// TraceBack returns the params of a message a server sends the client
	// during a call (a progress notification, a request) with the call's
	// trace context, ctx being the one StartCall returned.
	TraceBack(ctx context.Context, params json.RawMessage) json.RawMessage
}

// CallInfo describes a forwarded call as it starts.
type CallInfo struct {
	Server string // the server's configured name
	Method string // the JSON-RPC method
	// Name is the tool's or prompt's name as the server knows it (not the
	// exposed name) for tools/call and prompts/get; else "".
	Name            string
	ProtocolVersion string // the client's
	RequestBytes    int    // the params sent to the server
}

// CallEnd is how a forwarded call ended.
type CallEnd struct {
	Reply Reply // the answer the client gets
	// Err is the transport failure, nil when the server answered (with a
	// result or a JSON-RPC error) or the call never reached it.
	Err error
	// Timeout: the call outlived its call timeout and was cancelled.
	Timeout bool
	// Denied: policy refused the call before it reached the server.
	Denied bool
	// Upstream is the time spent waiting for the server (its answers to
	// the client's input included); the rest is the gateway's own.
	Upstream time.Duration
}

// forwardObserved forwards a request through the Observer, when there is one.
func (s *Session) forwardObserved(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage) Reply {
	o := s.gw.Observer
	if o == nil {
		return s.forwardCall(ctx, m, stream, srv, params, nil)
	}
	info := CallInfo{Server: srv.name, Method: m.Method, ProtocolVersion: s.protocolVersion, RequestBytes: len(params)}
	if m.Method == "tools/call" || m.Method == "prompts/get" {
		info.Name, _ = wire.GetString(params, "name")
	}
	ctx, end := o.StartCall(ctx, info)
	var e CallEnd
	e.Reply = s.forwardCall(ctx, m, stream, srv, params, &e)
	end(e)
	return e.Reply
}

// traceBack gives what a server sends during call c the call's trace
// context, through the Observer; unchanged without a call or an Observer.
func (g *Gateway) traceBack(c *call, params json.RawMessage) json.RawMessage {
	if c == nil || c.ctx == nil || g.Observer == nil {
		return params
	}
	return g.Observer.TraceBack(c.ctx, params)
}

// observeRelist tells the Observer of a re-fetch of a server's lists.
func (g *Gateway) observeRelist(s *server, ks []*listKind) {
	if g.Observer == nil {
		return
	}
	for _, k := range ks {
		g.Observer.ListRefetched(s.name, k.method)
	}
}
