package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// mergeExtensions adds the extensions a server declares
// (capabilities.extensions, by identifier) to the gateway's merged
// capabilities, each one's settings as the server wrote them. Servers come
// in sorted order; for an identifier two servers declare, the first one's
// settings are kept. The gateway does not need to know an extension to pass
// it: what it does not rewrite travels unchanged.
func mergeExtensions(caps map[string]any, init json.RawMessage) {
	offered := wire.Get(wire.Get(init, "capabilities"), "extensions")
	if len(offered) == 0 || offered[0] != '{' {
		return
	}
	merged, _ := caps["extensions"].(map[string]json.RawMessage)
	wire.EachMember(offered, func(name []byte, value json.RawMessage) bool {
		if string(value) == "null" {
			return true
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
			caps["extensions"] = merged
		}
		if _, taken := merged[string(name)]; !taken {
			merged[string(name)] = append(json.RawMessage(nil), value...)
		}
		return true
	})
}

// A 2026-07-28 client's declared extensions reach a server of that era in
// each request's _meta, as the client wrote them. A remote server spoken to
// in the session era hears a client's capabilities only at initialize:
// session-era clients get a session of their own (AddPerClient), and a
// 2026-07-28 client that declares extensions gets one made for exactly the
// capabilities it declares, shared by the 2026-07-28 clients declaring the
// same (they have no session to own one). At most maxExtensionSessions per
// server, and at most maxExtensionSessionsPerClient of them made for one
// client (clientKey): past its share a client's calls take the gateway's
// own session, whose capabilities carry no client's extensions, and the
// other clients' sets still get theirs. They close with the server.

// maxExtensionSessions bounds the sessions a remote server gets for the
// capability sets of 2026-07-28 clients that declare extensions.
const maxExtensionSessions = 16

// maxExtensionSessionsPerClient bounds those one client makes: a client
// declaring a new set on every request fills only its own share.
const maxExtensionSessionsPerClient = 4

// LimitExtensionSessionsPerClient and LimitExtensionSessions name the two
// bounds as QuotaStatus counts their refusals.
const (
	LimitExtensionSessionsPerClient = "max-extension-sessions-per-client"
	LimitExtensionSessions          = "max-extension-sessions"
)

// extensionSessions are a per-client server's upstream sessions by the
// capabilities (raw, as declared) they were initialized with, and the
// client that made each.
type extensionSessions struct {
	mu     sync.Mutex
	ups    map[string]Upstream
	owners map[string]string // capabilities → the client (clientKey) that made its session
	closed bool
}

// made counts the sessions client made; es.mu is held.
func (es *extensionSessions) made(client string) int {
	n := 0
	for _, o := range es.owners {
		if o == client {
			n++
		}
	}
	return n
}

// full reports which bound a new session for client would pass ("" for
// none); es.mu is held.
func (es *extensionSessions) full(client string) string {
	switch {
	case es.made(client) >= maxExtensionSessionsPerClient:
		return LimitExtensionSessionsPerClient
	case len(es.ups) >= maxExtensionSessions:
		return LimitExtensionSessions
	}
	return ""
}

// declaresExtensions reports whether client capabilities declare any extension.
func declaresExtensions(caps json.RawMessage) bool {
	ext := wire.Get(caps, "extensions")
	if len(ext) == 0 || ext[0] != '{' {
		return false
	}
	found := false
	wire.EachMember(ext, func([]byte, json.RawMessage) bool { found = true; return false })
	return found
}

// extensionUpstream returns the upstream session of srv made for caps,
// starting it on first use for client; nil (with no error) when the server
// has its maximum of them already, or client its share.
func (g *Gateway) extensionUpstream(ctx context.Context, srv *server, caps json.RawMessage, client string) (Upstream, error) {
	es := &srv.extSessions
	key := string(caps)
	es.mu.Lock()
	if es.closed {
		es.mu.Unlock()
		return nil, fmt.Errorf("mcp server %q was removed", srv.name)
	}
	if up := es.ups[key]; up != nil {
		es.mu.Unlock()
		return up, nil
	}
	if limit := es.full(client); limit != "" {
		es.mu.Unlock()
		g.refuseExtensionSession(srv, client, limit)
		return nil, nil
	}
	es.mu.Unlock()

	hooks := g.UpstreamHooks(srv.name)
	hooks.bind(srv)
	up := srv.newPerClient(caps, hooks)
	if err := up.Start(ctx); err != nil {
		_ = up.Close()
		return nil, err
	}
	es.mu.Lock()
	prev := es.ups[key]
	limit := ""
	if prev == nil && !es.closed {
		limit = es.full(client)
	}
	if prev != nil || es.closed || limit != "" {
		es.mu.Unlock()
		_ = up.Close()
		if prev != nil {
			return prev, nil
		}
		if limit != "" {
			g.refuseExtensionSession(srv, client, limit)
		}
		return nil, nil
	}
	if es.ups == nil {
		es.ups, es.owners = map[string]Upstream{}, map[string]string{}
	}
	es.ups[key], es.owners[key] = up, client
	es.mu.Unlock()
	return up, nil
}

// refuseExtensionSession counts and logs a client's capabilities that get
// no session of their own: its calls take the gateway's own session.
func (g *Gateway) refuseExtensionSession(srv *server, client, limit string) {
	g.quota.refuse(limit)
	bound := maxExtensionSessions
	if limit == LimitExtensionSessionsPerClient {
		bound = maxExtensionSessionsPerClient
	}
	g.Router.log.Debug("a 2026-07-28 client's extensions do not reach the server: the sessions for declared capabilities are at their maximum; the call takes the gateway's own session",
		"server", srv.name, "client", client, "limit", limit, "max", bound)
}

// close closes the sessions, for the server's removal.
func (es *extensionSessions) close() []error {
	es.mu.Lock()
	ups := es.ups
	es.ups, es.owners, es.closed = nil, nil, true
	es.mu.Unlock()
	var errs []error
	for _, up := range ups {
		if err := up.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
