package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// subscribe subscribes a client to a resource; the server is asked only
// for the first subscriber of a URI, as the client's call (m on stream,
// when given), so what the server says meanwhile goes to that client. A
// renamed ui:// URI (apps.go) is subscribed to at its server under the URI
// the server knows; the client's subscription is kept under the URI it gave.
func (g *Gateway) subscribe(ctx context.Context, s *Session, params json.RawMessage, m *wire.Message, stream Stream) Reply {
	uri, _ := wire.GetString(params, "uri")
	srv, original := g.Router.resourceTarget(uri)
	if srv == nil {
		return errorReply(s.resourceNotFound(uri))
	}
	if original != uri {
		var err error
		if params, err = wire.SetString(params, "uri", original); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "resources/subscribe params: %v", err))
		}
	}
	if m == nil {
		m = &wire.Message{ID: json.RawMessage(`"` + g.newID("gw-subscribe-") + `"`), Method: "resources/subscribe", Params: params}
	}
	// Decided like resources/read of the resource (see guardedRef).
	return s.guardedRef(ctx, m, g.Router.resourceItem(srv, original), nil, func() Reply {
		return g.subscribeAdmitted(ctx, s, srv, uri, params, m, stream)
	})
}

func (g *Gateway) subscribeAdmitted(ctx context.Context, s *Session, srv *server, uri string, params json.RawMessage, m *wire.Message, stream Stream) Reply {
	g.mu.Lock()
	first := len(g.subs[uri]) == 0
	if g.subs[uri] == nil {
		g.subs[uri] = map[*Session]struct{}{}
	}
	g.subs[uri][s] = struct{}{}
	g.mu.Unlock()
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[string]struct{}{}
	}
	s.subs[uri] = struct{}{}
	s.mu.Unlock()
	if !first {
		return emptyResult
	}
	reply := s.forwardObserved(ctx, m, stream, srv, params)
	if reply.Error != nil {
		g.unsubscribeLocal(s, uri)
		return reply
	}
	return emptyResult
}

// unsubscribe drops a client's subscription; the server is told when the
// last subscriber of a URI leaves, as the client's call (m on stream, when
// given).
func (g *Gateway) unsubscribe(ctx context.Context, s *Session, uri string, m *wire.Message, stream Stream) {
	if !g.unsubscribeLocal(s, uri) {
		return
	}
	srv, original := g.Router.resourceTarget(uri)
	if srv == nil {
		return
	}
	p := wire.AppendString([]byte(`{"uri":`), original)
	p = append(p, '}')
	if m == nil {
		m = &wire.Message{ID: json.RawMessage(`"` + g.newID("gw-unsubscribe-") + `"`), Method: "resources/unsubscribe", Params: p}
	}
	if reply := s.forwardObserved(ctx, m, stream, srv, p); reply.Error != nil {
		g.Router.log.Warn("resources/unsubscribe failed", "server", srv.name, "uri", uri, "err", string(reply.Error))
	}
}

// unsubscribeLocal forgets a subscription and reports whether it was the last for its URI.
func (g *Gateway) unsubscribeLocal(s *Session, uri string) (last bool) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	set, ok := g.subs[uri]
	if !ok {
		return false
	}
	if _, had := set[s]; !had {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(g.subs, uri)
		return true
	}
	return false
}

func (g *Gateway) subscribers(uri string) []*Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Session, 0, len(g.subs[uri]))
	for s := range g.subs[uri] {
		out = append(out, s)
	}
	return out
}
