package gateway

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// logLevels in increasing severity (RFC 5424, as MCP uses them).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel records a client's log level and fans the most verbose level any
// client asked for out to the servers that log.
func (g *Gateway) setLevel(ctx context.Context, s *Session, params json.RawMessage) Reply {
	level, _ := wire.GetString(params, "level")
	i := slices.Index(logLevels, level)
	if i < 0 {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "logging/setLevel: unknown level %q; use one of %v", level, logLevels))
	}
	s.mu.Lock()
	s.logLevel = i
	own := make(map[*server]Upstream, len(s.ups))
	for srv, up := range s.ups {
		own[srv] = up
	}
	s.mu.Unlock()
	g.ensureLevel(ctx, i)
	// The client's own sessions of remote servers log to it alone: they
	// take exactly its level.
	for srv, up := range own {
		g.setUpstreamLevel(ctx, srv, up, i)
	}
	return emptyResult
}

// setUpstreamLevel asks one upstream session of srv for messages down to
// level, when it logs and takes the level that way.
func (g *Gateway) setUpstreamLevel(ctx context.Context, srv *server, up Upstream, level int) {
	// A 2026-07-28 server takes the level in each request's _meta.
	if !hasCapability(up.InitializeResult(), "logging") || isStateless(up) {
		return
	}
	p := wire.AppendString([]byte(`{"level":`), logLevels[level])
	p = append(p, '}')
	resp, err := up.Call(ctx, "logging/setLevel", p)
	if err == nil && resp.Error != nil {
		err = wire.DecodeError(resp.Error)
	}
	if err != nil {
		g.Router.log.Warn("logging/setLevel failed", "server", srv.name, "err", err)
	}
}

// ensureLevel makes the servers that log send messages down to level: the
// most verbose level any client asked for. Clients filter by their own.
func (g *Gateway) ensureLevel(ctx context.Context, level int) {
	g.mu.Lock()
	if g.serverLevel >= 0 && g.serverLevel <= level {
		g.mu.Unlock()
		return
	}
	g.serverLevel = level
	g.mu.Unlock()
	for _, srv := range g.Router.all() {
		g.setUpstreamLevel(ctx, srv, srv.up, level)
	}
}

// wants reports whether the client asked for messages of this level.
func (s *Session) wants(level int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel < 0 || level >= s.logLevel
}

// logMessage delivers a server's log message: on the stream of the one
// client call in flight on it, else to every client of the gateway (the
// server is theirs alike), each filtered by its own level.
func (g *Gateway) logMessage(srv *server, params json.RawMessage) {
	level, _ := wire.GetString(params, "level")
	li := slices.Index(logLevels, level)
	msg := wire.AppendNotification(nil, "notifications/message", params)
	if c, err := srv.callerOf(); err == nil {
		if c.sess.wants(li) {
			deliver(c.stream, c.sess, msg)
		}
		return
	}
	for _, s := range g.clients.list() {
		if s.wants(li) {
			s.send(msg)
		}
	}
}
