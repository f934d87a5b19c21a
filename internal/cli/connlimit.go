package cli

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// refuseWriteTimeout bounds the writing of a refusal to a connection
	// over the limit; refuseLinger bounds the reading of its request after
	// that, so the client gets the answer rather than a reset.
	refuseWriteTimeout = time.Second
	refuseLinger       = time.Second
	// maxRefusing bounds the refusals in progress; beyond, a connection
	// over the limit is closed without an answer.
	maxRefusing = 64
	// refuseLogEvery spaces the warnings about refused connections.
	refuseLogEvery = time.Minute
)

// refusal is what a connection over the limit reads before it is closed.
var refusal = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Connection: close\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\n" +
	"Content-Length: 52\r\n" +
	"\r\n" +
	"the gateway has too many connections; try again soon")

// limitListener accepts at most max open connections. A connection beyond
// them is answered 503 with Connection: close and closed, on its own
// goroutine, while Accept goes on; the connections already open are not
// touched. A connection counts until it is closed.
type limitListener struct {
	net.Listener
	max      int64
	log      *slog.Logger
	open     atomic.Int64
	refusing atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last warning
}

func newLimitListener(ln net.Listener, max int, logger *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), log: logger}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

func (l *limitListener) refuse(c net.Conn) {
	now := time.Now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(refuseLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn(fmt.Sprintf("refusing connections beyond %d open ones with 503 (see --max-connections)", l.max), "remote", c.RemoteAddr().String())
	}
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		if _, err := c.Write(refusal); err != nil {
			return
		}
		// Half-close, then read what the client sent until it closes or
		// the linger is over: closing with its request unread would
		// reset the connection, and the client might lose the answer.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = c.SetReadDeadline(time.Now().Add(refuseLinger))
		buf := make([]byte, 4<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// limitedConn gives its place back when it is closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// CloseWrite half-closes a TCP connection, as net/http does before closing
// one whose request it has not read to the end.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
