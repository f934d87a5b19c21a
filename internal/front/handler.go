package front

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Header names of the streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// metaProtocolVersion is the _meta key a 2026-07-28 request carries its version in.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// DefaultPrimeAfter is Handler.PrimeAfter's default.
const DefaultPrimeAfter = 50 * time.Millisecond

// DefaultSlowClientTimeout is Handler.SlowClientTimeout's default.
const DefaultSlowClientTimeout = 10 * time.Second

// DefaultMaxBodyBytes bounds a request body when Handler.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 8 << 20

// DefaultStreamKeepalive is Handler.StreamKeepalive's default: under the
// 60 s read timeout of nginx's and most proxies' defaults.
const DefaultStreamKeepalive = 25 * time.Second

// DefaultBodyReadTimeout is Handler.BodyReadTimeout's default.
const DefaultBodyReadTimeout = 10 * time.Second

// Handler serves /mcp and /health. Set its fields before serving.
type Handler struct {
	// Gateway answers every MCP message.
	Gateway *gateway.Gateway
	// Token is the bearer token /mcp requires. Empty disables authentication;
	// the command line allows that only on a loopback listener, for tests.
	Token string
	// MaxBodyBytes bounds a request body (413 beyond); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a request's body may take to arrive
	// after its head: a POST whose body is not in by then gets 408 and its
	// connection is closed. The bound is lifted once the body is read, so
	// a long streamed response is not cut by it. 0 means
	// DefaultBodyReadTimeout; negative, no bound.
	BodyReadTimeout time.Duration
	// Health returns the /health document: with detail (the request
	// carries a valid bearer token, or authentication is off) everything it
	// knows, without only what an anonymous caller may see (status and
	// per-server state, never an error text). nil serves {"status":"ok"}.
	Health func(detail bool) any
	// Tenants, when set, replaces Gateway and Token: the bearer token
	// decides which gateway a request reaches (host mode: one per sandbox),
	// and a token it returns nil for gets 401. It must compare tokens in
	// constant time or by a hash.
	Tenants func(token string) *gateway.Gateway
	// SlowClientTimeout is how long a client's stream may stay unwritable
	// (its queue full, or a write making no progress) before the gateway
	// closes that stream, logging which; 0 means DefaultSlowClientTimeout.
	SlowClientTimeout time.Duration
	// StreamKeepalive is how long an SSE stream (a GET stream, a
	// subscriptions/listen stream, a call's response stream) may go without
	// a write before it gets a comment line, which clients skip: a proxy in
	// front of the gateway with a read timeout (nginx's is 60 s by default)
	// would otherwise close an idle stream, and its client would miss what
	// comes next. 0 means DefaultStreamKeepalive; negative, never.
	StreamKeepalive time.Duration
	// SessionIdleTimeout ends a session (and every upstream session it
	// holds) after this long without a request; 0 means never. A request
	// in progress, an open GET stream included, keeps its session alive.
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the open session-era sessions. An initialize
	// beyond it ends the idlest session of the tenant holding the most
	// sessions, when that is another tenant holding more than the new
	// session's; else the new session's tenant's own idlest session
	// without a call in progress; failing that it is refused with 503.
	// So no tenant is refused while another holds more. 0 means no limit.
	MaxSessions int
	// MaxSessionsPerTenant bounds one tenant's open sessions: a sandbox's
	// (with Tenants), else a client identity's (the clientInfo.name its
	// initialize sends). An initialize beyond it ends the tenant's own
	// session idle for longest (without a call in progress; a session
	// whose client only listens on a GET stream is idle), or is refused
	// with 503 when every one has a call in progress. 0 means no limit.
	MaxSessionsPerTenant int
	// ReplayBytesPerStream, ReplayBytesPerSession and ReplayBytes bound
	// the bytes the front keeps for clients resuming streams with
	// Last-Event-ID: per stream, per session, and in all. Beyond one the
	// oldest events go first: the stream's own, the session's oldest
	// stream's, and over ReplayBytes those of the session holding the most
	// of the tenant holding the most. Events a connected client has yet to
	// read are its queue and are never dropped. A resume asking for a
	// dropped event is refused with 409, naming the limit. 0 means no limit.
	ReplayBytesPerStream  int64
	ReplayBytesPerSession int64
	ReplayBytes           int64
	// PrimeAfter is how long a session-era request may go unanswered
	// before its response becomes a resumable SSE stream, opened with a
	// priming event (an id and a retry), so that a client whose connection
	// a proxy cuts during a long call can resume it with Last-Event-ID.
	// Quicker answers stay plain JSON. 0 means DefaultPrimeAfter; a
	// negative value never primes (only an interim message switches).
	PrimeAfter time.Duration
	// Metrics, when set, serves GET /metrics behind the same bearer token
	// as /mcp (any tenant's, with Tenants); nil answers 404.
	Metrics http.Handler
	// Telemetry, when set, counts, times and traces each request, taking
	// the client's trace context from its _meta or its HTTP headers.
	Telemetry *telemetry.Telemetry
	// Logger receives the front's own log lines (a slow client's stream
	// closed, a session expired); nil discards them.
	Logger *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	tenants  map[tenantKey]*tenant
	pending  int               // places taken by initializes in progress
	evicted  map[string]string // recently evicted session ids → why, for their 404
	evictLog []string          // their ids, oldest first

	replayBytes atomic.Int64 // held by every session's resumable streams
	watchOnce   sync.Once    // registers ReplayBytesHeld with the metrics

	initOnce    sync.Once
	stop        chan struct{} // closed by Close: stops the janitor
	closeOnce   sync.Once
	janitorOnce sync.Once
}

func (h *Handler) init() {
	h.initOnce.Do(func() { h.stop = make(chan struct{}) })
}

func (h *Handler) streamKeepalive() time.Duration {
	switch {
	case h.StreamKeepalive > 0:
		return h.StreamKeepalive
	case h.StreamKeepalive < 0:
		return 0
	}
	return DefaultStreamKeepalive
}

func (h *Handler) slowClientTimeout() time.Duration {
	if h.SlowClientTimeout > 0 {
		return h.SlowClientTimeout
	}
	return DefaultSlowClientTimeout
}

func (h *Handler) primeAfter() time.Duration {
	if h.PrimeAfter != 0 {
		return h.PrimeAfter
	}
	return DefaultPrimeAfter
}

// acceptsEventStream reports whether the client accepts an SSE response
// (the specification has every client accept both kinds).
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return discard
}

var discard = slog.New(slog.DiscardHandler)

// ServeHTTP routes /mcp and /health.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.startBodyDeadline(w, r)
	switch r.URL.Path {
	case "/health":
		h.serveHealth(w, r)
	case "/mcp":
		h.serveMCP(w, r)
	case "/metrics":
		h.serveMetrics(w, r)
	default:
		dropBody(w, r)
		http.NotFound(w, r)
	}
}

func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !rebindingSafe(r) {
		forbidRebinding(w)
		return
	}
	detail := h.gateway(r) != nil
	if !detail {
		dropBody(w, r)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var doc any = map[string]string{"status": "ok"}
	if h.Health != nil {
		doc = h.Health(detail)
	}
	writeJSON(w, http.StatusOK, doc)
}

// serveMetrics serves the Prometheus metrics to a caller holding a token.
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if h.Metrics == nil {
		dropBody(w, r)
		http.NotFound(w, r)
		return
	}
	if !rebindingSafe(r) {
		forbidRebinding(w)
		return
	}
	if h.gateway(r) == nil {
		unauthorized(w, r)
		return
	}
	h.Metrics.ServeHTTP(w, r)
}

// SessionCounts counts the open sessions by protocol version, for metrics.
func (h *Handler) SessionCounts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, s := range h.sessions {
		out[s.gs.ProtocolVersion()]++
	}
	return out
}

func forbidRebinding(w http.ResponseWriter) {
	refuseAndClose(w, http.StatusForbidden, "Forbidden: this loopback listener accepts only loopback Host and Origin headers")
}

func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	if !rebindingSafe(r) {
		forbidRebinding(w)
		return
	}
	gw := h.gateway(r)
	if gw == nil {
		unauthorized(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r, gw)
	case http.MethodGet:
		h.serveGet(w, r, gw)
	case http.MethodDelete:
		h.serveDelete(w, r, gw)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// gateway returns the gateway the request's token opens, or nil; a
// request it opens one for marks its connection authenticated
// (WithAuthMark).
func (h *Handler) gateway(r *http.Request) *gateway.Gateway {
	var gw *gateway.Gateway
	if h.Tenants != nil {
		if token, ok := bearer(r); ok {
			gw = h.Tenants(token)
		}
	} else if h.Token == "" || authorized(r, h.Token) {
		gw = h.Gateway
	}
	if gw != nil {
		MarkAuthenticated(r.Context())
	}
	return gw
}

func (h *Handler) servePost(w http.ResponseWriter, r *http.Request, gw *gateway.Gateway) {
	limit := h.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := readBody(w, r, limit)
	if err != nil { // the body deadline stays: net/http discards the rest under it
		var tooBig *http.MaxBytesError
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestTimeout, nil, wire.Errorf(wire.CodeInvalidRequest,
				"the request body did not arrive within %v of its head; send the whole body without pausing", h.bodyReadTimeout()))
			return
		}
		if errors.As(err, &tooBig) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, wire.Errorf(wire.CodeInvalidRequest, "request body exceeds %d bytes", tooBig.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, wire.Errorf(wire.CodeParseError, "reading the request body: %v", err))
		return
	}
	h.endBodyDeadline(w, r)
	m, err := wire.Parse(body)
	if err != nil {
		// Not JSON is a parse error; JSON that is no JSON-RPC message (a
		// batch, a repeated member, a bad id) an invalid request.
		code := wire.CodeInvalidRequest
		if errors.Is(err, wire.ErrNotJSON) {
			code = wire.CodeParseError
		}
		writeRPCError(w, http.StatusBadRequest, nil, wire.Errorf(int64(code), "malformed JSON-RPC message: %v", err))
		return
	}

	if _, stateless := requestedStatelessVersion(r, m); stateless {
		h.serveStateless(w, r, gw, m)
		return
	}
	if m.Method == "initialize" && m.IsRequest() {
		_, done := h.Telemetry.StartRequest(r.Context(), telemetry.Request{Era: "session", Method: m.Method, ID: m.ID, Params: m.Params, Header: r.Header})
		done(h.initialize(w, gw, m))
		return
	}

	sess, ok := h.session(w, r, gw, m)
	if !ok {
		return
	}
	sess.begin(true)
	defer sess.end(true)
	if v := r.Header.Get(headerProtocolVersion); v != "" && !slices.Contains(gateway.SessionVersions, v) {
		h.refuseVersion(w, m, v)
		return
	}
	switch {
	case m.IsNotification():
		sess.gs.HandleNotification(context.WithoutCancel(r.Context()), m)
		w.WriteHeader(http.StatusAccepted)
	case m.IsResponse():
		sess.gs.HandleResponse(m)
		w.WriteHeader(http.StatusAccepted)
	default:
		// A dropped connection is not a cancellation in the session era: the
		// client cancels with notifications/cancelled. The rest of the
		// call's stream waits for a GET with Last-Event-ID.
		st := &stream{h: h, w: w, ctx: r.Context(), sess: sess, reqID: m.ID}
		var prime *time.Timer
		if d := h.primeAfter(); d > 0 && acceptsEventStream(r) {
			prime = time.AfterFunc(d, st.prime)
		}
		ctx, done := h.Telemetry.StartRequest(r.Context(), telemetry.Request{Era: "session", Method: m.Method, ID: m.ID, Params: m.Params,
			SessionID: sess.logID(), ProtocolVersion: sess.gs.ProtocolVersion(), Header: r.Header})
		reply := sess.gs.Handle(gateway.WithCallerGone(ctx, r.Context()), m, st)
		if prime != nil {
			prime.Stop()
		}
		st.reply(m.ID, reply)
		done(reply)
	}
}

// readBody reads a request body of at most limit bytes; a longer one is a
// *http.MaxBytesError. A body of declared length up to 1 MiB is read in one
// piece; a longer one grows as it comes, not as the client declared.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	switch n := r.ContentLength; {
	case n > limit:
		return nil, &http.MaxBytesError{Limit: limit}
	case n >= 0 && n <= 1<<20:
		body := make([]byte, n)
		_, err := io.ReadFull(r.Body, body)
		return body, err
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// requestedStatelessVersion reports a request of the 2026-07-28 era: its
// version header or its _meta names a version newer than the session era.
func requestedStatelessVersion(r *http.Request, m *wire.Message) (string, bool) {
	v := r.Header.Get(headerProtocolVersion)
	if v >= "2026-07-28" {
		return v, true
	}
	if v != "" && r.Header.Get(headerSessionID) != "" {
		return "", false // a session's request: no need to look into its _meta
	}
	if len(m.Params) == 0 {
		return "", false
	}
	return wire.GetString(wire.Get(m.Params, "_meta"), metaProtocolVersion)
}

// refuseVersion answers with the specification's UnsupportedProtocolVersion
// error listing the versions served.
func (h *Handler) refuseVersion(w http.ResponseWriter, m *wire.Message, requested string) {
	data, _ := json.Marshal(map[string]any{"supported": gateway.SupportedVersions, "requested": requested})
	writeRPCError(w, http.StatusBadRequest, m.ID, &wire.Error{
		Code:    wire.CodeUnsupportedProtocolVersion,
		Message: "Unsupported protocol version " + requested + "; this gateway serves " + strings.Join(gateway.SupportedVersions, ", "),
		Data:    data,
	})
}

// initialize answers initialize and returns the answer (for telemetry).
func (h *Handler) initialize(w http.ResponseWriter, gw *gateway.Gateway, m *wire.Message) gateway.Reply {
	t, refusal := h.admit(h.tenantKey(gw, m))
	if refusal != "" {
		return h.refuseSession(w, m, refusal)
	}
	gs, result, werr := gw.Initialize(m.Params)
	if werr != nil {
		h.unreserve(t)
		writeRPCError(w, http.StatusOK, m.ID, werr)
		return gateway.Reply{Error: werr.Marshal()}
	}
	s := &session{id: newSessionID(), gs: gs, h: h, tenant: t}
	now := time.Now().UnixNano()
	s.last.Store(now)
	s.lastCall.Store(now)
	h.mu.Lock()
	if h.tenants == nil { // Close ran meanwhile
		h.mu.Unlock()
		gs.Close()
		return h.refuseSession(w, m, "this gateway is shutting down")
	}
	t.pending--
	h.pending--
	t.members[s] = struct{}{}
	h.sessions[s.id] = s
	h.mu.Unlock()
	if h.SessionIdleTimeout > 0 {
		h.janitorOnce.Do(func() {
			h.init()
			go h.janitor(h.SessionIdleTimeout)
		})
	}
	w.Header().Set(headerSessionID, s.id)
	reply := gateway.Reply{Result: result}
	writeReply(w, 0, m.ID, reply)
	return reply
}

// janitor ends the sessions idle for longer than timeout, until Close.
func (h *Handler) janitor(timeout time.Duration) {
	tick := time.NewTicker(max(timeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-tick.C:
			h.expire(now.Add(-timeout))
		}
	}
}

// expire ends the sessions without a request in progress since before.
func (h *Handler) expire(before time.Time) {
	var ended []*session
	h.mu.Lock()
	for _, s := range h.sessions {
		if s.busy.Load() == 0 && s.last.Load() < before.UnixNano() {
			ended = append(ended, s)
			h.removeLocked(s)
		}
	}
	h.mu.Unlock()
	for _, s := range ended {
		h.logger().Info("session expired: no request for the session idle timeout; its client must initialize again",
			"session", s.logID(), "timeout", h.SessionIdleTimeout)
		h.endSession(s)
	}
}

// session finds the request's session, answering 400 or 404 itself when
// there is none. A session of another gateway (another token's) is none.
func (h *Handler) session(w http.ResponseWriter, r *http.Request, gw *gateway.Gateway, m *wire.Message) (*session, bool) {
	var rid json.RawMessage
	if m != nil {
		rid = m.ID
	}
	id := r.Header.Get(headerSessionID)
	if id == "" {
		writeRPCError(w, http.StatusBadRequest, rid, wire.Errorf(wire.CodeInvalidRequest, "Bad Request: missing %s header; send initialize first", headerSessionID))
		return nil, false
	}
	h.mu.Lock()
	sess := h.sessions[id]
	why := h.evicted[id]
	h.mu.Unlock()
	if sess == nil || sess.gs.Gateway() != gw {
		if why != "" && sess == nil {
			writeRPCError(w, http.StatusNotFound, rid, wire.Errorf(wire.CodeInvalidRequest, "session not found: the gateway ended it to make room for a new session (%s); send initialize to start a new one", why))
			return nil, false
		}
		writeRPCError(w, http.StatusNotFound, rid, wire.Errorf(wire.CodeInvalidRequest, "session not found: it ended or never existed; send initialize to start a new one"))
		return nil, false
	}
	return sess, true
}

func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request, gw *gateway.Gateway) {
	sess, ok := h.session(w, r, gw, nil)
	if !ok {
		return
	}
	h.mu.Lock()
	if h.sessions[sess.id] == sess {
		h.removeLocked(sess)
	}
	h.mu.Unlock()
	h.endSession(sess)
	w.WriteHeader(http.StatusOK)
}

// serveGet opens a stream of the session's server-initiated messages or,
// with Last-Event-ID, resumes one of the session's streams after that
// event: a GET stream goes on with new messages, a POST's stream ends with
// its request's answer.
func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request, gw *gateway.Gateway) {
	sess, ok := h.session(w, r, gw, nil)
	if !ok {
		return
	}
	sess.begin(false)
	defer sess.end(false)
	if _, ok := w.(http.Flusher); !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	var ev *events
	var wr *writer
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		id, seq, ok := parseEventID(last)
		if ok {
			ev = sess.lookup(id)
		}
		if ev == nil {
			writeRPCError(w, http.StatusBadRequest, nil, wire.Errorf(wire.CodeInvalidRequest,
				"Last-Event-ID %q names no stream of this session that can be resumed (it ended or was never opened); open a GET stream without it", last))
			return
		}
		var gap *replayGap
		if wr, gap = ev.resume(seq + 1); gap != nil {
			h.refuseGap(w, last, id, gap)
			return
		}
	} else {
		ev = h.newEvents(sess.newStreamID('g'), sess.logID())
		sess.keep(ev)
		wr = ev.attach(0)
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var more <-chan []byte
	var closing <-chan struct{}
	if ev.id[0] == 'g' {
		more, closing = sess.gs.Outbox(), gw.Closing()
	}
	complete, _ := ev.serve(r.Context(), w, wr, more, sess.gs.Done(), closing)
	if complete {
		sess.forget(ev.id)
	}
}

// Forget drops the sessions of a gateway that is going away (a removed
// sandbox's), ending them.
func (h *Handler) Forget(gw *gateway.Gateway) {
	h.mu.Lock()
	var ended []*session
	for _, s := range h.sessions {
		if s.gs.Gateway() == gw {
			ended = append(ended, s)
			h.removeLocked(s)
		}
	}
	h.mu.Unlock()
	for _, s := range ended {
		h.endSession(s)
	}
}

// Close ends every session and stops the expiry of idle ones.
func (h *Handler) Close() {
	h.init()
	h.closeOnce.Do(func() { close(h.stop) })
	h.mu.Lock()
	sessions := h.sessions
	h.sessions, h.tenants, h.pending = nil, nil, 0
	h.mu.Unlock()
	for _, s := range sessions {
		h.endSession(s)
	}
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
