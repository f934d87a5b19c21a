package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// upstreamFor returns the session's own upstream session of a per-client
// server, starting it on first use.
func (s *Session) upstreamFor(ctx context.Context, srv *server) (Upstream, error) {
	s.mu.Lock()
	up := s.ups[srv]
	s.mu.Unlock()
	if up != nil {
		return up, nil
	}
	caps := s.capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	up = srv.newPerClient(caps, s.hooksFor(srv))
	if err := up.Start(ctx); err != nil {
		_ = up.Close()
		return nil, err
	}
	s.mu.Lock()
	if s.upsClosed { // the session ended while this one was starting
		s.mu.Unlock()
		_ = up.Close()
		return nil, fmt.Errorf("mcp server %q: the client's session ended", srv.name)
	}
	if s.ups == nil {
		s.ups = map[*server]Upstream{}
	}
	if prev := s.ups[srv]; prev != nil { // started meanwhile by another call
		s.mu.Unlock()
		_ = up.Close()
		return prev, nil
	}
	select {
	case <-srv.gone: // removed while this session was starting
		s.mu.Unlock()
		_ = up.Close()
		return nil, fmt.Errorf("mcp server %q was removed", srv.name)
	default:
	}
	s.ups[srv] = up
	level := s.logLevel // read with the store: a setLevel after this sees up in s.ups
	s.mu.Unlock()
	if level >= 0 {
		s.gw.setUpstreamLevel(ctx, srv, up, level)
	}
	return up, nil
}

// hooksFor routes what a session's own upstream session sends: to this
// client, on the stream of its call in flight on that server when there is one.
func (s *Session) hooksFor(srv *server) Hooks {
	g := s.gw
	callOn := func() *call {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.calls {
			if c.server == srv {
				return c
			}
		}
		return nil
	}
	callStream := func() Stream {
		if c := callOn(); c != nil {
			return c.stream
		}
		return nil
	}
	return Hooks{
		OnNotification: func(method string, params json.RawMessage) {
			if method == "notifications/tasks/status" {
				g.taskStatus(s.ownUpstream(srv), params)
				return
			}
			if method != "notifications/message" {
				g.serverNotification(srv, method, params)
				return
			}
			level, _ := wire.GetString(params, "level")
			if !s.wants(slices.Index(logLevels, level)) {
				return
			}
			msg := wire.AppendNotification(nil, method, params)
			deliver(callStream(), s, msg)
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			if method == "ping" {
				return json.RawMessage(`{}`), nil
			}
			if res, werr, handled := g.serverTaskRequest(ctx, srv, method, params); handled {
				return res, werr
			}
			if missing := s.lacks(method, params); missing != "" {
				return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: the client did not declare the %s capability", method, missing)
			}
			c := callOn()
			var st Stream
			if c != nil {
				st = c.stream
			}
			return g.askClient(ctx, s, srv, st, method, g.traceBack(c, params))
		},
	}
}
