package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
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

	parked atomic.Bool // waiting for a 2026-07-28 client's input

	ctx context.Context // the call's: what the server sends for it goes back with its trace context
}

// forward sends a request to srv on behalf of the session's client and
// returns the server's answer unchanged.
func (s *Session) forward(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage) Reply {
	if s.stateless {
		return s.forwardStateless(ctx, m, stream, srv, params)
	}
	return s.forwardObserved(ctx, m, stream, srv, params)
}

// forwardCall sends the request and waits for the answer. While it is in
// flight, the call is where the server's progress, log messages and
// requests for this client go. end, when not nil, is told how it went.
func (s *Session) forwardCall(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage, end *CallEnd) Reply {
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

	// Progress tokens are the client's own and may collide with another
	// client's on a shared server: the server sees a gateway-unique one.
	if tok := wire.Get(wire.Get(params, "_meta"), "progressToken"); tok != nil {
		c.progressToken = tok
		c.gwToken = g.newID("gw-progress-")
		var err error
		if params, err = replaceProgressToken(params, wire.AppendString(nil, c.gwToken)); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params._meta: %v", m.Method, err))
		}
		g.progress.Store(c.gwToken, c)
		defer g.progress.Delete(c.gwToken)
	}

	s.mu.Lock()
	s.calls[c.id] = c
	s.mu.Unlock()
	srv.activeMu.Lock()
	srv.active[c] = struct{}{}
	srv.activeMu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.calls[c.id] == c {
			delete(s.calls, c.id)
		}
		s.mu.Unlock()
		srv.activeMu.Lock()
		delete(srv.active, c)
		srv.activeMu.Unlock()
	}()

	up := srv.up
	switch {
	case s.stateless:
		if companion := g.Router.statelessCompanion(ctx, srv); companion != nil {
			up = companion
		}
	case srv.newPerClient != nil:
		var err error
		if up, err = s.upstreamFor(ctx, srv); err != nil {
			if end != nil {
				end.Err = err
			}
			return failure(m, err)
		}
	}
	statelessServer := isStateless(up)
	switch {
	case statelessServer && !s.stateless:
		params = s.requestMeta(params)
	case s.stateless && !statelessServer:
		params = stripStatelessMeta(params)
	}
	began := time.Now()
	resp, err := up.Call(ctx, m.Method, params)
	for round := 0; err == nil && statelessServer && !s.stateless && isInputRequired(resp.Result); round++ {
		// A 2026-07-28 server asks a session-era client for input: ask the
		// client the old way, then retry with its answers.
		if round == maxInputRounds {
			return errorReply(wire.Errorf(wire.CodeInternalError, "mcp server %q asked for input %d times in a row; giving up", srv.name, round))
		}
		var retry json.RawMessage
		if retry, err = s.fulfil(ctx, c, params, resp.Result); err != nil {
			break
		}
		resp, err = up.Call(ctx, m.Method, retry)
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
	return Reply{Result: resp.Result, Error: resp.Error}
}

// replaceProgressToken sets params._meta.progressToken to tok.
func replaceProgressToken(params, tok json.RawMessage) (json.RawMessage, error) {
	meta, err := wire.Set(wire.Get(params, "_meta"), "progressToken", tok)
	if err != nil {
		return nil, err
	}
	return wire.Set(params, "_meta", meta)
}

// callerOf returns the one client call in flight on srv that a message from
// srv must belong to, or an error saying why none can be chosen. Calls of
// one session are one client; calls of several are ambiguous.
func (srv *server) callerOf() (*call, error) {
	srv.activeMu.Lock()
	defer srv.activeMu.Unlock()
	var chosen *call
	for c := range srv.active {
		if c.parked.Load() {
			continue
		}
		if chosen != nil && chosen.sess != c.sess {
			return nil, fmt.Errorf("calls of several clients are in flight on mcp server %q, so the gateway cannot tell which client it is for; to route its requests exactly, run it with a process per client (\"share\": \"per-client\" in its config entry, or --per-client on mcp-gateway server add)", srv.name)
		}
		chosen = c
	}
	if chosen == nil {
		return nil, fmt.Errorf("no client call is in flight on mcp server %q, so the gateway cannot tell which client it is for", srv.name)
	}
	return chosen, nil
}

// clientCapabilityFor names the client capability a server-to-client request needs.
var clientCapabilityFor = map[string]string{
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// serverRequest routes a request from a server to the client whose call
// caused it, and returns that client's answer.
func (g *Gateway) serverRequest(ctx context.Context, srv *server, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	if method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	capability, known := clientCapabilityFor[method]
	if !known {
		return nil, wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s", method)
	}
	c, sess, err := g.targetOf(srv, method)
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
		c.parked.Store(true) // waiting for the client: not "in flight" for routing
		defer c.parked.Store(false)
		return sess.askStateless(ctx, method, params)
	}
	var stream Stream
	if c != nil {
		stream = c.stream
	}
	return sess.request(ctx, stream, method, params)
}

// SessionEraOnlyMeta, in a server-to-client request's _meta, asks the
// gateway to send it to a session-era client only: a 2026-07-28 client's
// call is neither failed nor suspended for it (the gateway's own OAuth
// step-up, which holds the call while showing a URL to the user).
const SessionEraOnlyMeta = "io.github.mcp-gateway/session-era-only"

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
	if stream == nil || stream.Send(msg) != nil {
		s.send(msg)
	}
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

// logLevels in increasing severity (RFC 5424, as MCP uses them).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel records a client's log level and fans the most verbose level any
// client asked for out to the servers that log.
func (g *Gateway) setLevel(ctx context.Context, s *Session, params json.RawMessage) Reply {
	level, _ := wire.GetString(params, "level")
	i := slices.Index(logLevels, level)
	if i < 0 {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "logging/setLevel: unknown level %q; use one of %v", level, logLevels))
	}
	s.mu.Lock()
	s.logLevel = i
	own := make(map[*server]Upstream, len(s.ups))
	for srv, up := range s.ups {
		own[srv] = up
	}
	s.mu.Unlock()
	g.ensureLevel(ctx, i)
	// The client's own sessions of remote servers log to it alone: they
	// take exactly its level.
	for srv, up := range own {
		g.setUpstreamLevel(ctx, srv, up, i)
	}
	return emptyResult
}

// setUpstreamLevel asks one upstream session of srv for messages down to
// level, when it logs and takes the level that way.
func (g *Gateway) setUpstreamLevel(ctx context.Context, srv *server, up Upstream, level int) {
	// A 2026-07-28 server takes the level in each request's _meta.
	if !hasCapability(up.InitializeResult(), "logging") || isStateless(up) {
		return
	}
	p := wire.AppendString([]byte(`{"level":`), logLevels[level])
	p = append(p, '}')
	resp, err := up.Call(ctx, "logging/setLevel", p)
	if err == nil && resp.Error != nil {
		err = wire.DecodeError(resp.Error)
	}
	if err != nil {
		g.Router.log.Warn("logging/setLevel failed", "server", srv.name, "err", err)
	}
}

// ensureLevel makes the servers that log send messages down to level: the
// most verbose level any client asked for. Clients filter by their own.
func (g *Gateway) ensureLevel(ctx context.Context, level int) {
	g.mu.Lock()
	if g.serverLevel >= 0 && g.serverLevel <= level {
		g.mu.Unlock()
		return
	}
	g.serverLevel = level
	g.mu.Unlock()
	for _, srv := range g.Router.all() {
		g.setUpstreamLevel(ctx, srv, srv.up, level)
	}
}

// wants reports whether the client asked for messages of this level.
func (s *Session) wants(level int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel < 0 || level >= s.logLevel
}

// logMessage delivers a server's log message: on the stream of the one
// client call in flight on it, else to every client of the gateway (the
// server is theirs alike), each filtered by its own level.
func (g *Gateway) logMessage(srv *server, params json.RawMessage) {
	level, _ := wire.GetString(params, "level")
	li := slices.Index(logLevels, level)
	msg := wire.AppendNotification(nil, "notifications/message", params)
	if c, err := srv.callerOf(); err == nil {
		if c.sess.wants(li) && c.stream.Send(msg) != nil {
			c.sess.send(msg)
		}
		return
	}
	for _, s := range g.clients.list() {
		if s.wants(li) {
			s.send(msg)
		}
	}
}

// subscribe subscribes a client to a resource; the server is asked only
// for the first subscriber of a URI, as the client's call (m on stream,
// when given), so what the server says meanwhile goes to that client.
func (g *Gateway) subscribe(ctx context.Context, s *Session, params json.RawMessage, m *wire.Message, stream Stream) Reply {
	uri, _ := wire.GetString(params, "uri")
	srv := g.Router.resourceServer(uri)
	if srv == nil {
		return errorReply(s.resourceNotFound(uri))
	}
	if m == nil {
		m = &wire.Message{ID: json.RawMessage(`"` + g.newID("gw-subscribe-") + `"`), Method: "resources/subscribe", Params: params}
	}
	// Decided like resources/read of the resource (see guardedRef).
	return s.guardedRef(ctx, m, g.Router.resourceItem(srv, uri), nil, func() Reply {
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
	srv := g.Router.resourceServer(uri)
	if srv == nil {
		return
	}
	p := wire.AppendString([]byte(`{"uri":`), uri)
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

// maxInputRounds bounds the input requests of one call.
const maxInputRounds = 16

// stateless reports whether the server's primary process speaks 2026-07-28.
func (srv *server) stateless() bool { return isStateless(srv.up) }

// isStateless reports whether up speaks 2026-07-28; the upstreams
// (internal/upstream, internal/attach) still call that Modern.
func isStateless(up Upstream) bool {
	m, ok := up.(interface{ Modern() bool })
	return ok && m.Modern()
}

func isInputRequired(result json.RawMessage) bool {
	t, _ := wire.GetString(result, "resultType")
	return t == "input_required"
}

// requestMeta gives a session-era client's request the _meta a 2026-07-28
// server expects: the client's own identity, capabilities and log level.
func (s *Session) requestMeta(params json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	set := func(key string, v json.RawMessage) {
		if v != nil && wire.Get(meta, key) == nil {
			if m, err := wire.Set(meta, key, v); err == nil {
				meta = m
			}
		}
	}
	set(MetaProtocolVersion, json.RawMessage(`"`+StatelessVersion+`"`))
	set(MetaClientInfo, s.clientInfo)
	caps := s.capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	set(MetaClientCapabilities, caps)
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	if level >= 0 {
		set(MetaLogLevel, wire.AppendString(nil, logLevels[level]))
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// fulfil asks the session-era client each input request of a 2026-07-28
// server's input-required result, and returns the params of the retry.
func (s *Session) fulfil(ctx context.Context, c *call, params, result json.RawMessage) (json.RawMessage, error) {
	var requests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(wire.Get(result, "inputRequests"), &requests); err != nil {
		return nil, fmt.Errorf("mcp server %q: malformed inputRequests: %w", c.server.name, err)
	}
	answers := map[string]json.RawMessage{}
	for key, req := range requests {
		if capability, ok := clientCapabilityFor[req.Method]; ok && !s.hasCapability(capability) {
			return nil, fmt.Errorf("mcp server %q needs the client capability %q for %s, which the client did not declare", c.server.name, capability, req.Method)
		}
		res, werr := s.request(ctx, c.stream, req.Method, req.Params)
		if werr != nil {
			return nil, werr
		}
		answers[key] = res
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	if params, err = wire.Set(params, "inputResponses", b); err != nil {
		return nil, err
	}
	if state := wire.Get(result, "requestState"); state != nil {
		return wire.Set(params, "requestState", state)
	}
	return params, nil
}

// noStream is the stream of a call no client request carries (the
// gateway's own): its messages go to the session's GET stream instead.
type noStream struct{}

func (noStream) Send([]byte) error { return errNoStream }

var errNoStream = errors.New("no request stream")

// switchStream is the stream of a call that outlives its first request (a
// 2026-07-28 call waiting for input): each retry takes it over.
type switchStream struct {
	mu  sync.Mutex
	cur Stream
}

func (w *switchStream) Send(msg []byte) error {
	w.mu.Lock()
	cur := w.cur
	w.mu.Unlock()
	return cur.Send(msg)
}

func (w *switchStream) set(s Stream) {
	w.mu.Lock()
	w.cur = s
	w.mu.Unlock()
}

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
			if method != "notifications/message" {
				g.serverNotification(srv, method, params)
				return
			}
			level, _ := wire.GetString(params, "level")
			if !s.wants(slices.Index(logLevels, level)) {
				return
			}
			msg := wire.AppendNotification(nil, method, params)
			if st := callStream(); st == nil || st.Send(msg) != nil {
				s.send(msg)
			}
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			if method == "ping" {
				return json.RawMessage(`{}`), nil
			}
			if missing := s.lacks(method, params); missing != "" {
				return nil, wire.Errorf(wire.CodeMethodNotFound, "%s refused: the client did not declare the %s capability", method, missing)
			}
			c := callOn()
			var st Stream
			if c != nil {
				st = c.stream
			}
			return s.request(ctx, st, method, g.traceBack(c, params))
		},
	}
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

// statelessMetaKeys are the _meta members that make a request one of the
// 2026-07-28 era; a session-era server must not see them (a dual-era one
// would take the request for the other era).
var statelessMetaKeys = []string{MetaProtocolVersion, MetaClientInfo, MetaClientCapabilities, MetaLogLevel}

// stripStatelessMeta removes those members, keeping the rest of _meta
// (progressToken and any of the client's own).
func stripStatelessMeta(params json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	if meta == nil {
		return params
	}
	stripped, removed := wire.Delete(meta, statelessMetaKeys...)
	if !removed {
		return params
	}
	out, err := wire.Set(params, "_meta", stripped)
	if err != nil {
		return params
	}
	return out
}
