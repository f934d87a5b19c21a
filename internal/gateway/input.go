package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// How an admitted request runs: a built-in tool at once; a server's
// request through the Observer (forwardObserved), on the request's own
// goroutine, or, for a 2026-07-28 client a server may ask for input, in the
// background, so that the call can outlive the request.
//
// Multi round-trip requests. A 2026-07-28 client cannot receive requests
// from a server; when a session-era server asks for input during its call, the
// gateway answers the client with an input-required result and keeps the
// server's call waiting. The client's retry carries the answers and the
// gateway's requestState, which names the waiting call and is signed, so it
// cannot be forged, and is good for one retry only.

// route is where an admitted request goes: one of the gateway's own tools,
// or a server with the params it is sent (a tool or prompt under the name
// the server knows it by).
type route struct {
	builtin *item // a built-in tool; nil for a server's request
	srv     *server
	params  json.RawMessage
}

// forward runs an admitted request on behalf of the session's client and
// returns the answer: the server's unchanged.
func (s *Session) forward(ctx context.Context, m *wire.Message, stream Stream, rt route) Reply {
	switch {
	case rt.builtin != nil:
		return s.callBuiltin(ctx, m, stream, rt.builtin)
	case !s.stateless:
		return s.forwardObserved(ctx, m, stream, rt.srv, rt.params)
	case !s.canBeAsked() || isInner(ctx):
		return s.forwardStatelessDirect(ctx, m, stream, rt.srv, rt.params)
	}
	return s.forwardStateless(ctx, m, stream, rt.srv, rt.params)
}

// inputWait is a server call waiting for a 2026-07-28 client's input.
type inputWait struct {
	id      string
	method  string
	name    string // the tool or prompt, so a retry cannot move to another
	events  chan callEvent
	pending []*inputRequest // the requests the client must answer
	expires *time.Timer
	stream  *switchStream      // the call's messages go to the latest retry
	cancel  context.CancelFunc // ends the call at its server
	client  string             // clientKey of its client, which it counts against
	seq     uint64             // order of its first wait: the oldest goes first
	sess    *Session           // the call's, whose unasked flag its results clear; nil for the guard's
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
	waits map[string]*inputWait // and the ids and timers of the waits in it
	seq   uint64
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
// input request, and returns its first event. (forward runs the call of a
// client that can be asked for nothing directly: forwardStatelessDirect.)
func (s *Session) forwardStateless(ctx context.Context, m *wire.Message, stream Stream, srv *server, params json.RawMessage) Reply {
	g := s.gw
	events := make(chan callEvent, 4)
	s.inputs = events
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inputWaitTTL)
	sw := &switchStream{cur: stream}
	w := &inputWait{method: m.Method, name: waitName(m.Params), events: events, stream: sw, cancel: cancel, client: clientKey(s.clientInfo), sess: s}
	go func() {
		defer cancel()
		reply := g.Router.callResult(m.Method, srv, s.forwardObserved(callCtx, m, sw, srv, params)) // apps.go: renamed ui:// URIs, also after a resume
		g.endWait(w)
		select { // nobody may be waiting any more: never block
		case events <- callEvent{reply: reply}:
		default:
		}
	}()
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
		inputs, final, done := g.gather(ctx, w.events, ev.input)
		if w.sess != nil {
			w.sess.unasked.Store(false) // what it gathered goes out now
		}
		switch {
		case final != nil:
			cancel()
			return *final
		case done:
			cancel()
			return errorReply(wire.Errorf(wire.CodeInternalError, "request cancelled: %v", ctx.Err()))
		}
		w.pending = inputs
		st := g.multiRoundTrip()
		st.mu.Lock()
		var dropped *inputWait
		if w.id == "" { // a new wait; a call waiting again keeps its place
			var werr *wire.Error
			if dropped, werr = g.admitWait(st, w); werr != nil {
				st.mu.Unlock()
				cancel()
				return errorReply(werr)
			}
			w.id = g.newID("gw-input-")
			st.seq++
			w.seq = st.seq
		}
		st.waits[w.id] = w
		w.expires = time.AfterFunc(inputWaitTTL, func() {
			st.mu.Lock()
			if st.waits[w.id] == w {
				delete(st.waits, w.id)
			}
			st.mu.Unlock()
			cancel()
		})
		id := w.id
		st.mu.Unlock()
		if dropped != nil {
			dropped.cancel()
		}
		requests := make(map[string]any, len(inputs))
		for _, in := range inputs {
			requests[in.key] = map[string]any{"method": in.method, "params": in.params}
		}
		res := map[string]any{
			"resultType":    "input_required",
			"inputRequests": requests,
			"requestState":  st.sign(id),
		}
		return Reply{Result: mustJSON(res)}
	case <-ctx.Done():
		cancel()
		return errorReply(wire.Errorf(wire.CodeInternalError, "request cancelled: %v", ctx.Err()))
	}
}

// maxGathered bounds the input requests of one input-required result.
const maxGathered = 16

// gather collects, after a call's first input request, the others its
// server sends before it goes quiet for the gather window (--input-gather),
// so that requests a server sends at once (the Go SDK sends the input
// requests of one result as concurrent requests on a session) reach the
// client in one input-required result, each under its own key, as the
// server would have returned them. Which requests come together is the
// server's timing; each is answered under its own key whatever the
// grouping. final is the call's reply when it ended meanwhile; done says
// the client went away.
func (g *Gateway) gather(ctx context.Context, events <-chan callEvent, first *inputRequest) (inputs []*inputRequest, final *Reply, done bool) {
	inputs = []*inputRequest{first}
	window := g.Limits.inputGather()
	if window <= 0 {
		return inputs, nil, false
	}
	quiet := time.NewTimer(window)
	defer quiet.Stop()
	for len(inputs) < maxGathered {
		select {
		case ev := <-events:
			if ev.input == nil {
				return nil, &ev.reply, false
			}
			inputs = append(inputs, ev.input)
			quiet.Reset(window)
		case <-quiet.C:
			return inputs, nil, false
		case <-ctx.Done():
			return nil, nil, true
		}
	}
	return inputs, nil, false
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
	if w != nil {
		w.expires.Stop()
	}
	st.mu.Unlock()
	if w == nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "requestState already used or expired (a call waits %s for its input, and less when the gateway holds --max-input-waits of them): send the request again without it", inputWaitTTL))
	}
	name := waitName(m.Params)
	if m.Method != w.method || name != w.name {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "requestState belongs to %s %q, not %s %q", w.method, w.name, m.Method, name))
	}
	responses := wire.Get(m.Params, "inputResponses")
	answers := make([]json.RawMessage, len(w.pending))
	for i, in := range w.pending {
		if answers[i] = wire.Get(responses, in.key); answers[i] == nil {
			w.cancel()
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "inputResponses lacks %q, an answer the server is waiting for (the call is ended: send the request again without requestState)", in.key))
		}
	}
	w.stream.set(stream)
	for i, in := range w.pending {
		in.answer <- &wire.Message{ID: json.RawMessage(`0`), Result: answers[i]}
	}
	return g.await(ctx, w, w.cancel)
}

// admitWait decides whether a new wait w may be kept, st.mu held: a
// client at its own limit is refused; at the gateway's, the oldest wait of
// the client holding the most is dropped (returned, to be cancelled once
// st.mu is released), never that of a client below it.
func (g *Gateway) admitWait(st *multiRoundTripState, w *inputWait) (dropped *inputWait, werr *wire.Error) {
	perClient, total := g.Limits.inputWaitsPerClient(), g.Limits.inputWaits()
	held := map[string]int{}
	for _, o := range st.waits {
		held[o.client]++
	}
	if n := held[w.client]; n >= perClient {
		g.quota.refuse(LimitInputWaitsPerClient)
		g.Router.log.Warn("refused a call waiting for input: its client has too many unanswered input requests", "client", w.client, "waiting", n, "limit", perClient)
		return nil, wire.Errorf(wire.CodeInvalidRequest, "client %q already has %d unanswered input requests (calls waiting for its answer, --max-input-waits-per-client %d): answer them (retry each with its inputResponses and requestState) or abandon them before making more calls that ask for input", w.client, n, perClient)
	}
	if len(st.waits) < total {
		return nil, nil
	}
	for _, o := range st.waits {
		if dropped == nil || held[o.client] > held[dropped.client] || held[o.client] == held[dropped.client] && o.seq < dropped.seq {
			dropped = o
		}
	}
	delete(st.waits, dropped.id)
	dropped.expires.Stop()
	g.quota.drop("input_wait")
	g.Router.log.Warn("dropped the oldest call waiting for input of the client holding the most, to make room (--max-input-waits)", "client", dropped.client, "waiting", held[dropped.client], "limit", total)
	return dropped, nil
}

// endWait forgets the wait of a call that ended by itself (its server
// answered or failed, its approval timed out): it holds nothing any more.
func (g *Gateway) endWait(w *inputWait) {
	st := g.multiRoundTrip()
	st.mu.Lock()
	if w.id != "" && st.waits[w.id] == w {
		delete(st.waits, w.id)
		w.expires.Stop()
	}
	st.mu.Unlock()
}

// askStateless turns a server's request to a stateless client into an input
// request of the call in flight, and waits for the client's answer.
func (s *Session) askStateless(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	resp, handed, err := s.gw.askInput(ctx, s.inputs, method, params)
	switch {
	case err != nil && !handed:
		return nil, wire.Errorf(wire.CodeInternalError, "%s: %v", method, err)
	case err != nil:
		return nil, wire.Errorf(wire.CodeInternalError, "%s: no answer from the client: %v", method, err)
	case resp.Error != nil:
		return nil, wire.DecodeError(resp.Error)
	}
	return resp.Result, nil
}

// askInput hands a question for the client of a stateless call in flight
// (a server's request, or the guard's approval) to that call's event loop
// on events, which returns it as an input request, and waits for the
// client's answer. err is ctx's when it ends first; handed says whether
// the question had been handed over by then.
func (g *Gateway) askInput(ctx context.Context, events chan<- callEvent, method string, params json.RawMessage) (resp *wire.Message, handed bool, err error) {
	in := &inputRequest{key: g.newID("input-"), method: method, params: params, answer: make(chan *wire.Message, 1)}
	select {
	case events <- callEvent{input: in}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	select {
	case resp := <-in.answer:
		return resp, true, nil
	case <-ctx.Done():
		return nil, true, ctx.Err()
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
