// Package rpc is the one JSON-RPC correlation engine of the gateway's
// upstreams: whatever carries the messages to a server (stdio lines,
// streamable HTTP, the legacy HTTP+SSE transport), a [Conn] matches the
// requests the gateway sends with their responses, serves the server's own
// requests and notifications, and carries cancellation both ways.
//
// A Conn owns:
//
//   - request ids: random in [1, 2^53), unique among the calls pending, so
//     that no id tells another and a JavaScript server reads them exactly;
//   - the pending calls: [Conn.Begin] registers one, the transport sends it,
//     and [Call.Wait] takes its outcome, or tells the server the caller gave
//     up (notifications/cancelled) when its context ends first;
//   - what the server sends: [Conn.Dispatch] delivers a response to its call,
//     runs a server-to-client request's handler on its own goroutine and
//     sends its answer, ends a handler the server cancelled, and hands other
//     notifications to the [Handler];
//   - the end: [Conn.Refuse] takes no new calls, [Conn.FailPending] fails
//     the calls still waiting with the transport's reason, [Conn.Go] and
//     [Conn.Wait] own every background goroutine.
//
// The transport supplies the framing: a [Sender] that writes one whole
// message (a notification or an answer to the server), and [Reader]s that
// read one message at a time from a stream ([Conn.Serve] reads one to its
// end, or until a call's response). Writing a request, the size limit of a
// message and what a broken stream means stay with the transport, which
// knows its wire.
package rpc
