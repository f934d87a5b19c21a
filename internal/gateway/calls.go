package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// call is one client request in flight on an upstream server.
type call struct {
	sess   *Session
	server *server
	id     string // the client's request id, raw JSON
	stream Stream
	cancel context.CancelFunc

	progressToken json.RawMessage // the client's token, nil without one
	gwToken       string          // the token the server sees instead

	parked atomic.Int32 // requests of it waiting for a 2026-07-28 client's input

	ctx context.Context // the call's: what the server sends for it goes back with its trace context
}

// forwardCall sends the request and waits for the answer. While it is in
// flight, the call is where the server's progress, log messages and
// requests for this client go. end, when not nil, is told how it went.
func (s *Session) forwardCall(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage, end *CallEnd) Reply {
	return s.forwardOn(ctx, m, stream, srv, nil, params, end)
}

// forwardOn is forwardCall to a given upstream of srv (nil: the one
// upstreamOf chooses), for a task's requests, which go where it runs.
func (s *Session) forwardOn(ctx context.Context, m *wire.Message, stream Stream, srv *server, up Upstream, params json.RawMessage, end *CallEnd) Reply {
	g := s.gw
	timeout := g.Router.opts.CallTimeout
	if srv.callTimeout > 0 {
		timeout = srv.callTimeout
	}
	// One context per call: the client's cancellation and the timeout.
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	if stream == nil {
		stream = noStream{}
	}
	c := &call{sess: s, server: srv, id: string(m.ID), stream: stream, cancel: cancel, ctx: ctx}
	params, werr := g.mapProgress(c, m.Method, params)
	if werr != nil {
		return errorReply(werr)
	}
	exposed, _ := wire.GetString(m.Params, "name")
	tr, params, werr := g.requestTask(s, srv, exposed, m.Method, params)
	if werr != nil {
		return errorReply(werr)
	}
	defer tr.release()
	if c.gwToken != "" {
		defer func() {
			if !tr.keepsProgress() { // a task's progress goes on after its call
				g.progress.Delete(c.gwToken)
			}
		}()
	}
	s.track(c)
	defer s.untrack(c)

	var err error
	if up == nil {
		up, err = s.upstreamOf(ctx, srv)
	}
	if err != nil {
		if end != nil {
			end.Err = err
		}
		return failure(m, err)
	}
	began := time.Now()
	resp, giveUp, err := s.callAcrossEras(ctx, c, up, m.Method, params)
	if giveUp != nil {
		return errorReply(giveUp)
	}
	if end != nil {
		end.Upstream, end.Err, end.Timeout = time.Since(began), err, err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	}
	g.relistIfRestarted(srv)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errorReply(wire.Errorf(wire.CodeInternalError, "mcp server %q did not answer %s within %s; the call was cancelled at the server", srv.name, m.Method, timeout))
		}
		if errors.Is(err, wire.ErrStart) {
			g.Router.lost(srv, err)
		}
		return failure(m, err)
	}
	if tr != nil && resp.Error == nil {
		resp.Result = tr.adopt(c, up, resp.Result)
	}
	return Reply{Result: resp.Result, Error: resp.Error}
}

// mapProgress gives a call with a progress token a gateway-unique one: the
// client's token may collide with another client's on a shared server.
// What the server sends with it (notifications/progress) finds the call
// in g.progress until the caller deletes it.
func (g *Gateway) mapProgress(c *call, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	tok := wire.Get(wire.Get(params, "_meta"), "progressToken")
	if tok == nil {
		return params, nil
	}
	c.progressToken = tok
	c.gwToken = g.newID("gw-progress-")
	params, err := replaceProgressToken(params, wire.AppendString(nil, c.gwToken))
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%s params._meta: %v", method, err)
	}
	g.progress.Store(c.gwToken, c)
	return params, nil
}

// track records a call in flight with its client (for cancellation) and
// its server (for routing what the server sends during it).
func (s *Session) track(c *call) {
	s.mu.Lock()
	s.calls[c.id] = c
	s.mu.Unlock()
	c.server.activeMu.Lock()
	c.server.active[c] = struct{}{}
	c.server.activeMu.Unlock()
}

// untrack forgets a call that ended.
func (s *Session) untrack(c *call) {
	s.mu.Lock()
	if s.calls[c.id] == c {
		delete(s.calls, c.id)
	}
	s.mu.Unlock()
	c.server.activeMu.Lock()
	delete(c.server.active, c)
	c.server.activeMu.Unlock()
}

// upstreamOf chooses the upstream of srv a call of this client goes to:
// for a session-era client of a per-client server, the client's own
// session of it; for a 2026-07-28 client declaring extensions, of a
// per-client server spoken to in the session era, the session made for its
// capabilities (extensions.go); else the server's one upstream, whatever
// the client's era (callAcrossEras bridges the eras).
func (s *Session) upstreamOf(ctx context.Context, srv *server) (Upstream, error) {
	switch {
	case srv.newPerClient == nil:
	case !s.stateless:
		return s.upstreamFor(ctx, srv)
	case declaresExtensions(s.capabilities) && !isStateless(srv.up):
		up, err := s.gw.extensionUpstream(ctx, srv, s.capabilities, clientKey(s.clientInfo))
		if err != nil || up != nil {
			return up, err
		}
	}
	return srv.up, nil
}

// replaceProgressToken sets params._meta.progressToken to tok.
func replaceProgressToken(params, tok json.RawMessage) (json.RawMessage, error) {
	meta, err := wire.Set(wire.Get(params, "_meta"), "progressToken", tok)
	if err != nil {
		return nil, err
	}
	return wire.Set(params, "_meta", meta)
}

// failure answers a request that failed at its server: a JSON-RPC error,
// except that refused credentials become a tool error the agent can read,
// never an authentication challenge.
func failure(m *wire.Message, err error) Reply {
	if errors.Is(err, wire.ErrCredentials) && m.Method == "tools/call" {
		return Reply{Result: toolError(err.Error())}
	}
	return errorReply(asWireError(err))
}

// toolError is a tools/call result reporting a failure the agent can read.
func toolError(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true})
	return b
}

// StatelessReporter is implemented by an upstream whose server may speak
// 2026-07-28: Stateless reports whether it does. An upstream without it is
// taken to speak the session era; a wrapper of an upstream that has it must
// have it too (internal/attach asserts so at compile time).
type StatelessReporter interface{ Stateless() bool }

// isStateless reports whether up speaks 2026-07-28.
func isStateless(up Upstream) bool {
	m, ok := up.(StatelessReporter)
	return ok && m.Stateless()
}
