// Package gateway is the heart of the call path: front → session → router →
// upstream.
//
// A [Router] holds the merged view of every upstream server: the exposed names
// of tools (and, in the same shape, prompts), each mapped to its server and its
// original name. It answers list requests from that cached view, never by
// asking the upstreams again, and forwards calls as raw JSON-RPC with only the
// name rewritten, so definitions and results pass through unchanged.
//
// A [Session] is what the gateway knows about one downstream client: its
// negotiated protocol version, capabilities and identity. The front creates one
// per session-era (2025-11-25 and earlier) HTTP session and hands it every message
// of that client; it knows nothing of upstreams.
//
// Every request forwarded to a server passes one point, forwardObserved, where
// the Gateway's [Observer] (metrics, traces, the call log: internal/telemetry)
// sees it start and end.
//
// The gateway speaks its own vocabulary: a server is anything with the
// [Upstream] method set, its answers are [wire.Response] and the failures it
// acts on are wire's kinds (wire.ErrStart, wire.ErrCredentials,
// wire.ErrNotStateless); it does not import internal/upstream, which
// implements that interface.
package gateway
