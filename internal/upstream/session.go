package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
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
	// stateless: a server of the 2026-07-28 era, no session (stateless_http.go).
	stateless atomic.Bool
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
	s.rpc = rpc.New(s.ctx, h.opts.Name, h.log, h.hooks, s, h.opts.MaxResponseBytes)
	return s
}

func (s *session) name() string { return s.h.opts.Name }

// initialize performs the MCP handshake on a new session.
func (s *session) initialize(ctx context.Context) error {
	discoverFirst := s.h.opts.DiscoverFirst && !s.sse
	if discoverFirst {
		if s.discoverStateless(ctx) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q did not answer server/discover at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
	}
	resp, err := s.call(ctx, "initialize", s.h.initParams)
	if !discoverFirst && initializeRefused(err, resp) && s.discoverStateless(ctx) {
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
	err = s.postMessage(ctx, "notifications/initialized", wire.AppendNotification(nil, "notifications/initialized", nil), nil)
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
	if s.h.opts.Auth != nil {
		reqCtx = withCallDeadline(reqCtx, ctx) // an authorization bounds its wait by it
	}
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

	if s.stateless.Load() {
		params = s.h.statelessParams(params)
	}
	mh := requestHeaders(method, params, s.h.paramHeaders)
	body := wire.AppendIntRequest(make([]byte, 0, requestOverhead+len(method)+len(params)), id, method, params)
	var err error
	if s.sse {
		err = s.postMessage(reqCtx, method, body, &mh)
	} else {
		handedOff, err = s.exchange(reqCtx, cancelReq, id, method, body, &mh)
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
	return s.postMessage(ctx, what, msg, nil)
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
	s.rpc.Refuse() // with end, so a call that finds the session up is one it will settle
	s.mu.Unlock()
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
			s.postMessage(ctx, "notifications/cancelled", body, nil) //nolint:errcheck // best effort
		})
	}
	wg.Wait()
	if s.sse || s.sessionID() == "" {
		return
	}
	if resp, err := s.do(ctx, http.MethodDelete, nil, "", nil); err == nil {
		resp.Body.Close()
	} else {
		s.h.log.Debug(fmt.Sprintf("mcp server %q: DELETE of the session failed", s.name()), "err", netError(err))
	}
}
