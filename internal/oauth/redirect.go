package oauth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
)

// CheckRedirect is the CheckRedirect of the gateway's clients of
// authorization servers. Go's client follows a redirect to the same host
// keeping the Authorization header (a client secret, basic), and a 307 or
// 308 sends the body again (a code, its verifier, a refresh token, a
// client secret): so a redirect is followed only to https (or to a
// loopback address, for tests and local servers), at most 5 times.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("stopped after 5 redirects")
	}
	if req.URL.Scheme == "https" || isLoopbackHost(req.URL.Hostname()) {
		return nil
	}
	return fmt.Errorf("refusing a redirect to %s://%s: an authorization server's requests go over https only", req.URL.Scheme, req.URL.Host)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
