package httpc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

const defaultUserAgent = "Go-http-client/1.1"

// errUnhandled: the request is one for Fallback after all (found while
// writing it, before its body was read).
var errUnhandled = errors.New("httpc: request left to the fallback")

// handles says whether the Transport serves req itself; the rest goes to
// Fallback.
func handles(req *http.Request) bool {
	u := req.URL
	switch {
	case u == nil || u.Scheme != "http" || req.Method == http.MethodConnect:
		return false
	case len(req.TransferEncoding) > 0 || req.Trailer != nil:
		return false
	case !validHost(u.Host) || (req.Host != "" && !validHost(req.Host)):
		return false
	case req.Body == nil || req.Body == http.NoBody:
		if req.ContentLength != 0 {
			return false // net/http says what is wrong with it
		}
	case req.ContentLength <= 0 || req.ContentLength > maxBody:
		return false // unknown length, or too long to copy
	}
	if len(req.Header["Expect"]) > 0 || len(req.Header["Upgrade"]) > 0 {
		return false
	}
	for _, v := range req.Header["Connection"] {
		if !strings.EqualFold(v, "close") && !strings.EqualFold(v, "keep-alive") {
			return false // hop-by-hop headers named, an upgrade
		}
	}
	return true
}

// appendRequest appends req as HTTP/1.1 to b: request line, Host,
// User-Agent, req.Header, Content-Length, the body. It returns errUnhandled
// for a request net/http would refuse (an invalid method, header name or
// value), before reading its body.
func appendRequest(b []byte, req *http.Request) ([]byte, error) {
	b, err := appendHead(b, req)
	if err != nil {
		return b, err
	}
	if req.Body == nil || req.Body == http.NoBody {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch: // as net/http: many servers want one
			b = append(b, "Content-Length: 0\r\n"...)
		}
		return append(b, "\r\n"...), nil
	}
	b = appendLength(b, int(req.ContentLength))
	return appendBody(b, req.Body, int(req.ContentLength))
}

// appendLength appends the Content-Length field and the head's end.
func appendLength(b []byte, n int) []byte {
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, "\r\n\r\n"...)
}

// appendHead appends req's request line and header fields but
// Content-Length (see appendRequest).
func appendHead(b []byte, req *http.Request) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !httpfield.ValidName(method) {
		return b, errUnhandled
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = appendRequestURI(b, req.URL)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	switch ua, ok := req.Header["User-Agent"]; {
	case !ok:
		b = append(b, "User-Agent: "+defaultUserAgent+"\r\n"...)
	case len(ua) > 0 && ua[0] != "": // an empty one means none, as in net/http
		if !httpfield.ValidValue(ua[0]) {
			return b, errUnhandled
		}
		b = append(b, "User-Agent: "...)
		b = append(b, trimOWS(ua[0])...)
		b = append(b, "\r\n"...)
	}
	if req.Close || httpfield.HasToken(req.Header["Connection"], "close") {
		b = append(b, "Connection: close\r\n"...)
	}
	for k, vv := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Connection", "Transfer-Encoding", "Trailer":
			continue // written above or below, or not at all
		}
		if !httpfield.ValidName(k) {
			return b, errUnhandled
		}
		for _, v := range vv {
			if !httpfield.ValidValue(v) {
				return b, errUnhandled
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, trimOWS(v)...)
			b = append(b, "\r\n"...)
		}
	}
	return b, nil
}

// appendBody appends the n bytes of body to b, and fails if it has fewer or
// more.
func appendBody(b []byte, body io.Reader, n int) ([]byte, error) {
	start := len(b)
	b = slices.Grow(b, n+1)[:start+n+1] // one more byte, to see there is no more
	if got, err := io.ReadFull(body, b[start:start+n]); err != nil {
		return b[:start], fmt.Errorf("reading the request body: %d of its ContentLength %d bytes: %w", got, n, err)
	}
	if extra, _ := body.Read(b[start+n:]); extra > 0 {
		return b[:start], fmt.Errorf("the request body is longer than its ContentLength %d", n)
	}
	return b[:start+n], nil
}

// appendRequestURI appends u.RequestURI() without building it as a string.
func appendRequestURI(b []byte, u *url.URL) []byte {
	if u.Opaque != "" {
		return append(b, u.RequestURI()...)
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	b = append(b, p...)
	if u.ForceQuery || u.RawQuery != "" {
		b = append(b, '?')
		b = append(b, u.RawQuery...)
	}
	return b
}

// dialAddr is the host:port to dial for u, port 80 when it names none.
func dialAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// idempotent says whether req may be sent again after it was written, as
// net/http decides.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// validHost accepts a host (and port) of printable ASCII; anything else
// (international names, IPv6 zones) is left to Fallback.
func validHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c <= ' ' || c >= 0x7f || c == '%' {
			return false
		}
	}
	return true
}

// trimOWS drops the spaces and tabs around a header value, as net/http does.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
