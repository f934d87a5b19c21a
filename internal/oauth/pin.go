package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Pin is the authorization server a server's credentials may be sent to:
// its issuer and token endpoint, from the server's "oauth" entry or
// recorded at first use. A zero field pins nothing.
type Pin struct {
	Issuer        string
	TokenEndpoint string
	// Configured says the pin is the configuration's (else: first use),
	// for the error's advice.
	Configured bool
}

// ErrPinMismatch: the server's metadata names another authorization
// server (or token endpoint) than the one pinned; nothing was sent to it.
var ErrPinMismatch = errors.New("authorization server is not the one pinned")

// PinError is a refusal to use an authorization server other than the
// pinned one; its text names the server, the pinned and the new value,
// and what to do.
type PinError struct {
	Server string
	// What is "authorization server" or "token endpoint".
	What          string
	Pinned, Named string
	// Hint says how to accept the new one.
	Hint string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("mcp server %q: OAuth refused: its metadata names %s %s, not the pinned %s; no credentials were sent to it. %s",
		e.Server, e.What, e.Named, e.Pinned, e.Hint)
}

func (e *PinError) Unwrap() error { return ErrPinMismatch }

// issuersEqual compares issuer identifiers as the SDK does (RFC 8414
// wants them equal; a trailing slash is forgiven).
func issuersEqual(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// origin is scheme://host[:port] of u, "" when u is not an absolute URL.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host)
}

// checkTokenEndpoint decides whether a secret may go to the discovered
// token endpoint: the pinned one exactly, else one on the issuer's own
// origin (a token endpoint elsewhere must be named by the configuration).
func (p Pin) checkTokenEndpoint(server, issuer, endpoint, hint string) error {
	if p.TokenEndpoint != "" {
		if endpoint != p.TokenEndpoint {
			return &PinError{Server: server, What: "token endpoint", Pinned: p.TokenEndpoint, Named: endpoint, Hint: hint}
		}
		return nil
	}
	if o := origin(endpoint); o == "" || o != origin(issuer) {
		return &PinError{Server: server, What: "token endpoint", Pinned: "issuer's origin " + origin(issuer), Named: endpoint,
			Hint: fmt.Sprintf(`A token endpoint on another origin than its issuer's is used only when the configuration names it: set "tokenEndpoint": %q in its oauth entry if it is the right one.`, endpoint)}
	}
	return nil
}
