// Package httpd is the gateway's HTTP/1.1 server, the first step on the path
// of a call. It reads and answers the requests of that path (POST /mcp)
// itself, without net/http's per-request goroutine, deadlines and header
// machinery, and hands every other connection to a net/http server: a
// connection whose next request is anything else (another method or path,
// a chunked or large body, Expect, Upgrade, HTTP/1.0, an unusual header) goes
// to net/http with every byte read so far, and stays there.
//
// Both paths call the same http.Handler with an ordinary *http.Request and
// http.ResponseWriter (which also implements http.Flusher), so the handler
// does not know which one served it.
package httpd

import (
	"bufio"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/rawio"
)

// Server serves HTTP/1.1 on a listener. The zero value with a Handler and a
// Path works.
type Server struct {
	// Handler answers every request, on both paths.
	Handler http.Handler
	// Path is the request target whose POST requests this package reads and
	// answers ("/mcp"). Empty: every connection goes to net/http.
	Path string
	// MaxBodyBytes is the largest request body read here; a request with a
	// longer one goes to net/http with its connection. 0 means 1 MiB.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds the reading of a request's headers once its
	// first byte has come, on both paths. 0: no limit.
	ReadHeaderTimeout time.Duration
	// ErrorLog receives the panics of the handler and net/http's own
	// errors. nil: the log package's standard logger.
	ErrorLog *log.Logger

	initOnce sync.Once
	std      *http.Server
	handoff  *handoffListener
	closing  atomic.Bool

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{}
}

const (
	defaultMaxBodyBytes = 1 << 20
	readBufferSize      = 4 << 10
)

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.std = &http.Server{Handler: s.Handler, ReadHeaderTimeout: s.ReadHeaderTimeout, ErrorLog: s.ErrorLog}
		s.handoff = &handoffListener{conns: make(chan net.Conn), closed: make(chan struct{})}
		s.conns = make(map[*conn]struct{})
	})
}

// Serve accepts connections on ln until Shutdown or Close, and returns
// http.ErrServerClosed then, or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.handoff.addr = ln.Addr()
	s.mu.Unlock()
	go func() { _ = s.std.Serve(s.handoff) }()

	var backoff time.Duration
	for {
		rw, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			if isTemporary(err) { // e.g. out of file descriptors: wait, as net/http does
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.logf("httpd: accept error: %v; retrying in %v", err, backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := s.newConn(rw)
		if c == nil {
			rw.Close()
			continue
		}
		go c.serve()
	}
}

// isTemporary reports an accept error worth retrying, by the test net/http
// applies (EMFILE, ENFILE, ENOBUFS, ENOMEM and timeouts say they are).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in flight on both paths to finish or ctx to end; then it closes
// what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.closing.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	stdErr := make(chan error, 1)
	go func() { stdErr <- s.std.Shutdown(ctx) }()

	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.closeIdle() == 0 {
			return <-stdErr
		}
		select {
		case <-ctx.Done():
			s.Close()
			<-stdErr
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close closes the listener and every connection at once.
func (s *Server) Close() error {
	s.init()
	s.closing.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.rwc.Close()
	}
	s.mu.Unlock()
	return s.std.Close()
}

// closeIdle closes the connections waiting for a request and returns how
// many connections this package still serves.
func (s *Server) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.rwc.Close()
		}
	}
	return len(s.conns)
}

func (s *Server) newConn(rw net.Conn) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	c := &conn{srv: s, rwc: rw, remoteAddr: rw.RemoteAddr().String()}
	c.cr.c = c
	if _, ok := rw.(*net.TCPConn); ok {
		c.cr.raw, c.rawW = rawio.NewReader(rw), rawio.NewWriter(rw)
	}
	c.br = bufio.NewReaderSize(&c.cr, readBufferSize)
	c.baseCtx = context.WithValue(context.WithValue(context.Background(), http.ServerContextKey, s.std), http.LocalAddrContextKey, rw.LocalAddr())
	c.watchTimer = time.AfterFunc(time.Hour, c.watch)
	c.watchTimer.Stop()
	s.conns[c] = struct{}{}
	return c
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) maxBodyBytes() int64 {
	if s.MaxBodyBytes > 0 {
		return s.MaxBodyBytes
	}
	return defaultMaxBodyBytes
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// handoffListener is how connections reach net/http: Accept returns the
// connections this package gives up.
type handoffListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// give hands c to net/http, or closes it when net/http has stopped.
func (l *handoffListener) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

// bufferedConn is a connection given to net/http: the bytes this package
// read ahead come first.
type bufferedConn struct {
	net.Conn
	br *bufio.Reader
	cr *connReader
}

func (b *bufferedConn) Read(p []byte) (int, error) {
	if b.br.Buffered() > 0 {
		return b.br.Read(p)
	}
	return b.cr.Read(p)
}
