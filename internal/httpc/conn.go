package httpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

const (
	readBufferSize = 4 << 10
	// maxKeptWriteBuffer: a write buffer grown past it by a large body is
	// dropped when its connection goes idle, not kept by up to
	// MaxIdleConnsPerHost idle connections.
	maxKeptWriteBuffer = 64 << 10
)

var errHeadTooLong = fmt.Errorf("the response head is longer than %d bytes", maxHeadBytes)

// conn is one keep-alive connection, used by one request at a time and
// kept in its Transport's idle pool between them.
type conn struct {
	addr  string // host:port, the pool's key
	nc    net.Conn
	br    *bufio.Reader // reads from c itself, to bound a response head
	wbuf  []byte        // the request being written, kept for the next
	abort func()        // closes nc: the AfterFunc of a request's context
	// headLeft is how many bytes a response head may still take; < 0 while
	// no head is read.
	headLeft int64
	idleAt   time.Time
	reused   bool // taken from the idle pool for the current request
}

func newConn(addr string, nc net.Conn) *conn {
	c := &conn{addr: addr, nc: nc, headLeft: -1}
	c.br = bufio.NewReaderSize(c, readBufferSize)
	c.abort = func() { nc.Close() }
	return c
}

// Read reads from the connection for br, within the bound of a response
// head while one is read.
func (c *conn) Read(p []byte) (int, error) {
	if c.headLeft < 0 {
		return c.nc.Read(p)
	}
	if c.headLeft == 0 {
		return 0, errHeadTooLong
	}
	if int64(len(p)) > c.headLeft {
		p = p[:c.headLeft]
	}
	n, err := c.nc.Read(p)
	c.headLeft -= int64(n)
	return n, err
}

func (c *conn) close() { c.nc.Close() }

// readResponse reads the head of the final response to req, skipping
// informational ones (1xx but 101 Switching Protocols).
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	c.headLeft = maxHeadBytes
	defer func() { c.headLeft = -1 }()
	for range max1xx + 1 {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
	return nil, fmt.Errorf("the server sent more than %d informational (1xx) responses", max1xx)
}

// States of a body.
const (
	bodyOpen   int32 = iota
	bodyDone         // read to its end; the connection released
	bodyFailed       // a read failed; the connection closed
	bodyClosed       // closed by the caller
)

// body is a response body read from its connection. Reaching its end
// releases the connection (to the idle pool when the response allows);
// a failed read or Close before the end closes it. Close may be called
// while a Read is blocked, from another goroutine: it unblocks it.
type body struct {
	t     *Transport
	c     *conn
	rc    io.ReadCloser // made by http.ReadResponse, reading c.br
	ctx   context.Context
	stop  func() bool // stops ctx's AfterFunc; false: it ran, c is closed
	keep  bool        // c may be reused after the body's end
	state atomic.Int32
	err   error // of the failed read, returned again after it
}

func (b *body) Read(p []byte) (int, error) {
	switch b.state.Load() {
	case bodyDone:
		return 0, io.EOF
	case bodyFailed:
		return 0, b.err
	case bodyClosed:
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc.Read(p)
	switch {
	case err == nil:
		return n, nil
	case err == io.EOF:
		// Trailers, if any, were read before io.EOF: c is at the start of
		// the next response.
		if b.state.CompareAndSwap(bodyOpen, bodyDone) {
			b.t.release(b.c, b.stop, b.keep)
		}
		return n, io.EOF
	case b.ctx.Err() != nil:
		err = ctxError(b.ctx)
	case b.state.Load() == bodyClosed:
		err = http.ErrBodyReadAfterClose
	}
	b.err = err
	if b.state.CompareAndSwap(bodyOpen, bodyFailed) {
		b.stop()
		b.c.close()
	}
	return n, err
}

// Close closes the connection unless the body was read to its end: what is
// left of it is not read (it may be an endless event stream).
func (b *body) Close() error {
	if b.state.Swap(bodyClosed) == bodyOpen {
		b.stop()
		b.c.close()
	}
	return nil
}
