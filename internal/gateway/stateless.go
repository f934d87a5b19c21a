package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// StatelessVersion is the stateless protocol version (no initialize, no
// session; version, identity and capabilities in every request's _meta).
const StatelessVersion = "2026-07-28"

// SupportedVersions lists every version the gateway serves, newest first.
var SupportedVersions = append([]string{StatelessVersion}, SessionVersions...)

// _meta keys of the 2026-07-28 era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Caching hints the gateway puts on its merged lists and discover result.
// The lists depend on the token (in host mode, each sandbox has its own
// view), hence private; clients learn of changes sooner through
// subscriptions/listen.
const (
	listTTLMillis = 30000
	cacheScope    = "private"
)

// statelessSession is a session for one 2026-07-28 request, made of what the
// request's _meta says about its client.
func (g *Gateway) statelessSession(params json.RawMessage) *Session {
	meta := wire.Get(params, "_meta")
	// No outbox: a 2026-07-28 request has no stream but its own (Listen
	// gives its session one).
	s := &Session{
		gw: g, protocolVersion: StatelessVersion, stateless: true,
		clientInfo: wire.Get(meta, MetaClientInfo), capabilities: wire.Get(meta, MetaClientCapabilities),
		done:  make(chan struct{}),
		calls: map[string]*call{}, logLevel: -1, // outgoing and subs are made when first needed
	}
	if level, ok := wire.GetString(meta, MetaLogLevel); ok {
		s.logLevel = slices.Index(logLevels, level)
		if s.logLevel >= 0 {
			g.ensureLevel(context.Background(), s.logLevel)
		}
	}
	return s
}

// HandleStateless answers one request of the 2026-07-28 era. ctx ends when
// the client closes the request's stream, which cancels the request.
func (g *Gateway) HandleStateless(ctx context.Context, m *wire.Message, stream Stream) Reply {
	// The session is this request's alone; it is not closed here, since a
	// call waiting for the client's input outlives the request.
	s := g.statelessSession(m.Params)
	switch m.Method {
	case "server/discover":
		return g.discover()
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return withCaching(s.Handle(ctx, m, stream), listTTLMillis)
	case "resources/read":
		// A read waiting for approval (see guardedModern) resumes the same way.
		if state, ok := wire.GetString(m.Params, "requestState"); ok && strings.HasPrefix(state, statePrefix) {
			return withCaching(g.resume(ctx, m, stream, strings.TrimPrefix(state, statePrefix)), 0)
		}
		return withCaching(s.Handle(ctx, m, stream), 0)
	case "ping", "resources/subscribe", "resources/unsubscribe", "logging/setLevel", "initialize":
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s is not part of %s", m.Method, StatelessVersion))
	case "tools/call", "prompts/get", "completion/complete":
		// A requestState of the gateway's own resumes a call waiting here;
		// any other belongs to a 2026-07-28 server and travels to it.
		if state, ok := wire.GetString(m.Params, "requestState"); ok && strings.HasPrefix(state, statePrefix) {
			return complete(g.resume(ctx, m, stream, strings.TrimPrefix(state, statePrefix)))
		}
		return complete(s.Handle(ctx, m, stream))
	}
	return complete(s.Handle(ctx, m, stream))
}

// discover answers server/discover.
func (g *Gateway) discover() Reply {
	res := map[string]any{
		"resultType":        "complete",
		"supportedVersions": SupportedVersions,
		"capabilities":      g.Router.capabilities(),
		"_meta":             map[string]any{MetaServerInfo: serverInfo{Name: g.Info.Name, Version: g.Info.Version}},
		"ttlMs":             listTTLMillis,
		"cacheScope":        cacheScope,
	}
	if in := g.Router.instructions(); in != "" {
		res["instructions"] = in
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errorReply(wire.Errorf(wire.CodeInternalError, "encoding the discover result: %v", err))
	}
	return Reply{Result: b}
}

// complete marks a result of a session-era server as complete, the way the
// 2026-07-28 era expects every final result to be marked.
func complete(r Reply) Reply {
	if r.Result == nil || wire.Get(r.Result, "resultType") != nil {
		return r
	}
	if res, err := wire.Set(r.Result, "resultType", json.RawMessage(`"complete"`)); err == nil {
		r.Result = res
	}
	return r
}

// withCaching marks a list or read result complete and adds caching hints.
func withCaching(r Reply, ttl int) Reply {
	r = complete(r)
	if r.Result == nil {
		return r
	}
	res := r.Result
	if wire.Get(res, "ttlMs") == nil {
		res, _ = wire.Set(res, "ttlMs", json.RawMessage(strconv.Itoa(ttl)))
	}
	if wire.Get(res, "cacheScope") == nil {
		res, _ = wire.Set(res, "cacheScope", json.RawMessage(`"`+cacheScope+`"`))
	}
	if res != nil {
		r.Result = res
	}
	return r
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Multi round-trip requests. A 2026-07-28 client cannot receive requests
// from a server; when a session-era server asks for input during its call, the
// gateway answers the client with an input-required result and keeps the
// server's call waiting. The client's retry carries the answers and the
// gateway's requestState, which names the waiting call and is signed, so it
// cannot be forged, and is good for one retry only.

// inputWait is a server call waiting for a 2026-07-28 client's input.
type inputWait struct {
	id      string
	method  string
	name    string // the tool or prompt, so a retry cannot move to another
	events  chan callEvent
	pending *inputRequest // the request the client must answer
	expires *time.Timer
	stream  *switchStream      // the call's messages go to the latest retry
	cancel  context.CancelFunc // ends the call at its server
}

// inputRequest is one request of a server waiting for the client's answer.
type inputRequest struct {
	key    string
	method string
	params json.RawMessage
	answer chan *wire.Message
}

// callEvent is what a server call running for a stateless client produces
// next: its final reply, or a request for input.
type callEvent struct {
	reply Reply
	input *inputRequest
}

const inputWaitTTL = 10 * time.Minute

type multiRoundTripState struct {
	once  sync.Once
	key   []byte
	mu    sync.Mutex
	waits map[string]*inputWait
}

func (g *Gateway) multiRoundTrip() *multiRoundTripState {
	g.multiRoundTripState.once.Do(func() {
		g.multiRoundTripState.key = make([]byte, 32)
		_, _ = rand.Read(g.multiRoundTripState.key)
		g.multiRoundTripState.waits = map[string]*inputWait{}
	})
	return &g.multiRoundTripState
}

// statePrefix marks the requestStates the gateway issues itself.
const statePrefix = "mcp-gateway:"

func (st *multiRoundTripState) sign(id string) string {
	mac := hmac.New(sha256.New, st.key)
	mac.Write([]byte(id))
	return statePrefix + base64.RawURLEncoding.EncodeToString([]byte(id)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (st *multiRoundTripState) verify(state string) (string, bool) {
	idPart, macPart, ok := strings.Cut(state, ".")
	if !ok {
		return "", false
	}
	id, err1 := base64.RawURLEncoding.DecodeString(idPart)
	got, err2 := base64.RawURLEncoding.DecodeString(macPart)
	if err1 != nil || err2 != nil {
		return "", false
	}
	mac := hmac.New(sha256.New, st.key)
	mac.Write(id)
	return string(id), hmac.Equal(got, mac.Sum(nil))
}

// forwardStateless runs a server call for a stateless client in the background,
// so that it can outlive this HTTP request while the client answers an
// input request, and returns its first event. A client that can be asked
// for nothing has its call run directly (forwardStatelessDirect).
func (s *Session) forwardStateless(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage) Reply {
	if !s.canBeAsked() {
		return s.forwardStatelessDirect(ctx, m, stream, srv, params)
	}
	g := s.gw
	events := make(chan callEvent, 4)
	s.inputs = events
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inputWaitTTL)
	sw := &switchStream{cur: stream}
	go func() {
		defer cancel()
		select { // nobody may be waiting any more: never block
		case events <- callEvent{reply: s.forwardObserved(callCtx, m, sw, srv, params)}:
		default:
		}
	}()
	w := &inputWait{method: m.Method, name: waitName(m.Params), events: events, stream: sw, cancel: cancel}
	return g.await(ctx, w, cancel)
}

// waitName is what a waiting call's retry must name again: the tool or
// prompt, or the resource read.
func waitName(params json.RawMessage) string {
	if name, ok := wire.GetString(params, "name"); ok {
		return name
	}
	uri, _ := wire.GetString(params, "uri")
	return uri
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

// forwardStatelessDirect runs a call on its request's goroutine: its client
// can be asked for nothing, so the call never waits for input and never
// outlives its request, and needs neither a goroutine of its own nor a
// hand-off of its answer. A server's request to such a client ends the
// call at once with the error failStateless gives, as on the other path.
func (s *Session) forwardStatelessDirect(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage) Reply {
	s.mu.Lock()
	s.direct = true
	s.mu.Unlock()
	reply := s.forwardObserved(ctx, m, stream, srv, params)
	s.mu.Lock()
	failure := s.failure
	s.mu.Unlock()
	if failure != nil {
		return errorReply(failure)
	}
	return reply
}

// await waits for the next event of a waiting call: a final reply ends it,
// an input request is handed to the client as an input-required result.
// A client that goes away ends the call.
func (g *Gateway) await(ctx context.Context, w *inputWait, cancel context.CancelFunc) Reply {
	select {
	case ev := <-w.events:
		if ev.input == nil {
			cancel()
			return ev.reply
		}
		w.pending = ev.input
		if w.id == "" {
			w.id = g.newID("gw-input-")
		}
		st := g.multiRoundTrip()
		st.mu.Lock()
		st.waits[w.id] = w
		st.mu.Unlock()
		w.expires = time.AfterFunc(inputWaitTTL, func() {
			st.mu.Lock()
			delete(st.waits, w.id)
			st.mu.Unlock()
			cancel()
		})
		res := map[string]any{
			"resultType":    "input_required",
			"inputRequests": map[string]any{ev.input.key: map[string]any{"method": ev.input.method, "params": ev.input.params}},
			"requestState":  st.sign(w.id),
		}
		return Reply{Result: mustJSON(res)}
	case <-ctx.Done():
		cancel()
		return errorReply(wire.Errorf(wire.CodeInternalError, "request cancelled: %v", ctx.Err()))
	}
}

// resume continues a waiting call with the client's answer from a retry.
func (g *Gateway) resume(ctx context.Context, m *wire.Message, stream Stream, state string) Reply {
	st := g.multiRoundTrip()
	id, ok := st.verify(state)
	if !ok {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "invalid requestState: it was not issued by this gateway or was altered"))
	}
	st.mu.Lock()
	w := st.waits[id]
	delete(st.waits, id)
	st.mu.Unlock()
	if w == nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "requestState already used or expired: send the request again without it"))
	}
	w.expires.Stop()
	name := waitName(m.Params)
	if m.Method != w.method || name != w.name {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "requestState belongs to %s %q, not %s %q", w.method, w.name, m.Method, name))
	}
	answer := wire.Get(wire.Get(m.Params, "inputResponses"), w.pending.key)
	if answer == nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "inputResponses lacks %q, the answer the server is waiting for", w.pending.key))
	}
	w.stream.set(stream)
	w.pending.answer <- &wire.Message{ID: json.RawMessage(`0`), Result: answer}
	return g.await(ctx, w, w.cancel)
}

// askStateless turns a server's request to a stateless client into an input
// request of the call in flight, and waits for the client's answer.
func (s *Session) askStateless(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	in := &inputRequest{key: s.gw.newID("input-"), method: method, params: params, answer: make(chan *wire.Message, 1)}
	select {
	case s.inputs <- callEvent{input: in}:
	case <-ctx.Done():
		return nil, wire.Errorf(wire.CodeInternalError, "%s: %v", method, ctx.Err())
	}
	select {
	case resp := <-in.answer:
		if resp.Error != nil {
			return nil, wire.DecodeError(resp.Error)
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, wire.Errorf(wire.CodeInternalError, "%s: no answer from the client: %v", method, ctx.Err())
	}
}

// codeMissingRequiredClientCapabilities is the 2026-07-28 error for a
// request that needs a client capability the client did not declare.
const codeMissingRequiredClientCapabilities = -32021

// failStateless ends the stateless client's request in flight with an error.
func (s *Session) failStateless(e *wire.Error) {
	s.mu.Lock()
	if s.direct { // the call's own cancel ends it; forwardStatelessDirect answers e
		s.failure = e
		for _, c := range s.calls {
			c.cancel()
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	select {
	case s.inputs <- callEvent{reply: errorReply(e)}:
	default:
	}
}
