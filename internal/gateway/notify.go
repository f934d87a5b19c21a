package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Hooks are the callbacks an upstream calls with what its server sends
// unprompted: notifications, and requests to the client. Hand the two
// fields to the upstream's options.
//
// Hooks made by UpstreamHooks hold the server they belong to, not its
// name: they are made before their upstream, and the Router's AddShared
// or AddPerClient that registers the upstream binds them to its server.
// Until then, and once that server is removed, what they receive is
// dropped (a request is refused), even when a server of the same name is
// added again: the new one has hooks of its own.
type Hooks struct {
	OnNotification func(method string, params json.RawMessage)
	OnRequest      func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error)

	owner *serverHandle // nil for hooks that need no binding
}

// serverHandle is the server a set of hooks belongs to, bound once when
// the server is added.
type serverHandle struct {
	name string // for the error of a request that finds no server
	srv  atomic.Pointer[server]
}

// bind gives hooks made before their upstream the server it was added as.
func (h Hooks) bind(s *server) {
	if h.owner != nil {
		h.owner.srv.Store(s)
	}
}

// server is the bound server, or nil before binding or after its removal.
func (h *serverHandle) server() *server {
	s := h.srv.Load()
	if s == nil {
		return nil
	}
	select {
	case <-s.gone:
		return nil
	default:
		return s
	}
}

// UpstreamHooks returns the hooks for the upstream of the named server,
// bound to that server when the upstream is added (AddShared,
// AddPerClient).
func (g *Gateway) UpstreamHooks(name string) Hooks {
	owner := &serverHandle{name: name}
	return Hooks{
		owner: owner,
		OnNotification: func(method string, params json.RawMessage) {
			if srv := owner.server(); srv != nil {
				g.serverNotification(srv, method, params)
			}
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			srv := owner.server()
			if srv == nil {
				return nil, wire.Errorf(wire.CodeInternalError, "mcp server %q is not known to the gateway", owner.name)
			}
			return g.serverRequest(ctx, srv, method, params)
		},
	}
}

// serverNotification routes a notification from a server. It runs on the
// upstream's reader, so it never waits for a client: what goes to a client
// is handed to its sink (the stream of its call, else its queue).
func (g *Gateway) serverNotification(srv *server, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		tok, _ := wire.GetString(params, "progressToken")
		v, ok := g.progress.Load(tok)
		if !ok {
			return
		}
		c := v.(*call)
		params, err := wire.Set(params, "progressToken", c.progressToken)
		if err != nil {
			return
		}
		params = g.traceBack(c, params)
		_ = c.stream.Send(wire.AppendNotification(nil, method, params))
	case "notifications/message":
		g.logMessage(srv, params)
	case "notifications/tasks/status":
		g.taskStatus(srv.up, params)
	case "notifications/tools/list_changed":
		g.relist(srv, kindTools)
	case "notifications/prompts/list_changed":
		g.relist(srv, kindPrompts)
	case "notifications/resources/list_changed":
		g.relist(srv, kindResources, kindTemplates)
	case "notifications/resources/updated":
		uri, _ := wire.GetString(params, "uri")
		// A renamed ui:// URI's subscribers know it by its new name (apps.go).
		if alt := g.Router.appTable().exposedURI(srv, uri); alt != uri {
			if p, err := wire.SetString(params, "uri", alt); err == nil {
				uri, params = alt, p
			}
		}
		msg := wire.AppendNotification(nil, method, params)
		for _, s := range g.subscribers(uri) {
			s.send(msg)
		}
	default:
		g.Router.log.Debug("notification from a server dropped", "server", srv.name, "method", method)
	}
}

// relist re-lists kinds of a server in the background; one re-listing at a
// time per server. A change announced while one runs is not lost: each kind
// is marked dirty, and the running re-listing goes on until no kind is, so
// a prompts change that arrives during a tools re-listing is listed after it.
func (g *Gateway) relist(s *server, ks ...*listKind) {
	var bits uint32
	for _, k := range ks {
		bits |= 1 << k.index
	}
	s.dirty.Or(bits)
	if !s.relisting.CompareAndSwap(false, true) {
		return // the running re-listing sees the marks
	}
	go g.relistLoop(s)
}

// relistAttempts bounds the attempts at one failing re-listing, and
// relistRetryDelay is the pause before the first retry (doubling after it).
// A failed attempt keeps its kinds dirty: the change it was for is listed
// by the next attempt, not lost until the server's next change (a listing
// that times out on a busy server would otherwise leave every client with
// the old list, and without list_changed, for as long as the server says
// nothing more).
const relistAttempts = 4

var relistRetryDelay = time.Second

// relistLoop re-lists the dirty kinds of a server until none is left.
func (g *Gateway) relistLoop(s *server) {
	failures := 0
	for {
		bits := s.dirty.Swap(0)
		if bits == 0 {
			s.relisting.Store(false)
			// A mark set after the Swap whose relist saw this loop still
			// running: take the turn back, or leave it to the one that did.
			if s.dirty.Load() == 0 || !s.relisting.CompareAndSwap(false, true) {
				return
			}
			continue
		}
		var ks []*listKind
		for _, k := range kinds {
			if bits&(1<<k.index) != 0 {
				ks = append(ks, k)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), relistTimeout)
		g.observeRelist(s, ks)
		err := g.Router.list(ctx, s, ks...)
		cancel()
		if err == nil {
			failures = 0
			g.Router.rebuild(ks...)
			continue
		}
		failures++
		if failures >= relistAttempts {
			g.Router.log.Warn("re-listing failed; the server's lists stay as last listed until it announces another change", "server", s.name, "attempts", failures, "err", err)
			failures = 0
			continue
		}
		g.Router.log.Debug("re-listing failed; trying again", "server", s.name, "attempt", failures, "err", err)
		s.dirty.Or(bits) // still to be listed
		t := time.NewTimer(relistRetryDelay << (failures - 1))
		select {
		case <-t.C:
		case <-s.gone:
			t.Stop()
			s.relisting.Store(false)
			return
		case <-g.Router.closed:
			t.Stop()
			s.relisting.Store(false)
			return
		}
	}
}

// relistIfRestarted re-lists a server whose process was restarted since it
// was listed, since a new process may offer other tools.
func (g *Gateway) relistIfRestarted(s *server) {
	// No s.mu here: it is held while a listing waits on the server.
	if s.up.Generation() != s.listedGen.Load() {
		g.relist(s, kinds...)
	}
}
