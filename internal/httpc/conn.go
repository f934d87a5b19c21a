package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/rawio"
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
	// tail is the rest of a released response body (see body.Release),
	// read and discarded before the connection is used again; nil when
	// the connection is at the start of a response.
	tail io.Reader
	// nowait makes Read return errWouldBlock instead of waiting for data:
	// set while the tail is read.
	nowait bool
	// early holds the first bytes of a tail, read by finishTail before the
	// tail's reader runs; Read gives them first.
	early    []byte
	earlyBuf [64]byte
	// rr and rw read and write nc with raw system calls (internal/rawio:
	// they do not wake the runtime's sysmon); nil when nc is no socket.
	rr *rawio.Reader
	rw *rawio.Writer
}

// errWouldBlock: a read without waiting found no data.
var errWouldBlock = errors.New("httpc: no data without waiting")

// maxTail bounds what is read and discarded of a released body.
const maxTail = 1 << 20

func newConn(addr string, nc net.Conn) *conn {
	c := &conn{addr: addr, nc: nc, headLeft: -1, rr: rawio.NewReader(nc), rw: rawio.NewWriter(nc)}
	c.br = bufio.NewReaderSize(c, readBufferSize)
	c.abort = func() { nc.Close() }
	return c
}

// Read reads from the connection for br, within the bound of a response
// head while one is read.
func (c *conn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	if c.nowait {
		return readNow(c.nc, p)
	}
	if c.headLeft < 0 {
		return c.read(p)
	}
	if c.headLeft == 0 {
		return 0, errHeadTooLong
	}
	if int64(len(p)) > c.headLeft {
		p = p[:c.headLeft]
	}
	n, err := c.read(p)
	c.headLeft -= int64(n)
	return n, err
}

func (c *conn) read(p []byte) (int, error) {
	if c.rr != nil {
		return c.rr.Read(p)
	}
	return c.nc.Read(p)
}

// write writes all of b to the connection.
func (c *conn) write(b []byte) (int, error) {
	if c.rw != nil {
		return c.rw.Write(b)
	}
	return c.nc.Write(b)
}

func (c *conn) close() { c.nc.Close() }

// States of a released body's rest, for finishTail.
const (
	tailRead    = iota // read: the connection is at the start of a response
	tailPending        // nothing of it has arrived yet; nothing consumed
	tailFailed         // part of it, too much of it, or an error: close
)

// finishTail reads and discards the rest of a released body without
// waiting. When none of it has arrived yet the connection is left as it
// is, to be tried again later; when only part of it has (the server is
// still writing that response), or more than maxTail, it has failed.
func (c *conn) finishTail() int {
	if c.tail == nil {
		return tailRead
	}
	if c.br.Buffered() == 0 {
		// One read without waiting, kept aside: nothing is consumed of the
		// tail's reader when nothing has arrived (it would keep the error).
		n, err := readNow(c.nc, c.earlyBuf[:])
		switch {
		case err == errWouldBlock:
			return tailPending
		case err != nil:
			return tailFailed
		}
		c.early = c.earlyBuf[:n]
	}
	c.nowait = true
	n, err := io.Copy(io.Discard, io.LimitReader(c.tail, maxTail+1))
	c.nowait = false
	c.tail = nil
	if err != nil || n > maxTail || c.br.Buffered() > 0 || len(c.early) > 0 {
		return tailFailed
	}
	return tailRead
}

// readResponse reads the head of the final response to req, skipping
// informational ones (1xx but 101 Switching Protocols): a simple head
// itself (head.go), any other with http.ReadResponse.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	c.headLeft = maxHeadBytes
	defer func() { c.headLeft = -1 }()
	for range max1xx + 1 {
		resp, err := readSimpleResponse(c.br, req)
		if err == errNotSimple {
			resp, err = http.ReadResponse(c.br, req)
		}
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
	bodyOpen     int32 = iota
	bodyDone           // read to its end; the connection released
	bodyFailed         // a read failed; the connection closed
	bodyClosed         // closed by the caller
	bodyReleased       // released by the caller: its rest is read later
)

// body is a response body read from its connection. Reaching its end
// releases the connection (to the idle pool when the response allows);
// a failed read or Close before the end closes it. Close may be called
// while a Read is blocked, from another goroutine: it unblocks it.
type body struct {
	t     *Transport
	c     *conn
	rc    io.ReadCloser // made by readResponse, reading c.br
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
	case bodyClosed, bodyReleased:
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

// Release ends the caller's use of a body it has read what it needs of,
// when the rest is expected to follow at once (the end of an SSE response
// stream after its last event): instead of a reader waiting for it, the
// connection goes back to the idle pool, behind the others, with the rest
// unread, and the next request to take it reads and discards the rest
// first, without waiting. If none of it has arrived by then, the request
// leaves the connection idle and takes another; if part of it has, the
// connection is closed. The request's context no longer closes the connection. Release
// after the body's end or Close does nothing more; Read after it fails.
func (b *body) Release() {
	if !b.state.CompareAndSwap(bodyOpen, bodyReleased) {
		return
	}
	if !b.stop() || !b.keep {
		b.c.close() // the context ended meanwhile, or no reuse anyway
		return
	}
	b.c.tail = b.rc
	b.t.keepIdle(b.c, true) // behind the others: its rest has time to arrive
}
