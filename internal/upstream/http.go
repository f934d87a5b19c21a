package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Transports of a remote server, for HTTPOptions.Transport.
const (
	// TransportStreamable is streamable HTTP (MCP 2025-03-26 and later).
	TransportStreamable = "http"
	// TransportSSE is the legacy HTTP+SSE transport (MCP 2024-11-05).
	TransportSSE = "sse"
)

const (
	defaultHTTPTimeout      = 30 * time.Second
	defaultMaxResponseBytes = 16 << 20
	// listenRetryMax caps the wait between attempts to reopen the GET stream.
	listenRetryMax = 30 * time.Second
	// resumeAttempts bounds the reconnections of one response stream that
	// bring nothing new.
	resumeAttempts = 3
	// defaultRetry is the reconnection delay when the server gave none.
	defaultRetry = time.Second
	// listenReadyWait bounds how long Start waits for the GET stream.
	listenReadyWait = 2 * time.Second
)

// HTTPOptions configure an [HTTP] upstream. Zero fields mean the default
// written beside them.
type HTTPOptions struct {
	// Name is the server's name, used in errors and logs.
	Name string
	// URL is the server's MCP endpoint (streamable HTTP) or its SSE endpoint
	// (legacy HTTP+SSE), http or https.
	URL string
	// Headers are sent with every request, their values already resolved
	// (API keys, Authorization). The transport's own headers (Accept,
	// Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID)
	// override any of the same name. Neither names nor values are logged.
	Headers map[string]string
	// Transport is TransportStreamable, TransportSSE, or "" to detect it as
	// the specification's backwards-compatibility section says: initialize
	// over streamable HTTP, and if the server answers 400, 404 or 405, open
	// an HTTP+SSE stream instead. The detected transport is kept for later
	// sessions (see Transport).
	Transport string
	// Client makes the requests. Nil means a client of the upstream's own,
	// made by NewHTTPClient with Guard, closed by Close. A given client is
	// used as it is: give it Guard's dialer (NewHTTPClient does) to keep the
	// address checks.
	Client *http.Client
	// Guard checks every address connected to when Client is nil. Nil means
	// the default policy (metadata and link-local addresses refused, a
	// warning for private and loopback ones), logging to Logger; share one
	// Policy between upstreams so a warning is logged once per server.
	Guard *netguard.Policy
	// Timeout bounds each exchange no caller waits for: notifications,
	// answers to the server's requests, notifications/cancelled, the DELETE
	// of Close, and each attempt to open the GET stream. Calls and Start are
	// bounded by their ctx only. Zero means 30s.
	Timeout time.Duration
	// MaxResponseBytes caps one message from the server (a JSON body or one
	// SSE event); a call whose response is longer fails with an error
	// wrapping ErrResponseTooLarge. Zero means 16 MiB.
	MaxResponseBytes int
	// Logger receives the gateway's own messages about this server.
	// Nil means slog.Default().
	Logger *slog.Logger
	// ClientInfo is sent in initialize as clientInfo.
	// Nil means {"name":"mcp-gateway","version":"dev"}.
	ClientInfo json.RawMessage
	// Capabilities are the client capabilities sent in initialize. Nil means {}.
	Capabilities json.RawMessage
	// ProtocolVersion is the version asked for in initialize. "" means 2025-11-25.
	ProtocolVersion string
	// OnNotification receives the notifications the server sends, on any
	// stream (a call's response stream, the GET stream, the legacy stream).
	// Within one stream they arrive in order, and a notification sent before
	// a call's response is seen before that Call returns; different streams
	// may call it concurrently. It must not block. Nil drops notifications.
	OnNotification func(method string, params json.RawMessage)
	// OnRequest answers a server-to-client request (ping, sampling, roots,
	// elicitation), which may arrive on a call's response stream or on the
	// GET stream. Each runs in its own goroutine; ctx ends when the server
	// cancels the request, the session ends, or the upstream is closed. The
	// answer is POSTed back. Nil answers ping with {} and anything else with
	// method-not-found.
	OnRequest func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error)
	// NoListen leaves the GET stream of streamable HTTP closed; the server
	// can then reach the client only within calls (no list_changed
	// notifications between calls). It saves one long-lived connection per
	// session.
	NoListen bool
	// ListenAtStart opens the GET stream of streamable HTTP when the session
	// starts. By default it opens at the start only when the server may
	// write to the client at any moment: Capabilities declare roots (servers
	// ask roots/list whenever they like, often right after initialization),
	// or the server answered initialize with plain JSON (such a server sends
	// everything but its responses on the GET stream, also during calls).
	// Otherwise it opens when the session first needs it, and then stays
	// open: before the session's first request listing tools, prompts,
	// resources or resource templates (whose list_changed notifications the
	// caller will want), or sending resources/subscribe (updates follow),
	// logging/setLevel (log messages follow) or
	// notifications/roots/list_changed (the server asks roots/list back). A
	// session that only makes calls, as the gateway's per-client sessions
	// do, then holds no long-lived connection, no goroutine for it and no
	// stream on the server.
	ListenAtStart bool
	// ParamHeaders, shared by the upstreams of one server, remembers the
	// tools' Mcp-Param-* arguments from tools/list; nil means one of this
	// upstream's own.
	ParamHeaders *ParamHeaders
	// DiscoverFirst asks server/discover before initialize (streamable HTTP
	// only): a server that speaks 2026-07-28 and the session era is then
	// spoken to in 2026-07-28, its change notifications coming on a
	// subscriptions/listen stream (listen_http.go). Without it the session
	// starts with initialize and asks server/discover only when initialize
	// is refused. It costs a session-era server one refused request per
	// session. The gateway sets it for every remote server unless its entry
	// says "discoverFirst": false.
	DiscoverFirst bool
	// Auth, when set, is the server's OAuth client: it gives the token of
	// every request and handles a 401 (see Authorizer). Headers should then
	// hold no Authorization.
	Auth Authorizer
}

// HTTP is a remote MCP server reached over streamable HTTP or the legacy
// HTTP+SSE transport. It speaks the session era of MCP (2025-11-25 and
// earlier): initialize, Mcp-Session-Id, MCP-Protocol-Version. It is safe for
// concurrent use. A session the server ended is re-established on the next
// call.
//
// Goroutines: each session owns the readers of its streams (the GET stream,
// the legacy event stream, the rest of a call's response stream once the
// caller has its answer) and the handlers of the server's requests; HTTP
// owns the shutdown of replaced sessions. Close stops all of them and waits.
// A call reads its own response stream until the answer.
type HTTP struct {
	opts       HTTPOptions
	log        *slog.Logger
	client     *http.Client
	ownClient  bool
	url        *url.URL
	urlErr     error
	headers    http.Header
	initParams json.RawMessage
	// requestMeta: the request _meta of the 2026-07-28 era, built once
	// (metaOnce) for a server that speaks it.
	requestMeta json.RawMessage
	metaOnce    sync.Once
	// paramHeaders: the tools' Mcp-Param-* arguments (stateless_http.go).
	paramHeaders *ParamHeaders
	// rootsDeclared: Capabilities offer roots, which the server may ask for
	// at any moment.
	rootsDeclared bool
	// hooks receive what the server sends unprompted, on every session.
	hooks rpc.Hooks
	// listen: the subscriptions/listen stream of a 2026-07-28 server (listen_http.go).
	listen remoteListen

	gen        atomic.Uint64
	started    atomic.Int64            // unix nanoseconds of the current session's start
	sess       atomic.Pointer[session] // the current session, up or down
	initResult atomic.Pointer[json.RawMessage]
	transport  atomic.Pointer[string]

	mu        sync.Mutex
	closed    bool
	closeDone chan struct{}
	starting  *httpStart
	retiring  map[*session]struct{} // replaced sessions whose calls are finishing
	retired   sync.WaitGroup        // their shutdowns
}

// httpStart lets concurrent callers share one session start.
type httpStart struct {
	done   chan struct{}
	cancel context.CancelCauseFunc
	s      *session
	err    error
}

// NewHTTP returns an upstream for one remote server. It connects to nothing;
// the session is established by Start or by the first Call.
func NewHTTP(opts HTTPOptions) *HTTP {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClientInfo == nil {
		opts.ClientInfo = defaultClientInfo
	}
	if opts.Capabilities == nil {
		opts.Capabilities = defaultCapabilities
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = defaultProtocolVersion
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultHTTPTimeout
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = defaultMaxResponseBytes
	}
	h := &HTTP{
		opts:          opts,
		log:           opts.Logger.With("server", opts.Name),
		client:        opts.Client,
		headers:       make(http.Header, len(opts.Headers)),
		initParams:    initializeParams(opts.ProtocolVersion, opts.Capabilities, opts.ClientInfo),
		rootsDeclared: wire.Get(opts.Capabilities, "roots") != nil,
		closeDone:     make(chan struct{}),
		retiring:      make(map[*session]struct{}),
		paramHeaders:  opts.ParamHeaders,
	}
	h.hooks = rpc.Hooks{Server: opts.Name, OnNotification: h.notification, OnRequest: opts.OnRequest}
	h.listen.init()
	h.listen.log = func(msg string) { h.log.Info(fmt.Sprintf("mcp server %q: %s", opts.Name, msg)) }
	if h.paramHeaders == nil {
		h.paramHeaders = &ParamHeaders{}
	}
	if h.client == nil {
		guard := opts.Guard
		if guard == nil {
			guard = &netguard.Policy{Logger: opts.Logger}
		}
		h.client, h.ownClient = NewHTTPClient(opts.Name, guard), true
	}
	for k, v := range opts.Headers {
		h.headers.Set(k, v)
	}
	h.url, h.urlErr = parseServerURL(opts.URL)
	switch opts.Transport {
	case TransportStreamable, TransportSSE:
		t := opts.Transport
		h.transport.Store(&t)
	case "":
	default:
		h.urlErr = fmt.Errorf("unknown transport %q; use %q, %q or \"\" to detect it", opts.Transport, TransportStreamable, TransportSSE)
	}
	return h
}

func initializeParams(version string, capabilities, clientInfo json.RawMessage) json.RawMessage {
	params := []byte(`{"protocolVersion":`)
	params = wire.AppendString(params, version)
	params = append(params, `,"capabilities":`...)
	params = append(params, capabilities...)
	params = append(params, `,"clientInfo":`...)
	params = append(params, clientInfo...)
	return append(params, '}')
}

func parseServerURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("its url is invalid: %w", netError(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("its url must start with http:// or https://")
	case u.Host == "":
		return nil, errors.New("its url has no host")
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = removeEmptyPort(u.Host) // as http.NewRequest would, for every request
	return u, nil
}

// NewHTTPClient returns the client an HTTP upstream makes for itself when
// HTTPOptions.Client is nil: every connection is checked by guard (nil means
// the default policy) on behalf of server, at dial time, on the address
// actually dialled; redirects are not followed, since they would carry the
// server's headers elsewhere; no proxy is used. One client can be shared by
// every upstream of the same server (one per downstream client), which then
// share its connections.
//
// Its transport is net/http's, dialling through guard; https negotiates
// HTTP/2 where the server offers it.
func NewHTTPClient(server string, guard *netguard.Policy) *http.Client {
	if guard == nil {
		guard = &netguard.Policy{}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	// One client serves every session of a server, so every idle connection
	// is to the same host: keep as many as the calls that were in flight at
	// once, or each burst past the limit ends in closing connections and
	// dialling new ones.
	const maxIdle = 128
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           guard.DialContext(server, dialer),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          maxIdle,
			MaxIdleConnsPerHost:   maxIdle,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: keepRedirect,
	}
}

// keepRedirect is the CheckRedirect of NewHTTPClient's clients: a redirect
// is returned as it is (checkStatus says it is one), never followed.
func keepRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Name returns the server's name.
func (h *HTTP) Name() string { return h.opts.Name }

// Generation counts the sessions established so far; it changes when the
// session was re-established (the server forgot it, or the legacy stream
// ended), which a caller caching the server's lists may want to notice.
func (h *HTTP) Generation() uint64 { return h.gen.Load() }

// StartedAt is when the current session was established; zero before the first.
func (h *HTTP) StartedAt() time.Time { return unixNanoTime(h.started.Load()) }

// InitializeResult returns the raw initialize result of the current (or
// last) session, or nil before the first successful start.
func (h *HTTP) InitializeResult() json.RawMessage {
	if r := h.initResult.Load(); r != nil {
		return *r
	}
	return nil
}

// Transport returns TransportStreamable or TransportSSE: the one configured,
// or the one detected by the first successful start; "" before that.
// Upstreams made later for the same server can be given it to skip the
// detection.
func (h *HTTP) Transport() string {
	if t := h.transport.Load(); t != nil {
		return *t
	}
	return ""
}

// Start establishes a session: it initializes (detecting the transport if
// asked to), sends notifications/initialized and, for streamable HTTP, opens
// the GET stream. It returns at once if a session is up, and shares a start
// already in progress. Give ctx a deadline. On failure nothing is left
// running, and the error names the server and says what failed.
func (h *HTTP) Start(ctx context.Context) error {
	_, err := h.running(ctx)
	return err
}

// Call sends a request and waits for its response. Without a session up it
// first establishes one within ctx. params is sent as it is and may be nil;
// the result or error object comes back as the server's bytes.
//
// If the server answers 404 for the session (it has forgotten it), a new
// session is established and the call is sent again, once. When ctx ends
// first, the server is sent notifications/cancelled and Call returns an error
// wrapping ctx.Err(). A 401 or 403 is an error wrapping wire.ErrCredentials.
func (h *HTTP) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	params = withTraceMeta(ctx, params)
	for retried := false; ; retried = true {
		s, err := h.running(ctx)
		if err != nil {
			return nil, err
		}
		if s.stateless.Load() {
			if method == "resources/subscribe" || method == "resources/unsubscribe" {
				return h.subscribeStateless(ctx, s, method, params)
			}
			if opensStream(method) {
				s.startStatelessListen(ctx)
			}
		} else if opensStream(method) {
			s.startListening(ctx)
		}
		resp, err := s.call(ctx, method, params)
		switch {
		case err == nil:
			if method == "tools/list" && resp.Error == nil {
				h.paramHeaders.learn(resp.Result)
			}
			return &resp, nil
		case errors.Is(err, errSessionExpired) && !retried:
			h.log.Info(fmt.Sprintf("mcp server %q no longer knows the session; starting a new one", h.opts.Name))
			continue
		case errors.Is(err, errNotSent) && !retried:
			continue // the session went down before the request was sent
		case errors.Is(err, errNotSent):
			return nil, s.endError(method)
		case errors.Is(err, errSessionExpired):
			return nil, newRemoteError([]error{ErrSessionEnded}, "mcp server %q forgot a new session at once (HTTP 404 to %s); check its url", h.opts.Name, method)
		case isContextError(err) && ctx.Err() != nil:
			return nil, fmt.Errorf("mcp server %q: %s abandoned before the server answered: %w", h.opts.Name, method, err)
		}
		return nil, err
	}
}

// Notify sends a notification in the current session. It does not start
// one: with no session up it returns an error wrapping ErrNotRunning.
func (h *HTTP) Notify(ctx context.Context, method string, params json.RawMessage) error {
	s := h.sess.Load()
	if s == nil || s.isDown.Load() {
		if h.isClosed() {
			return h.closedError()
		}
		return fmt.Errorf("mcp server %q: cannot send %s: %w", h.opts.Name, method, ErrNotRunning)
	}
	if opensStream(method) && !s.stateless.Load() {
		s.startListening(ctx)
	}
	err := s.postMessage(ctx, method, wire.AppendNotification(make([]byte, 0, requestOverhead+len(method)+len(params)), method, params), nil)
	if errors.Is(err, errSessionExpired) {
		return fmt.Errorf("mcp server %q: cannot send %s: the session ended: %w", h.opts.Name, method, ErrNotRunning)
	}
	return err
}

// Close ends the session: the server is sent DELETE (best effort, within
// Timeout), the streams are closed, and Close returns once every goroutine of
// the upstream has ended. Calls in flight fail with an error wrapping
// ErrClosed, and so do later ones. Close may be called more than once and
// concurrently; every call waits for the shutdown.
func (h *HTTP) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		<-h.closeDone
		return nil
	}
	h.closed = true
	attempt, current := h.starting, h.sess.Load()
	for s := range h.retiring {
		s.stop(&sessionEnd{closed: true})
	}
	h.mu.Unlock()

	if attempt != nil {
		attempt.cancel(ErrClosed)
		<-attempt.done // a start that raced us has seen closed and shut its session down
	}
	if current != nil {
		current.shutdown(true)
	}
	h.retired.Wait()
	if h.ownClient {
		h.client.CloseIdleConnections()
	}
	close(h.closeDone)
	return nil
}

func (h *HTTP) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *HTTP) closedError() error {
	return fmt.Errorf("mcp server %q: %w", h.opts.Name, ErrClosed)
}

// running returns a session that is up, establishing one if needed.
// Concurrent callers share one start; if the caller who started it gave up
// (its ctx ended) the others try again with their own ctx.
func (h *HTTP) running(ctx context.Context) (*session, error) {
	if s := h.sess.Load(); s != nil && !s.isDown.Load() {
		return s, nil
	}
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, h.closedError()
		}
		if s := h.sess.Load(); s != nil && !s.isDown.Load() {
			h.mu.Unlock()
			return s, nil
		}
		if a := h.starting; a != nil {
			h.mu.Unlock()
			select {
			case <-a.done:
				if a.err == nil {
					return a.s, nil
				}
				if isContextError(a.err) && ctx.Err() == nil && !h.isClosed() {
					continue
				}
				return nil, a.err
			case <-ctx.Done():
				return nil, fmt.Errorf("mcp server %q: gave up waiting for its session to start: %w", h.opts.Name, ctx.Err())
			}
		}
		startCtx, cancel := context.WithCancelCause(ctx)
		a := &httpStart{done: make(chan struct{}), cancel: cancel}
		h.starting = a
		if old := h.sess.Load(); old != nil { // down: let it finish in the background
			h.sess.Store(nil)
			h.retiring[old] = struct{}{}
			h.retired.Go(func() {
				old.retire()
				h.mu.Lock()
				delete(h.retiring, old)
				h.mu.Unlock()
			})
		}
		h.mu.Unlock()

		s, err := h.connect(startCtx)
		if err != nil && errors.Is(context.Cause(startCtx), ErrClosed) {
			err = h.closedError()
		}
		cancel(nil)

		h.mu.Lock()
		h.starting = nil
		closed := h.closed
		if err == nil && !closed {
			h.sess.Store(s)
			h.initResult.Store(&s.initResult)
			h.logStarted(s, h.gen.Add(1))
			h.started.Store(time.Now().UnixNano())
		}
		h.mu.Unlock()
		if err == nil && closed { // Close ran during the handshake
			s.shutdown(true)
			s, err = nil, h.closedError()
		}
		a.s, a.err = s, err
		close(a.done)
		return s, err
	}
}

func (h *HTTP) logStarted(s *session, gen uint64) {
	kind := "streamable HTTP"
	if s.sse {
		kind = "HTTP+SSE"
	}
	if gen == 1 {
		h.log.Debug(fmt.Sprintf("mcp server %q connected", h.opts.Name), "transport", kind, "protocol", s.version)
		return
	}
	h.log.Info(fmt.Sprintf("mcp server %q: new session", h.opts.Name), "transport", kind, "generation", gen)
}

// connect establishes a session with the configured or detected transport.
func (h *HTTP) connect(ctx context.Context) (*session, error) {
	if h.urlErr != nil {
		return nil, fmt.Errorf("mcp server %q: %w; check its configuration", h.opts.Name, h.urlErr)
	}
	switch h.Transport() {
	case TransportStreamable:
		return h.connectStreamable(ctx)
	case TransportSSE:
		return h.connectSSE(ctx)
	}
	s, err := h.connectStreamable(ctx)
	var se *statusError
	if err == nil || !errors.As(err, &se) || (se.code != 400 && se.code != 404 && se.code != 405) {
		if err == nil {
			h.setTransport(TransportStreamable)
		}
		return s, err
	}
	// The backwards-compatibility rule: a server that refuses a POSTed
	// initialize with 400, 404 or 405 may be an HTTP+SSE server.
	s, sseErr := h.connectSSE(ctx)
	if sseErr == nil {
		h.log.Debug(fmt.Sprintf("mcp server %q speaks the legacy HTTP+SSE transport", h.opts.Name))
		h.setTransport(TransportSSE)
		return s, nil
	}
	if isContextError(sseErr) || errors.Is(sseErr, wire.ErrCredentials) {
		return nil, sseErr
	}
	return nil, newRemoteError([]error{ErrRemoteProtocol},
		"mcp server %q at %s answered initialize with %s, and is no HTTP+SSE server either (%v); check its url and transport",
		h.opts.Name, redactURL(h.url), se, unprefixed(sseErr, h.opts.Name))
}

func (h *HTTP) setTransport(t string) { h.transport.Store(&t) }

// unprefixed drops the `mcp server "name" ` prefix of an error's text, to
// quote it inside another about the same server.
func unprefixed(err error, name string) string {
	msg := err.Error()
	for _, p := range []string{fmt.Sprintf("mcp server %q: ", name), fmt.Sprintf("mcp server %q ", name)} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// connectStreamable initializes a streamable HTTP session.
func (h *HTTP) connectStreamable(ctx context.Context) (*session, error) {
	s := newSession(h, false, h.url)
	if err := s.initialize(ctx); err != nil {
		s.shutdown(false)
		return nil, err
	}
	switch {
	case s.stateless.Load() && h.opts.ListenAtStart:
		s.startStatelessListen(ctx)
	case !s.stateless.Load() && (h.opts.ListenAtStart || h.rootsDeclared || s.jsonAnswers):
		s.startListening(ctx)
	}
	return s, nil
}

// connectSSE opens the legacy event stream, waits for its endpoint event and
// initializes over it.
func (h *HTTP) connectSSE(ctx context.Context) (*session, error) {
	s := newSession(h, true, nil)
	if err := s.openLegacyStream(ctx); err != nil {
		s.shutdown(false)
		return nil, err
	}
	if err := s.initialize(ctx); err != nil {
		s.shutdown(false)
		return nil, err
	}
	return s, nil
}

// send sends one request of a session through the client.
func (h *HTTP) send(req *http.Request) (*http.Response, error) {
	if h.opts.Auth != nil {
		return h.sendAuthorized(req)
	}
	return h.client.Do(req)
}
