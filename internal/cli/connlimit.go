package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
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
	// limitLogEvery spaces the warnings about evicted and refused
	// connections.
	limitLogEvery = time.Minute
)

// refusal is what a connection over the limit reads before it is closed.
var refusal = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Connection: close\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\n" +
	"Content-Length: 52\r\n" +
	"\r\n" +
	"the gateway has too many connections; try again soon")

// defaultSlowHead is how long a request head may take to arrive before
// its connection may be closed to make room for a new one at the limit.
const defaultSlowHead = time.Second

// connLimit keeps at most max client connections open. It is the
// listener's wrapper (Listen), the server's http.Server.ConnState hook
// (ConnState) and its http.Server.ConnContext hook (ConnContext), which
// must be installed together: the first hook tells the limit which
// connections are serving a request, the second lets the front mark a
// connection authenticated when it accepts a request's bearer token.
//
// At the limit, a new connection first evicts the oldest connection that
// has never authenticated, whatever it is doing: a peer without a token
// costs nothing to the clients that have one. Then the connection that
// has waited longest without sending a byte: one idle between keep-alive
// requests. It is closed, as net/http's own idle timeout would close it.
// Only when every open connection is authenticated and busy (a request in
// flight, or a request head arriving for under a second; an older partial
// head is evicted next, oldest first) is the new one answered 503 with
// Connection: close and closed, on its own goroutine, while Accept goes
// on. So unauthenticated, idle or silent peers cannot lock new clients
// out; only authenticated requests in flight can.
type connLimit struct {
	max      int
	log      *slog.Logger
	slowHead time.Duration // see defaultSlowHead

	mu    sync.Mutex
	conns map[*limitedConn]struct{}

	refusing atomic.Int64
	lastLog  atomic.Int64 // unix nanoseconds of the last warning
}

func newConnLimit(max int, logger *slog.Logger) *connLimit {
	return &connLimit{max: max, log: logger, slowHead: defaultSlowHead, conns: make(map[*limitedConn]struct{})}
}

// Listen wraps ln: its Accept counts the connections against the limit.
func (l *connLimit) Listen(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, l: l}
}

// ConnContext is the server's http.Server.ConnContext hook: requests on
// c carry the mark the front calls when it accepts their token.
func (l *connLimit) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return front.WithAuthMark(ctx, lc.authenticate)
	}
	return ctx
}

// ConnState is the server's http.Server.ConnState hook. It runs twice per
// request (Active, then Idle), so it takes no lock: the connection's phase
// and waiting time are atomics, read under l.mu only by admit's scan.
// http.StateClosed needs nothing: net/http closes the connection first,
// and its Close gives the place back.
func (l *connLimit) ConnState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		lc.since.Store(time.Now().UnixNano())
		lc.setPhase(phaseWaiting)
	case http.StateActive, http.StateHijacked:
		lc.setPhase(phaseBusy)
	}
}

// admit counts c in, evicting a connection (see evict) if the limit is
// reached; it returns nil when every connection is authenticated and busy.
func (l *connLimit) admit(c net.Conn) *limitedConn {
	now := time.Now().UnixNano()
	lc := &limitedConn{Conn: c, l: l, accepted: now}
	lc.since.Store(now)
	var victim *limitedConn
	var victimSince int64
	var why string
	l.mu.Lock()
	if len(l.conns) >= l.max {
		victim, victimSince, why = l.evict()
		if victim == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.conns, victim)
	}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		l.warn(fmt.Sprintf("%d connections open: closing the %s to make room (see --max-connections)", l.max, why),
			"closed", victim.RemoteAddr().String(), "for", time.Since(time.Unix(0, victimSince)).Round(time.Millisecond), "new", c.RemoteAddr().String())
		victim.Close()
	}
	return lc
}

// evict picks the connection to close for a new one and claims it, or
// returns nil when every connection is authenticated and busy; it also
// says, for the log, which it is and since when. First choice: the oldest
// that never authenticated (in any phase); second: the longest silent;
// third: the oldest whose request head has been arriving for over
// slowHead (a client sends a head in one go; one that trickles is not one
// to keep waiting for at the expense of a new client). The claim is a
// compare-and-swap of the state the scan saw: a connection that
// authenticated, or whose request began arriving (or began being served)
// since, is not closed under it; the scan is made again without it. The
// caller holds l.mu.
func (l *connLimit) evict() (*limitedConn, int64, string) {
	for range 8 { // each retry means a connection became busier or authenticated: bounded
		var anon, idle, slow *limitedConn
		var anonState, idleState, slowState int32
		var idleSince, slowSince int64
		now := time.Now().UnixNano()
		for o := range l.conns {
			st := o.state.Load()
			if st&authenticated == 0 {
				if phaseOf(st) != phaseEvicted && (anon == nil || o.accepted < anon.accepted) {
					anon, anonState = o, st
				}
				continue
			}
			since := o.since.Load()
			switch phaseOf(st) {
			case phaseWaiting:
				if idle == nil || since < idleSince {
					idle, idleState, idleSince = o, st, since
				}
			case phaseHead:
				if time.Duration(now-since) >= l.slowHead && (slow == nil || since < slowSince) {
					slow, slowState, slowSince = o, st, since
				}
			}
		}
		var victim *limitedConn
		var want int32
		var since int64
		var why string
		switch {
		case anon != nil:
			victim, want, since, why = anon, anonState, anon.accepted, "oldest connection that has not authenticated"
		case idle != nil:
			victim, want, since, why = idle, idleState, idleSince, "connection that waited longest without a request"
		case slow != nil:
			victim, want, since, why = slow, slowState, slowSince, "oldest connection whose request head is still arriving"
		default:
			return nil, 0, ""
		}
		if victim.state.CompareAndSwap(want, phaseEvicted) {
			return victim, since, why
		}
	}
	return nil, 0, ""
}

func (l *connLimit) drop(lc *limitedConn) {
	l.mu.Lock()
	delete(l.conns, lc)
	l.mu.Unlock()
}

// warn logs at most one warning per limitLogEvery.
func (l *connLimit) warn(msg string, args ...any) {
	now := time.Now().UnixNano()
	if last := l.lastLog.Load(); now-last >= int64(limitLogEvery) && l.lastLog.CompareAndSwap(last, now) {
		l.log.Warn(msg, args...)
	}
}

func (l *connLimit) refuse(c net.Conn) {
	l.warn(fmt.Sprintf("%d connections open, all serving requests: refusing new ones with 503 (see --max-connections)", l.max), "remote", c.RemoteAddr().String())
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

// limitListener is a listener under a connLimit.
type limitListener struct {
	net.Listener
	l *connLimit
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ll.l.admit(c); lc != nil {
			return lc, nil
		}
		ll.l.refuse(c)
	}
}

// limitedConn is a connection counted by a connLimit; it gives its place
// back when it is closed.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
	// state is the connection's phase (see the phase constants), with
	// the authenticated bit once the front accepted a token on it. One
	// word, so that admit's claim (a compare-and-swap to phaseEvicted)
	// fails on a connection that authenticated since the scan. Only the
	// claim moves a connection to phaseEvicted, and nothing moves it out.
	state atomic.Int32
	// since is, in unix nanoseconds, when the connection began waiting,
	// then, once it has read a byte, when its request head began arriving.
	since atomic.Int64
	// accepted is when the connection was accepted, in unix nanoseconds.
	accepted int64
}

// The phases of a limitedConn.
const (
	// phaseWaiting: accepted (http.StateNew) or between keep-alive
	// requests (http.StateIdle), no byte read since; evicted first.
	phaseWaiting = iota
	// phaseHead: a request head is arriving; evicted when it has taken
	// over slowHead.
	phaseHead
	// phaseBusy: serving a request (http.StateActive) or taken over by
	// the handler (http.StateHijacked); never evicted.
	phaseBusy
	// phaseEvicted: claimed by admit, being closed.
	phaseEvicted

	phaseMask = 0x0f
	// authenticated is the bit of a limitedConn's state set once a
	// request on it passed the front's token check; it stays set.
	authenticated = 0x10
)

// phaseOf is the phase in a limitedConn's state word.
func phaseOf(state int32) int32 { return state & phaseMask }

// phase is c's phase now.
func (c *limitedConn) phase() int32 { return phaseOf(c.state.Load()) }

// setPhase moves c to p, unless it was evicted.
func (c *limitedConn) setPhase(p int32) {
	for {
		old := c.state.Load()
		if phaseOf(old) == phaseEvicted || c.state.CompareAndSwap(old, old&authenticated|p) {
			return
		}
	}
}

// authenticate marks c authenticated, unless it was evicted (then it is
// being closed, and the request that authenticated fails with it).
func (c *limitedConn) authenticate() {
	for {
		old := c.state.Load()
		if old&authenticated != 0 || phaseOf(old) == phaseEvicted || c.state.CompareAndSwap(old, old|authenticated) {
			return
		}
	}
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if old := c.state.Load(); n > 0 && phaseOf(old) == phaseWaiting {
		// The first byte since the connection began waiting: from now
		// on since is when its request head began arriving (the slow-head
		// rule measures that, not how long it had been idle before).
		c.since.Store(time.Now().UnixNano())
		if !c.state.CompareAndSwap(old, old&authenticated|phaseHead) && c.phase() == phaseEvicted {
			// admit claimed it an instant before: it is being closed,
			// and what it read is not served.
			return 0, net.ErrClosed
		}
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.drop(c) })
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
