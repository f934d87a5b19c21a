package front

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
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
