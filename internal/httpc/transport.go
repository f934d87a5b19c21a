package httpc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

const (
	defaultMaxIdleConnsPerHost = 128
	defaultIdleConnTimeout     = 90 * time.Second
	// maxBody bounds a request body the Transport writes itself: it is
	// copied into the connection's write buffer. Larger ones go to Fallback.
	maxBody = 1 << 20
	// maxHeadBytes bounds a response head (status line and headers), and
	// the 1xx heads before it; net/http's default is 10 MiB, MCP servers
	// send well under 1 KiB.
	maxHeadBytes = 1 << 20
	// max1xx bounds the informational responses skipped before the final one.
	max1xx = 10
	// justUsed: a connection idle for less than this is taken without
	// peeking at its socket first (a system call per request under load).
	// A server closes an idle connection after seconds (Node 5s, Go and
	// Python servers likewise or never), or says Connection: close; one
	// that closes it within a few milliseconds of its answer without saying
	// so (a server shutting down) can fail the request that takes it then,
	// as net/http's requests fail when the close arrives just after the
	// take.
	justUsed = 2 * time.Millisecond
)

var defaultDialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// Transport is an [http.RoundTripper] speaking HTTP/1.1 with keep-alive to
// plain http:// URLs, writing each request and reading its response on the
// caller's goroutine; it hands every other request to Fallback (see the
// package doc). It uses no proxy. It is safe for concurrent use; a zero
// Transport is ready to use.
type Transport struct {
	// Dial makes every connection of the requests the Transport serves
	// itself, with the request's context. Nil means a net.Dialer with a 30s
	// timeout. Fallback dials on its own: give it the same function.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Fallback serves the requests the Transport leaves: https, CONNECT,
	// upgrades, bodies of unknown length or over 1 MiB, trailers, Expect,
	// invalid requests. Nil means http.DefaultTransport.
	Fallback http.RoundTripper
	// MaxIdleConnsPerHost bounds the idle connections kept per host:port;
	// past it the longest idle is closed. Zero or less means 128.
	MaxIdleConnsPerHost int
	// IdleConnTimeout is how long a connection may stay idle and still be
	// reused. Zero or less means 90s. No timer watches idle connections:
	// one idle longer is closed when a request to its host finds it, or by
	// CloseIdleConnections.
	IdleConnTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*conn // by host:port, the most recently used last
}

// RoundTrip sends req and returns the response head; the body is read from
// the connection as the caller reads resp.Body. A request's context ending
// at any point, also while the body is read, closes the connection, and the
// error then wraps the context's (errors.Is(err, context.Canceled) holds).
// A request whose write fails on a reused connection, nothing sent, is sent
// once more on a new one; so is a GET, HEAD, OPTIONS or TRACE whose answer
// does not come on a reused connection. Any other request (a POST: a tool
// call) is never sent twice once written, as in net/http.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !handles(req) {
		return t.fallback().RoundTrip(req)
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		closeBody(req)
		return nil, ctxError(ctx)
	}
	addr := dialAddr(req.URL)
	c, err := t.conn(ctx, addr)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	c.wbuf, err = appendRequest(c.wbuf[:0], req)
	if err != nil {
		t.putIdle(c) // nothing was written on it
		if err == errUnhandled {
			return t.fallback().RoundTrip(req)
		}
		closeBody(req)
		return nil, err
	}
	closeBody(req)
	closing := req.Close || httpfield.HasToken(req.Header["Connection"], "close")
	return t.send(ctx, c, req, idempotent(req), closing)
}

// send sends the request held in c.wbuf, and once more on a new connection
// when the first exchange says it may (see exchange).
func (t *Transport) send(ctx context.Context, c *conn, req *http.Request, replayable, closing bool) (*http.Response, error) {
	for retried := false; ; retried = true {
		resp, retry, err := t.exchange(ctx, c, req, replayable, closing)
		if err == nil || !retry || retried || ctx.Err() != nil {
			return resp, err
		}
		fresh, derr := t.dial(ctx, c.addr)
		if derr != nil {
			return nil, derr
		}
		fresh.wbuf, c.wbuf = c.wbuf, nil // the request, written already
		c = fresh
	}
}

// exchange writes the request held in c.wbuf and reads the response head.
// retry says the request can be sent again on another connection: c was
// reused and either nothing was written or the request is replayable
// (idempotent). req may be nil (Send); closing says the request asked for
// Connection: close.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request, replayable, closing bool) (resp *http.Response, retry bool, err error) {
	stop := noStop
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abort)
	}
	if n, werr := c.write(c.wbuf); werr != nil {
		stop()
		c.close()
		if ctx.Err() != nil {
			return nil, false, ctxError(ctx)
		}
		return nil, c.reused && n == 0, fmt.Errorf("writing the request: %w", werr)
	}
	resp, err = c.readResponse(req)
	if err != nil {
		stop()
		c.close()
		if ctx.Err() != nil {
			return nil, false, ctxError(ctx)
		}
		return nil, c.reused && replayable, fmt.Errorf("reading the response: %w", err)
	}
	keep := !resp.Close && !closing && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		t.release(c, stop, keep)
		return resp, false, nil
	}
	resp.Body = &body{t: t, c: c, rc: resp.Body, ctx: ctx, stop: stop, keep: keep}
	return resp, false, nil
}

// release ends an exchange on c: back to the idle pool if its response
// allows it and its context did not end (stop finds the AfterFunc not run).
func (t *Transport) release(c *conn, stop func() bool, keep bool) {
	if stop() && keep {
		t.putIdle(c)
		return
	}
	c.close()
}

// CloseIdleConnections closes every idle connection, and those of Fallback
// when it is set and has such a method. Connections in use are left alone.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			c.close()
		}
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (t *Transport) fallback() http.RoundTripper {
	if t.Fallback != nil {
		return t.Fallback
	}
	return http.DefaultTransport
}

// conn returns a live idle connection to addr, or a new one: one idle
// longer than justUsed is peeked at first (see alive). An idle connection
// whose released body's rest has not arrived yet is skipped and kept,
// behind the others.
func (t *Transport) conn(ctx context.Context, addr string) (*conn, error) {
	var waiting []*conn
	defer func() {
		for _, c := range waiting {
			t.keepIdle(c, true)
		}
	}()
	for {
		c := t.takeIdle(addr)
		if c == nil {
			return t.dial(ctx, addr)
		}
		switch c.finishTail() {
		case tailPending:
			waiting = append(waiting, c)
			continue
		case tailRead:
			if time.Since(c.idleAt) < justUsed || alive(c.nc) {
				c.reused = true
				return c, nil
			}
		}
		c.close() // the server closed it while it was idle, or was still writing
	}
}

func (t *Transport) dial(ctx context.Context, addr string) (*conn, error) {
	dial := t.Dial
	if dial == nil {
		dial = defaultDialer.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx)
		}
		return nil, err
	}
	return newConn(addr, nc), nil
}

// takeIdle pops the most recently used idle connection to addr. Finding it
// idle too long closes it and every one below it, idle longer still.
func (t *Transport) takeIdle(addr string) *conn {
	now := time.Now()
	t.mu.Lock()
	conns := t.idle[addr]
	n := len(conns)
	if n == 0 {
		t.mu.Unlock()
		return nil
	}
	if c := conns[n-1]; now.Sub(c.idleAt) <= t.idleTimeout() {
		conns[n-1] = nil
		t.idle[addr] = conns[:n-1]
		t.mu.Unlock()
		return c
	}
	delete(t.idle, addr)
	t.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	return nil
}

// putIdle keeps c for the next request to its address, closing the longest
// idle connections past the bound or the timeout.
func (t *Transport) putIdle(c *conn) { t.keepIdle(c, false) }

// keepIdle keeps c idle: on top of the others (taken first), or behind them.
func (t *Transport) keepIdle(c *conn, behind bool) {
	if c.tail == nil && (c.br.Buffered() > 0 || len(c.early) > 0) { // the server sent more than its response
		c.close()
		return
	}
	if cap(c.wbuf) > maxKeptWriteBuffer {
		c.wbuf = nil
	}
	c.reused = false
	c.idleAt = time.Now()
	max, timeout := t.maxIdle(), t.idleTimeout()
	var evicted []*conn
	t.mu.Lock()
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	conns := t.idle[c.addr]
	drop := 0
	for drop < len(conns) && (len(conns)-drop >= max || c.idleAt.Sub(conns[drop].idleAt) > timeout) {
		drop++
	}
	if drop > 0 {
		evicted = append(evicted, conns[:drop]...)
		kept := copy(conns, conns[drop:])
		clear(conns[kept:])
		conns = conns[:kept]
	}
	if behind {
		conns = slices.Insert(conns, 0, c)
	} else {
		conns = append(conns, c)
	}
	t.idle[c.addr] = conns
	t.mu.Unlock()
	for _, e := range evicted {
		e.close()
	}
}

func (t *Transport) maxIdle() int {
	if t.MaxIdleConnsPerHost > 0 {
		return t.MaxIdleConnsPerHost
	}
	return defaultMaxIdleConnsPerHost
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout > 0 {
		return t.IdleConnTimeout
	}
	return defaultIdleConnTimeout
}

func noStop() bool { return true }

// ctxError is the error of a request whose context ended: ctx.Err(), with
// the cause given to the cancel function beside it when there is one.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
