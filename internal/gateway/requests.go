package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// clientCapabilityFor names the client capability a server-to-client request needs.
var clientCapabilityFor = map[string]string{
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// SessionEraOnlyMeta, in a server-to-client request's _meta, asks the
// gateway to send it to a session-era client only: a 2026-07-28 client's
// call is neither failed nor suspended for it (the gateway's own OAuth
// step-up, which holds the call while showing a URL to the user).
const SessionEraOnlyMeta = "io.github.mcp-gateway/session-era-only"

// serverRequest routes a request from a server to the client whose call
// caused it, and returns that client's answer.
func (g *Gateway) serverRequest(ctx context.Context, srv *server, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	if method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	if res, werr, handled := g.serverTaskRequest(ctx, srv, method, params); handled {
		return res, werr
	}
	if tk := g.taskOfStateless(srv.up, params); tk != nil {
		return g.parkTaskInput(ctx, tk, method, params) // tasks2026.go
	}
	params, taskSess := g.relatedTask(srv.up, params)
	capability, known := clientCapabilityFor[method]
	if !known {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
	}
	var (
		c    *call
		sess *Session
		err  error
	)
	if taskSess != nil {
		c, sess = taskSess.callOn(srv), taskSess // a request of a task goes to its client
	} else {
		c, sess, err = g.targetOf(srv, method)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidRequest, "%s refused: %v", method, err)
	}
	params = g.traceBack(c, params)
	if sess.stateless && wire.Get(wire.Get(params, "_meta"), SessionEraOnlyMeta) != nil {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: meant for a session-era client only", method)
	}
	if missing := sess.lacks(method, params); missing != "" {
		if sess.stateless && c != nil {
			// The 2026-07-28 answer: the client's request fails with
			// MissingRequiredClientCapabilities.
			data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}})
			sess.failStateless(&wire.Error{Code: codeMissingRequiredClientCapabilities,
				Message: fmt.Sprintf("the server needs the client capability %q for %s, which the client did not declare", missing, method), Data: data})
		}
		return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: the client did not declare the %s capability", method, missing)
	}
	if sess.stateless {
		if c == nil {
			return nil, wire.Errorf(wire.CodeInvalidRequest, "%s refused: a %s client can only be asked during its own call", method, StatelessVersion)
		}
		sess.unasked.Store(true) // until its input-required result is out
		c.parked.Add(1)          // waiting for the client: not "in flight" for routing
		defer c.parked.Add(-1)
		if wire.Get(params, "task") != nil {
			// The 2026-07-28 era runs no client-side tasks: the client
			// answers at once, which the server takes as the result.
			params, _ = wire.Delete(params, "task")
		}
		return sess.askStateless(ctx, method, params)
	}
	var stream Stream
	if c != nil {
		stream = c.stream
	}
	return g.askClient(ctx, sess, srv, stream, method, params)
}

// rootsAttribution is how long after a client says its roots changed a
// server's roots/list is taken to be for that client.
const rootsAttribution = 10 * time.Second

// targetOf chooses the client a server's request is for: the client that
// just announced new roots (for roots/list), else the one client with calls
// in flight on the server, else the gateway's only session-era client.
func (g *Gateway) targetOf(srv *server, method string) (*call, *Session, error) {
	if method == "roots/list" {
		srv.activeMu.Lock()
		owner, at := srv.rootsOwner, srv.rootsAt
		srv.activeMu.Unlock()
		if owner != nil && time.Since(at) < rootsAttribution {
			return nil, owner, nil
		}
	}
	c, err := srv.callerOf()
	if err == nil {
		return c, c.sess, nil
	}
	var only *Session
	for _, s := range g.clients.list() {
		if s.stateless {
			continue
		}
		if only != nil {
			return nil, nil, err
		}
		only = s
	}
	if only == nil {
		return nil, nil, err
	}
	return nil, only, nil
}

// callerOf returns the one client call in flight on srv that a message from
// srv must belong to, or an error saying why none can be chosen. Calls of
// one session are one client; calls of several are ambiguous. A call
// waiting for its 2026-07-28 client's input (parked) does not count while
// others are in flight. When only parked calls are, the message is of the
// one whose questions have not yet gone to its client (a server asking
// several at once, which go out together), else of the only client with
// parked calls.
func (srv *server) callerOf() (*call, error) {
	srv.activeMu.Lock()
	defer srv.activeMu.Unlock()
	var chosen, parked, unasked *call
	parkedOfOne, unaskedOfOne := true, true
	for c := range srv.active {
		if c.parked.Load() > 0 {
			if parked != nil && parked.sess != c.sess {
				parkedOfOne = false
			}
			parked = c
			if c.sess.unasked.Load() {
				if unasked != nil && unasked.sess != c.sess {
					unaskedOfOne = false
				}
				unasked = c
			}
			continue
		}
		if chosen != nil && chosen.sess != c.sess {
			return nil, fmt.Errorf("calls of several clients are in flight on mcp server %q, so the gateway cannot tell which client it is for; to route its requests exactly, run it with a process per client (\"share\": \"per-client\" in its config entry, or --per-client on mcp-gateway server add)", srv.name)
		}
		chosen = c
	}
	switch {
	case chosen == nil && unasked != nil && unaskedOfOne:
		return unasked, nil
	case chosen == nil && unasked == nil && parked != nil && parkedOfOne:
		return parked, nil
	}
	if chosen == nil {
		return nil, fmt.Errorf("no client call is in flight on mcp server %q, so the gateway cannot tell which client it is for", srv.name)
	}
	return chosen, nil
}

// request sends a request to the client, on stream if it is still open
// (else on the session's GET stream), and waits for its answer.
func (s *Session) request(ctx context.Context, stream Stream, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	id := wire.AppendString(nil, s.gw.newID("gw-request-"))
	ch := make(chan *wire.Message, 1)
	s.mu.Lock()
	if s.outgoing == nil {
		s.outgoing = map[string]chan *wire.Message{}
	}
	s.outgoing[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.outgoing, string(id))
		s.mu.Unlock()
	}()
	msg := wire.AppendRequest(nil, id, method, params)
	deliver(stream, s, msg)
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, wire.DecodeError(resp.Error)
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, wire.Errorf(wire.CodeInternalError, "%s: no answer from the client: %v", method, ctx.Err())
	case <-s.done:
		return nil, wire.Errorf(wire.CodeInternalError, "%s: the client's session ended", method)
	}
}
