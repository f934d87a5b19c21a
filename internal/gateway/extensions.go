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
// server; past them a client's calls take the gateway's own session, whose
// capabilities carry no client's extensions. They close with the server.

// maxExtensionSessions bounds the sessions a remote server gets for the
// capability sets of 2026-07-28 clients that declare extensions.
const maxExtensionSessions = 16

// extensionSessions are a per-client server's upstream sessions by the
// capabilities (raw, as declared) they were initialized with.
type extensionSessions struct {
	mu     sync.Mutex
	ups    map[string]Upstream
	closed bool
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
// starting it on first use; nil (with no error) when the server has its
// maximum of them already.
func (g *Gateway) extensionUpstream(ctx context.Context, srv *server, caps json.RawMessage) (Upstream, error) {
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
	if len(es.ups) >= maxExtensionSessions {
		es.mu.Unlock()
		g.Router.log.Debug("a 2026-07-28 client's extensions do not reach the server: it has its maximum of sessions for declared capabilities; the call takes the gateway's own session", "server", srv.name, "max", maxExtensionSessions)
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
	if prev := es.ups[key]; prev != nil || es.closed || len(es.ups) >= maxExtensionSessions {
		es.mu.Unlock()
		_ = up.Close()
		if prev != nil {
			return prev, nil
		}
		return nil, nil
	}
	if es.ups == nil {
		es.ups = map[string]Upstream{}
	}
	es.ups[key] = up
	es.mu.Unlock()
	return up, nil
}

// close closes the sessions, for the server's removal.
func (es *extensionSessions) close() []error {
	es.mu.Lock()
	ups := es.ups
	es.ups, es.closed = nil, true
	es.mu.Unlock()
	var errs []error
	for _, up := range ups {
		if err := up.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
