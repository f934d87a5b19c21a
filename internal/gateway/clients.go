package gateway

import (
	"fmt"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

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
