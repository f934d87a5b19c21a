package front

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// authorized reports whether r carries "Authorization: Bearer <token>".
func authorized(r *http.Request, token string) bool {
	value, ok := bearer(r)
	return ok && subtle.ConstantTimeCompare([]byte(value), []byte(token)) == 1
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	scheme, value, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	value = strings.TrimSpace(value)
	return value, value != ""
}

// rebindingSafe applies the DNS-rebinding rule: on a loopback listener, the
// Host (and Origin, if any) must name a loopback host, since a browser tricked
// by DNS rebinding sends the attacker's host name. On any other listener (the
// sandbox proxy reaches the gateway as "50005-<sandbox-id>.<domain>") every
// host is accepted and the bearer token is the protection.
func rebindingSafe(r *http.Request) bool {
	switch local := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr: // the usual case, without formatting the address
		if !local.IP.IsLoopback() {
			return true
		}
	case net.Addr:
		if !isLoopbackAddr(local.String()) {
			return true
		}
	default:
		return true
	}
	if !isLoopbackHost(r.Host) {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !isLoopbackHost(u.Host) {
			return false
		}
	}
	return true
}

func isLoopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authMarkKey is the context key of the function a request calls once the
// front has accepted its bearer token (see WithAuthMark).
type authMarkKey struct{}

// WithAuthMark returns ctx carrying mark, which the front calls for each
// request on it whose bearer token it accepts (every request when
// authentication is off). The command line puts it in each connection's
// context (http.Server.ConnContext), so that the connection limit can
// tell the connections that authenticated from those that never did.
func WithAuthMark(ctx context.Context, mark func()) context.Context {
	return context.WithValue(ctx, authMarkKey{}, mark)
}

// MarkAuthenticated calls the mark WithAuthMark put in ctx, if any.
func MarkAuthenticated(ctx context.Context) {
	if mark, ok := ctx.Value(authMarkKey{}).(func()); ok {
		mark()
	}
}

// unauthorized answers 401 and closes the connection without reading the
// request's body: net/http would otherwise read it after the handler
// returns, for as long as a peer without a token cares to take sending it.
//
// A request without a bearer token gets the contract's bare challenge. One
// that presented a token the gateway does not accept gets RFC 6750's
// error="invalid_token" and a JSON-RPC error saying so: with the bare
// challenge, clients take a wrong token for "this server wants OAuth" and
// start an authorization flow the gateway has no part in.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	if _, presented := bearer(r); !presented {
		w.Header().Set("WWW-Authenticate", challenge)
		refuseAndClose(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer <token>")
		return
	}
	w.Header().Set("WWW-Authenticate", invalidTokenChallenge)
	closeUnread(w)
	writeRPCError(w, http.StatusUnauthorized, nil, wire.Errorf(wire.CodeInvalidRequest, "%s", invalidTokenMessage))
}

// challenge is the sandbox contract's WWW-Authenticate value for a request
// without a bearer token (exact).
const challenge = `Bearer realm="mcp-gateway"`

// invalidTokenChallenge answers a bearer token that is not this gateway's.
const invalidTokenChallenge = challenge + `, error="invalid_token", error_description="the bearer token is not valid for this gateway"`

// invalidTokenMessage is the JSON-RPC error message beside invalidTokenChallenge.
const invalidTokenMessage = "Unauthorized: the bearer token is not valid for this gateway " +
	"(this gateway does not use OAuth): send the token it was started with, " +
	"the one in its token file (/etc/mcp-gateway/.token in a sandbox), " +
	"or on a host the sandbox's token that `mcp-gateway sandbox connect NAME` prints"

// refuseAndClose answers an unauthenticated request with status and msg,
// and closes its connection without reading its body (closeUnread).
func refuseAndClose(w http.ResponseWriter, status int, msg string) {
	closeUnread(w)
	http.Error(w, msg, status)
}

// closeUnread makes the response say Connection: close and net/http give
// up the request's body at once: what its buffered reader already holds
// is discarded, nothing more is waited for (a read deadline in the past),
// and the connection is closed after the response. Without it net/http
// reads an unread body before or after the response, as long as the body
// deadline allows, holding the connection for a peer that showed no token.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// dropBody is closeUnread for a request that has a body: one without
// stays on its kept-alive connection.
func dropBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		closeUnread(w)
	}
}

// bodyReadTimeout is how long a request's body may take to arrive, or 0.
func (h *Handler) bodyReadTimeout() time.Duration {
	switch {
	case h.BodyReadTimeout > 0:
		return h.BodyReadTimeout
	case h.BodyReadTimeout < 0:
		return 0
	}
	return DefaultBodyReadTimeout
}

// startBodyDeadline bounds the arrival of r's body, if it has one; the
// handler that reads it lifts the bound once it has (endBodyDeadline), so
// that a response streamed for long is not cut by it (net/http reads the
// connection in the background once the body is in, to notice a client
// going away). A body the handler does not read is bounded while net/http
// discards it after the handler.
func (h *Handler) startBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return // no body
	}
	if d := h.bodyReadTimeout(); d > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
	}
}

// endBodyDeadline lifts startBodyDeadline's bound once the body is read.
func (h *Handler) endBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 && h.bodyReadTimeout() > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
}
