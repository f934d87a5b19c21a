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
// protocol version, capabilities and identity. The front creates one per
// session-era (2025-11-25 and earlier) HTTP session and hands it every message
// of that client; a 2026-07-28 request gets one of its own
// ([Gateway.HandleStateless]). It reaches servers only through the router,
// and the upstream sessions of its own that per-client servers give it
// (perclient.go).
//
// Data flows one way. The router holds no pointer to the gateway: what it
// changes on its own (a merged list, a removed server) goes to the clients'
// set, a sink of two methods. What a server sends unprompted enters through
// the [Hooks] its upstream was built with, which hold that server (bound when
// it is added), and leaves for the clients through the sinks in clients.go:
// the [Stream] of the request it belongs to, else the client's queue.
//
// One concern per file. A tools/call enters each of these once, in this order
// (TestCallPathFiles prints the sequence):
//
//   - stateless.go: the 2026-07-28 era's entry (HandleStateless, discover,
//     the caching hints), for that era's requests only;
//   - session.go: what a client's session is, and the dispatch of its
//     requests to the item and server they name;
//   - apps.go, for a call an MCP App makes (_meta of the gateway's naming
//     the app): the app's own server and tool (see docs/apps.md);
//   - guard.go: the Guard (policy, audit) admits or refuses the call;
//   - input.go: how an admitted call runs, at once or, for a 2026-07-28
//     client a server may ask for input, in the background (multi round-trip
//     requests);
//   - observe.go: the one point where the [Observer] (metrics, traces, the
//     call log: internal/telemetry) sees every forwarded call start and end;
//   - calls.go: forwarding itself: the call's timeout, progress token,
//     tracking, the upstream it goes to;
//   - bridge.go: the upstream's Call, bridging the eras when the client's
//     and the upstream's differ (_meta; a 2026-07-28 server's input
//     requests asked of a session-era client).
//
// Beside the path: notify.go (what
// servers send unprompted, re-listing), requests.go (a server's requests
// to a client), logging.go, subscribe.go, perclient.go (a client's own
// upstream sessions), listen.go (subscriptions/listen), builtin.go (the
// gateway's own tools), router.go, view.go and naming.go (the merged lists),
// apps.go (ui:// URIs of MCP Apps, renamed where two servers collide),
// clients.go (the clients' set and streams), gateway.go (the Gateway),
// tasks.go and tasks2026.go (tasks of the 2025-11-25 and 2026-07-28 eras,
// bridged between them).
//
// The gateway speaks its own vocabulary: a server is anything with the
// [Upstream] method set, its answers are [wire.Response] and the failures it
// acts on are wire's kinds (wire.ErrStart, wire.ErrCredentials); it does not import internal/upstream, which
// implements that interface.
package gateway
