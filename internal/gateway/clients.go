package gateway

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Where messages leave the gateway for its clients: the Stream of the
// request they belong to, else the client's queue (Session.send, which the
// front reads through Outbox), or every client's (clients).

// clients is the set of the gateway's clients with a queue: session-era
// sessions and 2026-07-28 listen streams. It is the sink of what reaches
// every client unasked (the router's list changes, a server's log message
// that belongs to no call) and holds no pointer back to the gateway or the
// router.
type clients struct {
	mu  sync.Mutex
	set map[*Session]struct{}
}

func (c *clients) add(s *Session) {
	c.mu.Lock()
	if c.set == nil {
		c.set = map[*Session]struct{}{}
	}
	c.set[s] = struct{}{}
	c.mu.Unlock()
}

func (c *clients) remove(s *Session) {
	c.mu.Lock()
	delete(c.set, s)
	c.mu.Unlock()
}

// list is a snapshot of the clients.
func (c *clients) list() []*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Session, 0, len(c.set))
	for s := range c.set {
		out = append(out, s)
	}
	return out
}

// listChanged tells every client that a merged list changed.
func (c *clients) listChanged(k *listKind) {
	msg := wire.AppendNotification(nil, k.changed, nil)
	for _, s := range c.list() {
		s.send(msg)
	}
}

// serverRemoved closes every client's own upstream session of a removed
// server.
func (c *clients) serverRemoved(srv *server) []error {
	var errs []error
	for _, s := range c.list() {
		s.mu.Lock()
		up := s.ups[srv]
		delete(s.ups, srv)
		s.mu.Unlock()
		if up != nil {
			if err := up.Close(); err != nil {
				errs = append(errs, fmt.Errorf("mcp server %q (a client's session): %w", srv.name, err))
			}
		}
	}
	return errs
}

// outboxSize bounds the server-initiated messages waiting for a client's
// stream; beyond it a message is dropped.
const outboxSize = 256

// Stream carries the messages that belong to one client request and come
// before its response: progress, log messages, requests to the client. The
// front writes them on that request's own HTTP response.
type Stream interface {
	Send(msg []byte) error
}

// noStream is the stream of a call no client request carries (the
// gateway's own): its messages go to the session's GET stream instead.
type noStream struct{}

func (noStream) Send([]byte) error { return errNoStream }

var errNoStream = errors.New("no request stream")

// switchStream is the stream of a call that outlives its first request (a
// 2026-07-28 call waiting for input): each retry takes it over.
type switchStream struct {
	mu  sync.Mutex
	cur Stream
}

func (w *switchStream) Send(msg []byte) error {
	w.mu.Lock()
	cur := w.cur
	w.mu.Unlock()
	return cur.Send(msg)
}

func (w *switchStream) set(s Stream) {
	w.mu.Lock()
	w.cur = s
	w.mu.Unlock()
}

// deliver hands a message for a client to the stream of its request when
// that is still open (nil: none), else to the client's queue.
func deliver(stream Stream, s *Session, msg []byte) {
	if stream == nil || stream.Send(msg) != nil {
		s.send(msg)
	}
}
