package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// StatelessVersion is the stateless protocol version (no initialize, no
// session; version, identity and capabilities in every request's _meta).
const StatelessVersion = wire.StatelessVersion

// SupportedVersions lists every version the gateway serves, newest first.
var SupportedVersions = append([]string{StatelessVersion}, SessionVersions...)

// _meta keys of the 2026-07-28 era.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Caching hints the gateway puts on its merged lists and discover result.
// The lists depend on the token (in host mode, each sandbox has its own
// view), hence private; clients learn of changes sooner through
// subscriptions/listen.
const (
	listTTLMillis = 30000
	cacheScope    = "private"
)

// statelessSession is a session for one 2026-07-28 request, made of what the
// request's _meta says about its client.
func (g *Gateway) statelessSession(params json.RawMessage) *Session {
	meta := wire.Get(params, "_meta")
	// No outbox: a 2026-07-28 request has no stream but its own (Listen
	// gives its session one).
	s := &Session{
		gw: g, protocolVersion: StatelessVersion, stateless: true,
		clientInfo: wire.Get(meta, MetaClientInfo), capabilities: wire.Get(meta, MetaClientCapabilities),
		done:  make(chan struct{}),
		calls: map[string]*call{}, logLevel: -1, // outgoing and subs are made when first needed
	}
	if level, ok := wire.GetString(meta, MetaLogLevel); ok {
		s.logLevel = slices.Index(logLevels, level)
		if s.logLevel >= 0 {
			g.ensureLevel(context.Background(), s.logLevel)
		}
	}
	return s
}

// HandleStateless answers one request of the 2026-07-28 era. ctx ends when
// the client closes the request's stream, which cancels the request.
func (g *Gateway) HandleStateless(ctx context.Context, m *wire.Message, stream Stream) Reply {
	return g.asGateway(g.handleStateless(ctx, m, stream))
}

func (g *Gateway) handleStateless(ctx context.Context, m *wire.Message, stream Stream) Reply {
	// The session is this request's alone; it is not closed here, since a
	// call waiting for the client's input outlives the request.
	s := g.statelessSession(m.Params)
	switch m.Method {
	case "server/discover":
		return g.discover()
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return withCaching(s.Handle(ctx, m, stream), listTTLMillis)
	case "resources/read":
		// A read waiting for approval (see guardedStateless) resumes the same way.
		if state, ok := wire.GetString(m.Params, "requestState"); ok && strings.HasPrefix(state, statePrefix) {
			return withCaching(g.resume(ctx, m, stream, strings.TrimPrefix(state, statePrefix)), 0)
		}
		return withCaching(s.Handle(ctx, m, stream), 0)
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list":
		return s.handleTask26(ctx, m, stream)
	case "ping", "resources/subscribe", "resources/unsubscribe", "logging/setLevel", "initialize":
		return errorReply(wire.Errorf(wire.CodeMethodNotFound, "Method not found: %s is not part of %s", m.Method, StatelessVersion))
	case "tools/call", "prompts/get", "completion/complete":
		// A requestState of the gateway's own resumes a call waiting here;
		// any other belongs to a 2026-07-28 server and travels to it.
		if state, ok := wire.GetString(m.Params, "requestState"); ok && strings.HasPrefix(state, statePrefix) {
			return complete(g.resume(ctx, m, stream, strings.TrimPrefix(state, statePrefix)))
		}
		return complete(s.Handle(ctx, m, stream))
	}
	return complete(s.Handle(ctx, m, stream))
}

// discover answers server/discover.
func (g *Gateway) discover() Reply {
	caps := g.Router.capabilities()
	// The session era's tasks are the 2026-07-28 era's extension: the
	// gateway bridges a session-era server's task-augmented tools/call.
	if tasks, _ := caps["tasks"].(map[string]any); tasks["requests"] != nil {
		exts, _ := caps["extensions"].(map[string]json.RawMessage)
		if exts == nil {
			exts = map[string]json.RawMessage{}
			caps["extensions"] = exts
		}
		if _, ok := exts[TasksExtension]; !ok {
			exts[TasksExtension] = json.RawMessage(`{}`)
		}
	}
	delete(caps, "tasks")
	res := map[string]any{
		"resultType":        "complete",
		"supportedVersions": SupportedVersions,
		"capabilities":      caps,
		"_meta":             map[string]any{MetaServerInfo: serverInfo{Name: g.Info.Name, Version: g.Info.Version}},
		"ttlMs":             listTTLMillis,
		"cacheScope":        cacheScope,
	}
	if in := g.Router.instructions(); in != "" {
		res["instructions"] = in
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errorReply(wire.Errorf(wire.CodeInternalError, "encoding the discover result: %v", err))
	}
	return Reply{Result: b}
}

// asGateway names the gateway in a result's _meta
// (io.modelcontextprotocol/serverInfo), as server/discover does: a
// 2026-07-28 client talks to the gateway, whichever server (of either era)
// answered. A server's own identity there is replaced, the rest of _meta
// kept.
func (g *Gateway) asGateway(r Reply) Reply {
	if len(r.Result) == 0 || r.Result[0] != '{' {
		return r
	}
	ours := g.identity()
	meta := wire.Get(r.Result, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		meta = json.RawMessage(`{}`)
	}
	if meta, err := wire.Set(meta, MetaServerInfo, ours); err == nil {
		if res, err := wire.Set(r.Result, "_meta", meta); err == nil {
			r.Result = res
		}
	}
	return r
}

// identity is the gateway's serverInfo, encoded once.
func (g *Gateway) identity() json.RawMessage {
	g.identityOnce.Do(func() { g.identityJSON = mustJSON(serverInfo{Name: g.Info.Name, Version: g.Info.Version}) })
	return g.identityJSON
}

// complete marks a result of a session-era server the way the 2026-07-28 era
// expects every result to be marked: complete, or input_required when it
// carries inputRequests. A dual-era server spoken to in the session era may
// return those: the Go SDK asks a session client a server's first round of
// input requests itself, and returns a later round as it is; the client's
// retry, with the server's own requestState, goes back to the server.
func complete(r Reply) Reply {
	if r.Result == nil || wire.Get(r.Result, "resultType") != nil {
		return r
	}
	t := json.RawMessage(`"complete"`)
	if v := wire.Get(r.Result, "inputRequests"); v != nil && string(v) != "null" {
		t = json.RawMessage(`"input_required"`)
	}
	if res, err := wire.Set(r.Result, "resultType", t); err == nil {
		r.Result = res
	}
	return r
}

// withCaching marks a list or read result complete and adds caching hints.
func withCaching(r Reply, ttl int) Reply {
	r = complete(r)
	if r.Result == nil {
		return r
	}
	res := r.Result
	if wire.Get(res, "ttlMs") == nil {
		res, _ = wire.Set(res, "ttlMs", json.RawMessage(strconv.Itoa(ttl)))
	}
	if wire.Get(res, "cacheScope") == nil {
		res, _ = wire.Set(res, "cacheScope", json.RawMessage(`"`+cacheScope+`"`))
	}
	if res != nil {
		r.Result = res
	}
	return r
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
