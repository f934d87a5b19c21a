package httpd

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/rawio"
)

// The states of a connection this package serves, for Shutdown.
const (
	stateIdle int32 = iota // waiting for a request: Shutdown may close it
	stateActive
	stateClosed
)

// watchAfter is how long a request runs before its connection is watched
// for the client going away (which cancels the request's context). net/http
// watches every request from its start, at the cost of a goroutine and two
// deadline changes per request; most calls are answered well within this.
const watchAfter = 25 * time.Millisecond

// conn is one client connection served by this package.
type conn struct {
	srv        *Server
	rwc        net.Conn
	cr         connReader
	br         *bufio.Reader
	remoteAddr string
	baseCtx    context.Context
	state      atomic.Int32

	watchTimer *time.Timer
	mu         sync.Mutex
	inRequest  bool               // the request's body is read and its handler runs
	watching   bool               // a watcher is reading the connection
	watchDone  chan struct{}      // closed when the watcher returns
	watchErr   error              // the watcher's read error: the client went away
	cancel     context.CancelFunc // the request's context
	watchBuf   [1]byte
	resp       response      // the response being written, reused
	rawW       *rawio.Writer // writes a TCP connection; nil: rwc.Write
}

// connReader reads the connection, giving first what a watcher read.
type connReader struct {
	c       *conn
	pending []byte
	raw     *rawio.Reader // reads a TCP connection; nil: rwc.Read
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	if r.raw != nil {
		return r.raw.Read(p)
	}
	return r.c.rwc.Read(p)
}

// write writes to the connection: with raw system calls when it is a TCP
// connection (see internal/rawio), with rwc.Write otherwise.
func (c *conn) write(b []byte) (int, error) {
	if c.rawW != nil {
		return c.rawW.Write(b)
	}
	return c.rwc.Write(b)
}

// serve answers the connection's requests until it closes, fails, or has a
// request for net/http.
func (c *conn) serve() {
	handedOff := false
	defer func() {
		c.watchTimer.Stop()
		if !handedOff {
			c.srv.forget(c)
			c.rwc.Close()
		}
	}()
	for {
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return // Shutdown closed it
		}
		p, ok, err := c.readRequest()
		if err != nil {
			return
		}
		if !ok {
			handedOff = true
			c.srv.forget(c)
			c.cr.raw = nil // net/http reads it its own way from now on
			c.srv.handoff.give(&bufferedConn{Conn: c.rwc, br: c.br, cr: &c.cr})
			return
		}
		if !c.serveRequest(&p) || c.srv.closing.Load() {
			return
		}
		c.state.Store(stateIdle)
	}
}

// serveRequest runs the handler and writes its response; it reports
// whether the connection can carry another request.
func (c *conn) serveRequest(p *parsed) bool {
	ctx, cancel := context.WithCancel(c.baseCtx)
	defer cancel()
	req := c.srv.newRequest(ctx, c, p)
	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	if p.contentLength == 0 {
		c.bodyDone()
	}

	w := c.newResponse(req)
	ok := c.runHandler(w, req)
	if !c.endRequest() || !ok {
		w.release()
		return false
	}
	if err := w.finish(); err != nil {
		return false
	}
	if b, _ := req.Body.(*body); b != nil && b.remaining > 0 {
		// The handler did not read its whole body: skip the rest to
		// reach the next request.
		if _, err := c.br.Discard(int(b.remaining)); err != nil {
			return false
		}
	}
	return !p.close && !w.closeAfter
}

// runHandler calls the handler; it reports false when the handler panicked.
func (c *conn) runHandler(w *response, req *http.Request) (ok bool) {
	defer func() {
		if err := recover(); err != nil {
			ok = false
			if err != http.ErrAbortHandler {
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				c.srv.logf("httpd: panic serving %v: %v\n%s", c.remoteAddr, err, buf)
			}
		}
	}()
	c.srv.Handler.ServeHTTP(w, req)
	return true
}

// bodyDone is called once the request's body has been read: from now on a
// read of the connection can only see the client's next request or its
// going away, so the watcher may read it.
func (c *conn) bodyDone() {
	c.mu.Lock()
	c.inRequest = true
	c.mu.Unlock()
	c.watchTimer.Reset(watchAfter)
}

// watch runs when a request has taken watchAfter: it reads the connection
// until endRequest stops it, and cancels the request if the client goes
// away. A byte the client sends meanwhile (its next request) is kept.
func (c *conn) watch() {
	c.mu.Lock()
	if !c.inRequest || c.watching {
		c.mu.Unlock()
		return
	}
	c.watching = true
	done := make(chan struct{})
	c.watchDone = done
	cancel := c.cancel
	c.mu.Unlock()

	defer close(done)
	n, err := c.rwc.Read(c.watchBuf[:])
	if n > 0 {
		c.cr.pending = append(c.cr.pending, c.watchBuf[:n]...)
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		c.watchErr = err
		cancel()
	}
}

// endRequest stops the watcher, if one runs; it reports whether the client
// is still there.
func (c *conn) endRequest() bool {
	c.watchTimer.Stop()
	c.mu.Lock()
	c.inRequest = false
	watching, done := c.watching, c.watchDone
	c.watching = false
	c.mu.Unlock()
	if !watching {
		return true
	}
	_ = c.rwc.SetReadDeadline(aLongTimeAgo)
	<-done
	_ = c.rwc.SetReadDeadline(time.Time{})
	return c.watchErr == nil
}

var aLongTimeAgo = time.Unix(1, 0)

// body is a request body read from the connection's buffer.
type body struct {
	c         *conn
	remaining int64
}

func (b *body) Read(p []byte) (int, error) {
	if b.remaining == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.c.br.Read(p)
	b.remaining -= int64(n)
	if b.remaining == 0 {
		b.c.bodyDone()
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) Close() error { return nil }
