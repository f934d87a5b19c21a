package httpd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

// parsed is a request head this package serves: a POST of the server's
// Path in HTTP/1.1.
type parsed struct {
	header        http.Header // less Host, as net/http has it
	host          string
	contentLength int64
	close         bool // the client sent "Connection: close"
}

// request is what a request needs beside its http.Request, in one
// allocation.
type request struct {
	url  url.URL
	body body
}

// newRequest returns the request p describes, with ctx as its context.
func (s *Server) newRequest(ctx context.Context, c *conn, p *parsed) *http.Request {
	r := &request{url: url.URL{Path: s.Path}}
	var b io.ReadCloser = http.NoBody
	if p.contentLength > 0 {
		r.body = body{c: c, remaining: p.contentLength}
		b = &r.body
	}
	// The literal stays on the stack: WithContext makes the one copy.
	return (&http.Request{
		Method:        http.MethodPost,
		URL:           &r.url,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        p.header,
		Body:          b,
		ContentLength: p.contentLength,
		Close:         p.close,
		Host:          p.host,
		RemoteAddr:    c.remoteAddr,
		RequestURI:    s.Path,
	}).WithContext(ctx)
}

// readRequest reads the next request's head if this package serves the
// request; it returns nil, leaving every byte unread, when the request is
// for net/http: not a POST of Path in HTTP/1.1 with a Content-Length of at
// most MaxBodyBytes and a head that fits the read buffer, or with
// Transfer-Encoding, Expect or Upgrade, or anything net/http would refuse.
func (c *conn) readRequest() (p parsed, ok bool, err error) {
	head, err := c.peekHead()
	if err != nil || head == nil {
		return p, false, err
	}
	if p, ok = c.srv.parseHead(head); ok {
		_, _ = c.br.Discard(len(head))
	}
	return p, ok, nil
}

var headEnd = []byte("\r\n\r\n")

// peekHead returns the request line and headers, through the empty line,
// without consuming them; nil when they do not fit the buffer.
func (c *conn) peekHead() ([]byte, error) {
	deadline := false
	defer func() {
		if deadline {
			_ = c.rwc.SetReadDeadline(time.Time{})
		}
	}()
	for {
		n := c.br.Buffered()
		buf, _ := c.br.Peek(n)
		i := bytes.Index(buf, headEnd)
		if i >= 0 && !bareLFEnd(buf[:i+1]) {
			return buf[:i+len(headEnd)], nil
		}
		if i >= 0 || bareLFEnd(buf) || n >= c.br.Size() {
			return nil, nil // a line ended by a bare LF (net/http takes it), or too long
		}
		if !deadline && c.srv.ReadHeaderTimeout > 0 {
			_ = c.rwc.SetReadDeadline(time.Now().Add(c.srv.ReadHeaderTimeout))
			deadline = true
		}
		if _, err := c.br.Peek(n + 1); err != nil {
			return nil, err
		}
	}
}

// bareLFEnd reports an empty line ended by a bare LF, which net/http (like
// RFC 9112's lenient parsers) takes as the end of a head.
func bareLFEnd(b []byte) bool {
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\n\r\n"))
}

// parseHead parses a request head ending in an empty line; ok is false for
// a request this package leaves to net/http.
func (s *Server) parseHead(head []byte) (p parsed, ok bool) {
	line, rest, _ := bytes.Cut(head, crlf)
	method, rest1, ok1 := bytes.Cut(line, sp)
	target, proto, ok2 := bytes.Cut(rest1, sp)
	if !ok1 || !ok2 || string(method) != http.MethodPost || s.Path == "" || string(target) != s.Path || string(proto) != "HTTP/1.1" {
		return p, false
	}

	// One string holds every header value: one allocation for all of them.
	fields := string(rest[:len(rest)-len(crlf)])
	n := strings.Count(fields, "\r\n")
	header := make(http.Header, n)
	values := make([]string, n)
	p.contentLength = -1
	hosts := 0
	for i := 0; fields != ""; i++ {
		var f string
		f, fields, _ = strings.Cut(fields, "\r\n")
		name, value, ok := strings.Cut(f, ":")
		if !ok || !httpfield.ValidName(name) {
			return p, false // also a folded line, which starts with a space
		}
		value = strings.Trim(value, " \t")
		if !httpfield.ValidValue(value) {
			return p, false
		}
		key := canonicalKey(name)
		switch key {
		case "Host":
			p.host, hosts = value, hosts+1
			continue
		case "Content-Length":
			if p.contentLength >= 0 {
				return p, false
			}
			p.contentLength = parseLength(value, s.maxBodyBytes())
			if p.contentLength < 0 {
				return p, false
			}
		case "Transfer-Encoding", "Expect", "Upgrade":
			return p, false
		case "Connection":
			for tok := range strings.SplitSeq(value, ",") {
				tok = strings.TrimSpace(tok)
				if strings.EqualFold(tok, "upgrade") {
					return p, false
				}
				if strings.EqualFold(tok, "close") {
					p.close = true
				}
			}
		}
		if vv, dup := header[key]; dup {
			header[key] = append(vv, value)
			continue
		}
		values[i] = value
		header[key] = values[i : i+1 : i+1]
	}
	if hosts != 1 || !validHost(p.host) || p.contentLength < 0 {
		return p, false
	}
	p.header = header
	return p, true
}

var (
	crlf = []byte("\r\n")
	sp   = []byte(" ")
)

// parseLength parses a Content-Length of decimal digits, or returns -1 for
// anything else or a length over max.
func parseLength(v string, max int64) int64 {
	if v == "" || len(v) > 18 {
		return -1
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return -1
		}
		n = n*10 + int64(v[i]-'0')
	}
	if n > max {
		return -1
	}
	return n
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey without an allocation
// for the header names MCP clients send, in whatever case they send them.
func canonicalKey(name string) string {
	for _, k := range commonKeys {
		if len(k) == len(name) && strings.EqualFold(k, name) {
			return k
		}
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

var commonKeys = [...]string{
	"Host", "Accept", "Content-Type", "Content-Length", "Authorization",
	"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name",
	"User-Agent", "Accept-Encoding", "Connection", "Origin", "Last-Event-Id",
	"Accept-Language", "Sec-Fetch-Mode",
}

// validHost reports a Host header of the characters net/http accepts.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if !isHostChar[h[i]] {
			return false
		}
	}
	return true
}

var isHostChar [256]bool

func init() {
	for c := '0'; c <= '9'; c++ {
		isHostChar[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		isHostChar[c], isHostChar[c-'a'+'A'] = true, true
	}
	for _, c := range "!$%&'()*+,-.:;=[]_~" {
		isHostChar[c] = true
	}
}
