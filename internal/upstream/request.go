package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The HTTP requests of a session: how a message is POSTed, a stream opened
// or the session deleted, with the session's prepared headers, and how an
// answer that is not 2xx becomes an error.

const (
	// requestOverhead is room for a request's envelope around its params.
	requestOverhead = 64
	acceptPOST      = "application/json, text/event-stream"
	acceptSSE       = "text/event-stream"
	// errorBodyBytes of an unexpected response are read, for its message.
	errorBodyBytes = 64 << 10
)

// postMessage POSTs a message that gets no response in the HTTP answer: a
// notification, an answer to the server, or (legacy transport) a request,
// whose response comes on the event stream. mh are the message's own
// headers; nil gives a notification its Mcp-Method.
func (s *session) postMessage(ctx context.Context, what string, body []byte, mh *messageHeaders) error {
	if mh == nil && strings.HasPrefix(what, "notifications/") {
		mh = &messageHeaders{method: what}
	}
	resp, err := s.do(ctx, http.MethodPost, body, "", mh)
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
// mh, when not nil, are the headers of the message (or of the call whose
// stream is resumed). The request is built by hand, with the session's
// prepared headers: what http.NewRequest would do, without parsing the URL
// again and building its headers anew for every message. A request with
// headers of its own (mh, Last-Event-ID, a trace context) gets one map of
// them all, the prepared ones' values shared.
func (s *session) do(ctx context.Context, method string, body []byte, lastEventID string, mh *messageHeaders) (*http.Response, error) {
	target := s.h.url
	if method == http.MethodPost && s.endpoint != nil {
		target = s.endpoint
	}
	hs := s.headers()
	var header http.Header
	switch method {
	case http.MethodPost:
		header = hs.post
	case http.MethodGet:
		header = hs.get
	default:
		header = hs.base
	}
	traced := method == http.MethodPost && trace.SpanContextFromContext(ctx).IsValid()
	own := mh != nil && (mh.method != "" || mh.name != "" || len(mh.params) > 0)
	switch {
	case own && method == http.MethodPost && !traced && len(mh.params) == 0 && s.h.client.Jar == nil:
		header = hs.postHeaders(mh)
	case own || lastEventID != "" || traced:
		n := len(header) + 1
		if own {
			n += mh.count()
		}
		header = copyHeader(header, n)
		if own {
			mh.addTo(header)
		}
		if lastEventID != "" {
			header["Last-Event-Id"] = []string{lastEventID}
		}
		if traced {
			traceContext.Inject(ctx, propagation.HeaderCarrier(header))
		}
	case s.h.client.Jar != nil:
		header = header.Clone() // the client adds the jar's cookies to it
	}
	// Host is left empty: the request goes to its URL's host, the one
	// http.NewRequest would set it to, and net/http's client copies a URL
	// per request whose Host is set.
	req := http.Request{
		Method:     method,
		URL:        target,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
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

// copyHeader returns a new map of header's fields, with room for n in all;
// the values are shared, as the copy is only added to.
func copyHeader(header http.Header, n int) http.Header {
	out := make(http.Header, n)
	for k, v := range header {
		out[k] = v
	}
	return out
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

	// posts are post with the headers of a call of a tool or a prompt
	// (Mcp-Method, Mcp-Name), built as the session first sends one: a
	// session calls the same few over and over. A list, copied on write,
	// of at most maxPostHeaders: searched in a few comparisons, and what
	// every session holds is its headers, not a map of them.
	posts   atomic.Pointer[[]postHeaders]
	postsMu sync.Mutex // serializes the writes
}

// postHeaders are the headers of the calls of one tool or prompt.
type postHeaders struct {
	method, name string
	header       http.Header
}

// maxPostHeaders bounds the headers a session keeps built: a few hundred
// bytes each, for every session (one per downstream client).
const maxPostHeaders = 16

// postHeaders returns the headers of a POSTed message with the headers mh
// of its own and no others (no Mcp-Param-*, no trace context): those of a
// call of a tool or a prompt built once per name, any other built for
// each request (a resource's URI may be any, and most other messages are
// sent once or seldom: each kept would be memory held by every session).
func (hs *sessionHeaders) postHeaders(mh *messageHeaders) http.Header {
	keep := mh.method == "tools/call" || mh.method == "prompts/get"
	if keep {
		if h := hs.keptPost(mh); h != nil {
			return h
		}
	}
	h := copyHeader(hs.post, len(hs.post)+mh.count())
	mh.addTo(h)
	if !keep {
		return h
	}
	hs.postsMu.Lock()
	defer hs.postsMu.Unlock()
	if prev := hs.keptPost(mh); prev != nil {
		return prev // built meanwhile by another request
	}
	var list []postHeaders
	if old := hs.posts.Load(); old != nil {
		if len(*old) >= maxPostHeaders {
			return h
		}
		list = append(make([]postHeaders, 0, len(*old)+1), *old...)
	}
	list = append(list, postHeaders{method: mh.method, name: mh.name, header: h})
	hs.posts.Store(&list)
	return h
}

// keptPost returns the kept headers of mh's method and name, or nil.
func (hs *sessionHeaders) keptPost(mh *messageHeaders) http.Header {
	if list := hs.posts.Load(); list != nil {
		for i := range *list {
			if p := &(*list)[i]; p.name == mh.name && p.method == mh.method {
				return p.header
			}
		}
	}
	return nil
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

// readBody reads the body of resp, of at most limit bytes: into a buffer
// of its length when it declares one of at most preallocBody (which
// net/http ends with the last bytes, so the connection goes back to the
// pool at once), else as readCapped, growing as the bytes come and not as
// the server declared: a Content-Length alone must not make the gateway
// hold up to limit for a call whose body never comes.
func readBody(resp *http.Response, limit int) ([]byte, error) {
	n := resp.ContentLength
	switch {
	case n > int64(limit):
		return nil, errTooLarge
	case n < 0 || n > preallocBody:
		return readCapped(resp.Body, limit)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, data); err != nil {
		return nil, err
	}
	return data, nil
}

// preallocBody is the largest declared body readBody allocates at once.
const preallocBody = 1 << 20

// mediaType returns the lower-cased media type of a Content-Type value.
func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}
