package httpc

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

// A Prepared is the request line and header fields of requests to one URL,
// encoded once by Prepare and written as they are, with each request's
// Content-Length and body, by Send: for a caller that sends many requests
// with the same headers (an MCP session's POSTs), what RoundTrip would
// write, without building an http.Request and encoding its header for each.
type Prepared struct {
	addr       string
	head       []byte
	req        *http.Request // Method and URL, for the responses' Request; shared, read-only
	replayable bool
	closing    bool
}

// Prepare returns the head of method requests with a body to u with header,
// as RoundTrip writes them, or nil when RoundTrip would leave such a
// request to Fallback (send those with RoundTrip). header is read now only.
func Prepare(method string, u *url.URL, header http.Header) *Prepared {
	req := &http.Request{Method: method, URL: u, Header: header, Host: u.Host, Body: http.NoBody}
	if !handles(req) {
		return nil
	}
	head, err := appendHead(nil, req)
	if err != nil {
		return nil
	}
	return &Prepared{
		addr:       dialAddr(u),
		head:       head,
		req:        &http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}},
		replayable: idempotent(req),
		closing:    httpfield.HasToken(header["Connection"], "close"),
	}
}

// Send sends a request of p's head with body (of any length: it is in
// memory) and returns the response as RoundTrip does, with the same
// connection reuse, retries and cancellation by ctx.
func (t *Transport) Send(ctx context.Context, p *Prepared, body []byte) (*http.Response, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	c, err := t.conn(ctx, p.addr)
	if err != nil {
		return nil, err
	}
	b := append(c.wbuf[:0], p.head...)
	b = appendLength(b, len(body))
	c.wbuf = append(b, body...)
	return t.send(ctx, c, p.req, p.replayable, p.closing)
}
