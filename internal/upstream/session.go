package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

const (
	// requestOverhead is room for a request's envelope around its params.
	requestOverhead = 64
	acceptPOST      = "application/json, text/event-stream"
	acceptSSE       = "text/event-stream"
	// errorBodyBytes of an unexpected response are read, for its message.
	errorBodyBytes = 64 << 10
)

// session is one MCP session with a remote server, on either transport. It
// is never re-established; HTTP replaces it.
//
// Goroutines and their owner: the session's rpc.Conn holds the reader of
// every stream (the GET stream, the legacy event stream, what is left of a
// call's response stream after its answer; the call reads it until then),
// the handlers of the server's requests and the background posts (answers,
// notifications/cancelled). All end when ctx does; shutdown cancels it and
// waits for them.
type session struct {
	h        *HTTP
	sse      bool     // the legacy HTTP+SSE transport
	endpoint *url.URL // where messages are POSTed

	ctx    context.Context // ends when the session stops
	cancel context.CancelFunc
	// listenCtx ends the GET stream, also when the session merely expired.
	listenCtx  context.Context
	stopListen context.CancelFunc
	// rpc correlates the session's messages, whichever stream they come on.
	rpc *rpc.Conn

	initResult json.RawMessage // set before the session is published
	// jsonAnswers: the server answered initialize with plain JSON, not an
	// event stream; set before the session is published.
	jsonAnswers bool

	mu      sync.Mutex
	id      string                         // Mcp-Session-Id
	version string                         // the negotiated version, sent as MCP-Protocol-Version once known
	hdr     atomic.Pointer[sessionHeaders] // nil: to be prepared again (id or version changed)
	// listenReady is closed once the GET stream's first attempt has been
	// answered; nil until the stream is opened (startListening).
	listenReady chan struct{}
	end         *sessionEnd // why it went down
	isDown      atomic.Bool // end != nil, for the lock-free fast path
	// modern: a server of the 2026-07-28 era, no session (modern_http.go).
	modern atomic.Bool
}

// sessionEnd says why a session went down, for the calls it fails.
//
// An expired session (the server answered 404 for it) takes no new calls,
// but the calls in flight keep their own exchanges: each ends with its
// response, its own 404 (then it is sent again on a new session) or the end
// of its stream. A closed session, or a legacy one whose event stream ended,
// stops at once and fails its calls.
type sessionEnd struct {
	closed  bool   // the upstream was closed
	phrase  string // what the server did: "ended the session (HTTP 404)"
	expired bool   // the server forgot the session; it needs no DELETE
}

func newSession(h *HTTP, sse bool, endpoint *url.URL) *session {
	s := &session{
		h:        h,
		sse:      sse,
		endpoint: endpoint,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.listenCtx, s.stopListen = context.WithCancel(s.ctx)
	s.rpc = rpc.New(s.ctx, h.opts.Name, h.log, h.hooks, s)
	return s
}

func (s *session) name() string { return s.h.opts.Name }

// initialize performs the MCP handshake on a new session.
func (s *session) initialize(ctx context.Context) error {
	discoverFirst := s.h.opts.DiscoverFirst && !s.sse
	if discoverFirst {
		if s.discoverModern(ctx) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q did not answer server/discover at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
	}
	resp, err := s.call(ctx, "initialize", s.h.initParams)
	if !discoverFirst && initializeRefused(err, resp) && s.discoverModern(ctx) {
		return nil // a server of the 2026-07-28 era, which has no initialize
	}
	switch {
	case errors.Is(err, errSessionExpired) || errors.Is(err, errNotSent):
		return s.endError("initialize")
	case isContextError(err):
		return fmt.Errorf("mcp server %q did not answer initialize at %s: %w", s.name(), redactURL(s.h.url), err)
	case err != nil:
		return err
	case resp.Error != nil:
		return fmt.Errorf("mcp server %q refused initialize: %w; check its url and headers", s.name(), wire.DecodeError(resp.Error))
	}
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil || result.ProtocolVersion == "" {
		return newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered initialize wrongly: its result has no protocolVersion: %.200s; is it an MCP server?", s.name(), resp.Result)
	}
	if result.ProtocolVersion != s.h.opts.ProtocolVersion {
		s.h.log.Debug(fmt.Sprintf("mcp server %q chose protocol version %s", s.name(), result.ProtocolVersion), "asked", s.h.opts.ProtocolVersion)
	}
	s.initResult = resp.Result
	s.setVersion(result.ProtocolVersion)
	err = s.postMessage(ctx, "notifications/initialized", wire.AppendNotification(nil, "notifications/initialized", nil))
	if errors.Is(err, errSessionExpired) {
		return s.endError("notifications/initialized")
	}
	return err
}

// call sends one request and waits for its response. Its errors are
// complete messages, except errNotSent and errSessionExpired (the request
// was not processed; HTTP retries on a new session) and ctx's.
func (s *session) call(ctx context.Context, method string, params json.RawMessage) (wire.Response, error) {
	// The request and its response stream end when ctx ends before the
	// answer, or when the session goes down.
	//
	// A response stream outlives the call: once the answer is in, its
	// reader reads it to its end, so that its connection goes back to the
	// pool instead of being dropped under the read (which a context derived
	// from ctx, ended by the caller as soon as Call returns, would do). So
	// the request's context derives from the session's, carries none of
	// ctx's values, and is cancelled when ctx ends.
	handedOff := false                                                   // the response stream's reader owns cancelReq
	reqCtx, cancelReq := context.WithCancel(withSpanContext(s.ctx, ctx)) // the span context, for the headers
	stopWatching := context.AfterFunc(ctx, cancelReq)
	reqCtx = withCallDeadline(reqCtx, ctx) // an authorization bounds its wait by it
	defer func() {
		stopWatching()
		if !handedOff {
			cancelReq()
		}
	}()

	c, ok := s.rpc.Begin(method)
	if !ok {
		return wire.Response{}, errNotSent
	}
	id := c.ID()

	if s.modern.Load() {
		params = modernMeta(params, s.h.opts.ClientInfo, s.h.opts.Capabilities)
	}
	hdr := modernHeaders(method, params)
	if method == "tools/call" {
		s.h.paramHeaders.add(hdr, params)
	}
	reqCtx = context.WithValue(reqCtx, modernHeadersKey{}, hdr)
	body := wire.AppendIntRequest(make([]byte, 0, requestOverhead+len(method)+len(params)), id, method, params)
	var err error
	if s.sse {
		err = s.postMessage(reqCtx, method, body)
	} else {
		handedOff, err = s.exchange(reqCtx, cancelReq, id, method, body)
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return c.Abandon(ctx, true)
		case errors.Is(err, errSessionExpired): // not processed: HTTP retries it
			c.Forget()
			return wire.Response{}, errSessionExpired
		case errors.As(err, new(*authError)):
			// Refused for its credentials, so never processed; this error
			// says why, whatever the session's end (which a lost grant
			// brings about at once: its instance restarts) delivered.
			c.Forget()
			return wire.Response{}, err
		case isContextError(err): // the session went down under the request
			if r, ok := c.Take(); ok {
				return r.Response, r.Err
			}
			return wire.Response{}, s.endError(method)
		}
		if r, ok := c.Take(); ok {
			return r.Response, r.Err // answered after all (a JSON-RPC error body)
		}
		return wire.Response{}, err
	}
	return c.Wait(ctx, true)
}

// Send POSTs one message that gets no response in the HTTP answer
// (rpc.Sender): a notification or an answer to the server, within Timeout.
func (s *session) Send(ctx context.Context, what string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.h.opts.Timeout)
	defer cancel()
	return s.postMessage(ctx, what, msg)
}

// exchange POSTs a request over streamable HTTP and handles the answer: a
// JSON body is delivered at once; an event stream is read until the
// response arrives (on the caller's goroutine: no hand-off to another), then
// read to its end in the background. handedOff says that background reader
// was started: it calls cancel when it is done.
func (s *session) exchange(ctx context.Context, cancel context.CancelFunc, id uint64, method string, body []byte) (handedOff bool, err error) {
	resp, err := s.do(ctx, http.MethodPost, body, "")
	if err != nil {
		return false, s.transportError(method, err)
	}
	if method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			s.setID(sid)
		}
	}
	if err := s.checkStatus(resp, method, id); err != nil {
		return false, err
	}
	ct := mediaType(resp.Header.Get("Content-Type"))
	if method == "initialize" {
		s.jsonAnswers = ct == "application/json"
	}
	switch {
	case ct == "text/event-stream":
		rest := s.readResponseStream(ctx, resp, id, method)
		if rest == nil {
			return false, nil
		}
		if !s.rpc.Go(func() {
			defer cancel()
			drain(rest)
			rest.Close()
		}) {
			rest.Close()
			return false, nil
		}
		return true, nil
	case ct == "application/json":
		defer resp.Body.Close()
		data, err := readCapped(resp.Body, s.h.opts.MaxResponseBytes)
		if err != nil {
			return false, s.readError(method, err)
		}
		msg, err := wire.Parse(data)
		if err != nil {
			return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with JSON that is not a JSON-RPC message (%v): %s", s.name(), method, err, preview(data))
		}
		if got := s.rpc.Dispatch(msg); got != id {
			return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with a JSON body that is not its response: %s", s.name(), method, preview(data))
		}
		return false, nil
	case resp.StatusCode == http.StatusAccepted:
		resp.Body.Close()
		return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered the request %s with 202 Accepted and no response", s.name(), method)
	default:
		resp.Body.Close()
		return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with Content-Type %q; want application/json or text/event-stream", s.name(), method, ct)
	}
}

// readResponseStream reads a call's event stream until its response
// arrives, and returns the body left to read then (nil when the stream
// ended without it: the call's outcome is then delivered, or ctx ended). A
// stream that ends first is resumed with GET and Last-Event-ID, as
// 2025-11-25 servers may close it and let the client poll. ctx ends when
// the caller gives up before the answer or the session goes down.
func (s *session) readResponseStream(ctx context.Context, resp *http.Response, id uint64, method string) (rest io.ReadCloser) {
	sr := getResponseReader(resp.Body, s.h.opts.MaxResponseBytes)
	defer putResponseReader(sr)
	fruitless := 0
	for {
		answered, err := s.consume(sr, id)
		if answered {
			return resp.Body
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			return nil // the call side reports an abandoned call
		}
		if sr.received {
			fruitless = 0
		} else {
			fruitless++
		}
		if sr.lastID == "" || fruitless > resumeAttempts {
			s.rpc.Resolve(id, wire.Response{}, newRemoteError([]error{ErrRemoteProtocol},
				"mcp server %q closed the response stream of %s before answering (%v)", s.name(), method, streamEnd(err)))
			return nil
		}
		if !sleep(ctx, retryDelay(sr.retry)) {
			return nil
		}
		resp, err = s.do(ctx, http.MethodGet, nil, sr.lastID)
		if err != nil {
			if ctx.Err() == nil {
				s.rpc.Resolve(id, wire.Response{}, s.transportError(method, err))
			}
			return nil
		}
		if err := s.checkStatus(resp, method, 0); err != nil {
			if errors.Is(err, errSessionExpired) {
				err = s.endError(method)
			}
			s.rpc.Resolve(id, wire.Response{}, fmt.Errorf("mcp server %q: resuming the response stream of %s: %w", s.name(), method, err))
			return nil
		}
		if ct := mediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
			resp.Body.Close()
			s.rpc.Resolve(id, wire.Response{}, newRemoteError([]error{ErrRemoteProtocol},
				"mcp server %q resumed the response stream of %s with Content-Type %q", s.name(), method, ct))
			return nil
		}
		sr.reset(resp.Body)
	}
}

func streamEnd(err error) string {
	if err == nil || err == io.EOF {
		return "end of stream"
	}
	return err.Error()
}

// consume reads events from a stream and dispatches their messages. With
// awaited set (a call's response stream) it returns once that response has
// been delivered, answered true; otherwise when the stream ends.
func (s *session) consume(sr *sseReader, awaited uint64) (answered bool, err error) {
	sr.messages = eventMessages{s: s, sr: sr, awaited: awaited}
	answered, err = s.rpc.Serve(&sr.messages, awaited)
	if err == errAwaitedTooLarge {
		return true, nil
	}
	return answered, err
}

// eventMessages reads the JSON-RPC messages of an event stream
// (rpc.Reader): "message" events; others are skipped, and so is an event
// that is not JSON-RPC, with a warning. An event over the size limit fails
// the call it answers (see oversize); when that is the awaited call, the
// stream's reading ends with errAwaitedTooLarge.
type eventMessages struct {
	s       *session
	sr      *sseReader
	awaited uint64
	msg     wire.Message
}

var errAwaitedTooLarge = errors.New("the awaited response is over the size limit")

func (m *eventMessages) Read() (*wire.Message, error) {
	for {
		ev, err := m.sr.next()
		if err != nil {
			return nil, err
		}
		if ev.name != "" && ev.name != "message" {
			continue
		}
		if ev.oversize {
			if m.s.oversize(ev, m.awaited) {
				return nil, errAwaitedTooLarge
			}
			continue
		}
		if err := wire.ParseInto(&m.msg, ev.data); err != nil {
			m.s.h.log.Warn(fmt.Sprintf("mcp server %q sent an event that is not a JSON-RPC message; ignored", m.s.name()), "err", err, "data", preview(ev.data))
			continue
		}
		return &m.msg, nil
	}
}

// oversize handles an event longer than MaxResponseBytes: it fails the call
// it answers (the stream's own call, or the one its id names on the legacy
// stream) and tells the server to stop working on it. It reports whether the
// awaited call was failed.
func (s *session) oversize(ev *sseEvent, awaited uint64) bool {
	id := awaited
	if id == 0 {
		id, _ = rpc.ParseID(ev.id)
	}
	method := s.rpc.Method(id)
	if id == 0 || method == "" {
		s.h.log.Warn(fmt.Sprintf("mcp server %q sent a message longer than %d bytes that answers no call; ignored", s.name(), s.h.opts.MaxResponseBytes))
		return false
	}
	if s.rpc.Resolve(id, wire.Response{}, s.tooLarge(method)) {
		s.rpc.SendCancelled(id, "the response is over the gateway's size limit")
	}
	return awaited != 0
}

func (s *session) tooLarge(method string) error {
	return newRemoteError([]error{ErrResponseTooLarge}, "mcp server %q answered %s with more than %d bytes, the gateway's limit for one response; the call failed", s.name(), method, s.h.opts.MaxResponseBytes)
}

func (s *session) readError(method string, err error) error {
	if errors.Is(err, errTooLarge) {
		return s.tooLarge(method)
	}
	if isContextError(err) {
		return err
	}
	return fmt.Errorf("mcp server %q: reading the answer to %s: %w", s.name(), method, err)
}

// postMessage POSTs a message that gets no response in the HTTP answer: a
// notification, an answer to the server, or (legacy transport) a request,
// whose response comes on the event stream.
func (s *session) postMessage(ctx context.Context, what string, body []byte) error {
	if strings.HasPrefix(what, "notifications/") && ctx.Value(modernHeadersKey{}) == nil {
		ctx = context.WithValue(ctx, modernHeadersKey{}, http.Header{"Mcp-Method": {what}})
	}
	resp, err := s.do(ctx, http.MethodPost, body, "")
	if err != nil {
		return s.transportError(what, err)
	}
	defer resp.Body.Close()
	if err := s.checkStatus(resp, what, 0); err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyBytes)) //nolint:errcheck // lets the connection be reused
	return nil
}

// do sends one HTTP request of the session: POST a message to the endpoint,
// GET a stream (resuming after lastEventID if set), or DELETE the session.
// The request is built by hand, with the session's prepared headers: what
// http.NewRequest would do, without parsing the URL again and building its
// headers anew for every message.
func (s *session) do(ctx context.Context, method string, body []byte, lastEventID string) (*http.Response, error) {
	target := s.h.url
	if method == http.MethodPost && s.endpoint != nil {
		target = s.endpoint
	}
	hs := s.headers()
	var header http.Header
	switch {
	case method == http.MethodPost:
		header = traceHeaders(ctx, hs.post)
	case method == http.MethodGet && lastEventID == "":
		header = hs.get
	case method == http.MethodGet:
		header = hs.get.Clone()
		header.Set("Last-Event-ID", lastEventID)
	default:
		header = hs.base
	}
	if s.h.client.Jar != nil {
		header = header.Clone() // the client adds the jar's cookies to it
	}
	req := http.Request{
		Method:     method,
		URL:        target,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Host:       target.Host,
	}
	if body != nil {
		// As http.NewRequest sets them: the transport knows a NopCloser of
		// a *bytes.Reader is in memory and writes it with the headers, in
		// one write.
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return s.h.send(req.WithContext(ctx))
}

// removeEmptyPort drops the colon of a host with an empty port ("host:"),
// as http.NewRequest does with the URLs it parses.
func removeEmptyPort(host string) string {
	if strings.LastIndex(host, ":") > strings.LastIndex(host, "]") {
		return strings.TrimSuffix(host, ":")
	}
	return host
}

// sessionHeaders are the headers of a session's requests, prepared when its
// id or version changes and shared, read-only, by every request until then.
type sessionHeaders struct {
	base http.Header // the configured headers, User-Agent, the session's id and version (DELETE)
	post http.Header // base, Content-Type and Accept of a POSTed message
	get  http.Header // base, Accept and Cache-Control of a stream
}

// headers returns the session's prepared headers.
func (s *session) headers() *sessionHeaders {
	if hs := s.hdr.Load(); hs != nil {
		return hs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hs := s.hdr.Load(); hs != nil {
		return hs
	}
	// The configured headers first; the transport's own override any of the
	// same name, except User-Agent.
	base := make(http.Header, len(s.h.headers)+3)
	for k, v := range s.h.headers {
		base[k] = v
	}
	if base.Get("User-Agent") == "" {
		base.Set("User-Agent", "mcp-gateway")
	}
	if !s.sse {
		if s.id != "" {
			base.Set("Mcp-Session-Id", s.id)
		}
		if s.version != "" {
			base.Set("MCP-Protocol-Version", s.version)
		}
	}
	hs := &sessionHeaders{base: base, post: base.Clone(), get: base.Clone()}
	hs.post.Set("Content-Type", "application/json")
	hs.post.Set("Accept", acceptPOST)
	hs.get.Set("Accept", acceptSSE)
	hs.get.Set("Cache-Control", "no-cache")
	s.hdr.Store(hs)
	return hs
}

// setID records the session id the server gave.
func (s *session) setID(id string) {
	s.mu.Lock()
	s.id = id
	s.hdr.Store(nil)
	s.mu.Unlock()
}

// setVersion records the negotiated protocol version.
func (s *session) setVersion(version string) {
	s.mu.Lock()
	s.version = version
	s.hdr.Store(nil)
	s.mu.Unlock()
}

// checkStatus turns an HTTP answer that is not 2xx into an error (and
// closes its body). A 404 for the session (and a 400 that says the session
// is unknown, as servers built on the TypeScript SDK's example answer) ends
// the session and returns errSessionExpired. For a call (id set), a JSON-RPC
// error in the body that answers it is delivered as its response, and
// checkStatus returns a placeholder error the caller discards.
func (s *session) checkStatus(resp *http.Response, what string, id uint64) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	defer resp.Body.Close()
	hasSession := s.sessionID() != "" || s.sse && s.endpoint != nil
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return s.credentialsError(resp)
	case code == http.StatusNotFound && hasSession:
		s.expire()
		return errSessionExpired
	case code >= 300 && code < 400:
		loc := ""
		if u, err := resp.Location(); err == nil {
			loc = " to " + redactURL(u)
		}
		return newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q redirects%s (HTTP %s); set its url to the address it redirects to", s.name(), loc, statusText(resp))
	}
	data, _ := readCapped(resp.Body, errorBodyBytes)
	if code == http.StatusBadRequest && hasSession && bytes.Contains(bytes.ToLower(data), []byte("session")) {
		s.expire()
		return errSessionExpired
	}
	if id != 0 && mediaType(resp.Header.Get("Content-Type")) == "application/json" {
		if msg, err := wire.Parse(data); err == nil && msg.IsResponse() {
			if got, ok := rpc.ParseID(msg.ID); ok && got == id && s.rpc.Dispatch(msg) == id {
				return errAnswered
			}
		}
	}
	return fmt.Errorf("mcp server %q answered %s with %w", s.name(), what, &statusError{code: code, status: statusText(resp), preview: preview(data)})
}

// errAnswered: checkStatus delivered the call's response from an error body.
var errAnswered = errors.New("answered in the error body")

func (s *session) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

func (s *session) credentialsError(resp *http.Response) error {
	hint := ""
	if c := resp.Header.Get("WWW-Authenticate"); c != "" {
		hint = fmt.Sprintf(" (it asks for: %s)", preview([]byte(c)))
	}
	return newRemoteError([]error{wire.ErrCredentials}, "mcp server %q refused the credentials (HTTP %d); check its headers%s", s.name(), resp.StatusCode, hint)
}

func (s *session) transportError(what string, err error) error {
	err = netError(err)
	var ae *authError
	if isContextError(err) || errors.As(err, &ae) {
		return err
	}
	var refused *netguard.RefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("mcp server %q: %s: the gateway refuses to connect to %s: %w", s.name(), what, redactURL(s.h.url), refused)
	}
	return fmt.Errorf("mcp server %q: %s: cannot reach %s: %w", s.name(), what, redactURL(s.h.url), err)
}

// endError is the error of a call the session's end cut off.
func (s *session) endError(method string) error {
	s.mu.Lock()
	end := s.end
	s.mu.Unlock()
	if end == nil || end.closed {
		return s.h.closedError()
	}
	return newRemoteError([]error{ErrSessionEnded}, "mcp server %q %s during %s; the next call starts a new session", s.name(), end.phrase, method)
}

// stop takes the session down: no new calls are accepted. Unless end is an
// expiry, every stream and handler is cancelled and pending calls fail. It
// reports whether the session was up.
func (s *session) stop(end *sessionEnd) bool {
	s.mu.Lock()
	wasUp := s.end == nil
	if wasUp || end.closed {
		s.end = end
		s.isDown.Store(true)
	}
	s.mu.Unlock()
	s.rpc.Refuse()
	if end.expired {
		s.stopListen()
		return wasUp
	}
	s.rpc.FailPending(s.endError)
	s.cancel()
	return wasUp
}

// expire marks a session the server no longer knows.
func (s *session) expire() {
	if s.stop(&sessionEnd{phrase: "ended the session (HTTP 404)", expired: true}) {
		s.h.log.Info(fmt.Sprintf("mcp server %q ended the session", s.name()))
	}
}

// retire shuts down a session that went down, once its calls in flight
// have ended (an expired session lets them finish), or at once if it is
// stopped meanwhile (Close).
func (s *session) retire() {
	s.rpc.WaitIdle()
	s.shutdown(false)
}

// shutdown stops the session and waits for its goroutines. With del, a
// session the server still knows is told goodbye, best effort and within
// Timeout: its calls in flight are cancelled (servers may hold a DELETE
// until their handlers return), then the session is ended with DELETE.
func (s *session) shutdown(del bool) {
	s.mu.Lock()
	alive := s.end == nil
	s.mu.Unlock()
	inflight := s.rpc.InFlight()
	s.stop(&sessionEnd{closed: true})
	if del && alive {
		ctx, cancel := context.WithTimeout(context.Background(), s.h.opts.Timeout)
		s.goodbye(ctx, inflight)
		cancel()
	}
	s.rpc.Wait()
}

func (s *session) goodbye(ctx context.Context, inflight []uint64) {
	var wg sync.WaitGroup
	for _, id := range inflight {
		wg.Go(func() {
			body := rpc.Cancelled(id, "the gateway closed its connection to the server")
			s.postMessage(ctx, "notifications/cancelled", body) //nolint:errcheck // best effort
		})
	}
	wg.Wait()
	if s.sse || s.sessionID() == "" {
		return
	}
	if resp, err := s.do(ctx, http.MethodDelete, nil, ""); err == nil {
		resp.Body.Close()
	} else {
		s.h.log.Debug(fmt.Sprintf("mcp server %q: DELETE of the session failed", s.name()), "err", netError(err))
	}
}

// opensStream reports whether sending method makes a session open its GET
// stream (see HTTPOptions.ListenAtStart): the server may then write to the
// client between calls.
func opensStream(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"resources/subscribe", "logging/setLevel", "notifications/roots/list_changed":
		return true
	}
	return false
}

// startListening opens the GET stream of streamable HTTP, unless it is open
// already or never is (legacy transport, NoListen, the session is down). It
// waits, within ctx and at most listenReadyWait, until the server has
// answered it, so that what the server sends next is not lost; a server
// slow to answer does not hold the caller longer.
func (s *session) startListening(ctx context.Context) {
	if s.sse || s.h.opts.NoListen {
		return
	}
	s.mu.Lock()
	ready := s.listenReady
	if ready == nil {
		if s.end != nil {
			s.mu.Unlock()
			return
		}
		ready = make(chan struct{})
		s.listenReady = ready
		if !s.rpc.Go(func() { s.listen(ready) }) {
			close(ready) // the session went down meanwhile
		}
	}
	s.mu.Unlock()
	select {
	case <-ready:
		return
	default:
	}
	t := time.NewTimer(listenReadyWait)
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
}

// listen keeps the GET stream of streamable HTTP open for the server's
// requests and notifications between calls, reconnecting (after
// Last-Event-ID, when the server gives event ids) until the session ends.
// A server that offers no GET stream (405) is left alone.
//
// ready is closed once the first attempt has been answered (or has failed),
// so that Start returns with the stream open and a request the server sends
// at once is not lost.
func (s *session) listen(ready chan<- struct{}) {
	ctx := s.listenCtx
	lastID, retry, backoff := "", time.Duration(0), defaultRetry
	for {
		attempt, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(s.h.opts.Timeout, cancel) // bounds the wait for the answer's headers
		resp, err := s.do(attempt, http.MethodGet, nil, lastID)
		timer.Stop()
		if ready != nil {
			close(ready)
			ready = nil
		}
		delay := backoff
		switch {
		case ctx.Err() != nil:
			cancel()
			if err == nil {
				resp.Body.Close()
			}
			if ready != nil {
				close(ready)
			}
			return
		case err != nil:
			s.h.log.Debug(fmt.Sprintf("mcp server %q: opening the GET stream failed", s.name()), "err", netError(err))
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			cancel()
			s.h.log.Debug(fmt.Sprintf("mcp server %q offers no GET stream", s.name()))
			return
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			err := s.checkStatus(resp, "the GET stream", 0)
			cancel()
			if errors.Is(err, errSessionExpired) {
				return
			}
			if errors.Is(err, wire.ErrCredentials) {
				s.h.log.Warn(err.Error() + "; its GET stream stays closed")
				return
			}
			s.h.log.Debug(fmt.Sprintf("mcp server %q: opening the GET stream failed", s.name()), "err", err)
		case mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
			resp.Body.Close()
			cancel()
			s.h.log.Debug(fmt.Sprintf("mcp server %q answered its GET stream with Content-Type %q; not listening", s.name(), resp.Header.Get("Content-Type")))
			return
		default:
			sr := newSSEReader(resp.Body, s.h.opts.MaxResponseBytes, false)
			sr.lastID = lastID
			s.consume(sr, 0) //nolint:errcheck // any end of the stream means reconnect
			resp.Body.Close()
			lastID = sr.lastID
			if sr.retry > 0 {
				retry = sr.retry
			}
			if sr.received {
				backoff, delay = defaultRetry, retryDelay(retry)
			}
		}
		cancel()
		if !sleep(ctx, delay) {
			return
		}
		backoff = min(backoff*2, listenRetryMax)
	}
}

// openLegacyStream opens the HTTP+SSE event stream and waits, within ctx,
// for its endpoint event; the stream then lives as long as the session.
func (s *session) openLegacyStream(ctx context.Context) error {
	stopWaiting := context.AfterFunc(ctx, s.cancel)
	resp, err := s.do(s.ctx, http.MethodGet, nil, "")
	if err != nil {
		stopWaiting()
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q did not open its event stream at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
		return s.transportError("opening the event stream", err)
	}
	fail := func(err error) error {
		resp.Body.Close()
		stopWaiting()
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q sent no endpoint event at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
		return err
	}
	if err := s.checkStatus(resp, "the GET of its event stream", 0); err != nil {
		return fail(err)
	}
	if ct := mediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered the GET of its event stream with Content-Type %q; want text/event-stream", s.name(), ct))
	}
	sr := newSSEReader(resp.Body, s.h.opts.MaxResponseBytes, true)
	ev, err := sr.next()
	if err != nil {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q closed its event stream before sending the endpoint event (%v)", s.name(), streamEnd(err)))
	}
	if ev.name != "endpoint" || ev.oversize {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q began its event stream with a %q event; the HTTP+SSE transport begins with \"endpoint\"", s.name(), ev.name))
	}
	endpoint, err := s.h.url.Parse(strings.TrimSpace(string(ev.data)))
	if err != nil {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q sent an invalid endpoint: %v", s.name(), netError(err)))
	}
	endpoint.Host = removeEmptyPort(endpoint.Host)
	if endpoint.Scheme != s.h.url.Scheme || endpoint.Host != s.h.url.Host {
		// The configured headers (credentials) must not go to another origin.
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q sent an endpoint on another origin (%s); refused", s.name(), redactURL(endpoint)))
	}
	if !stopWaiting() {
		resp.Body.Close()
		return fmt.Errorf("mcp server %q: opening the event stream: %w", s.name(), ctx.Err())
	}
	s.endpoint = endpoint
	if !s.rpc.Go(func() { s.readLegacyStream(sr, resp.Body) }) {
		resp.Body.Close()
		return s.endError("initialize")
	}
	return nil
}

// readLegacyStream reads the HTTP+SSE event stream, the only way the server
// talks to the client; when it ends, the session is down.
func (s *session) readLegacyStream(sr *sseReader, body io.ReadCloser) {
	_, err := s.consume(sr, 0)
	body.Close()
	if s.ctx.Err() != nil {
		return
	}
	end := streamEnd(err)
	if s.stop(&sessionEnd{phrase: "closed its event stream (" + end + ")"}) {
		s.h.log.Warn(fmt.Sprintf("mcp server %q closed its event stream (%s); the next call reconnects", s.name(), end))
	}
}

var errTooLarge = errors.New("body over the size limit")

// readCapped reads a body of at most limit bytes.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// mediaType returns the lower-cased media type of a Content-Type value.
func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

func retryDelay(retry time.Duration) time.Duration {
	if retry <= 0 {
		return defaultRetry
	}
	return min(retry, listenRetryMax)
}

// sleep waits d unless ctx ends first; false if it did.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// drain reads what is left of a response stream that has given its answer,
// briefly, so the connection can carry the next request instead of being
// dropped (the server ends the stream after the response).
func drain(body io.ReadCloser) {
	t := time.AfterFunc(time.Second, func() { body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	t.Stop()
}
