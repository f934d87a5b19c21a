// Package front is the gateway's face towards its clients: the MCP endpoint
// (/mcp, streamable HTTP: the 2025-11-25 specification's sessions and the
// 2026-07-28 era's sessionless requests) behind a bearer token, /health, and
// /metrics behind the same token; and one client over stdio (ServeStdio, the
// stdio command).
//
// It is the first link of the call path (front → session → router →
// upstream): it authenticates, tells protocol eras apart, keeps the HTTP
// sessions, decodes the JSON-RPC envelope and hands each message to the
// client's gateway.Session. It knows nothing about upstream servers or
// processes. It is an http.Handler, served by net/http's server (the command
// line sets its timeouts and the connection limit).
//
// Streams (stream.go): a request's answer is plain JSON unless a message for
// it comes first; then its response becomes an SSE stream whose events are
// queued (bounded) and written by a goroutine of its own with a write
// deadline, so a client that stops reading holds up only itself and loses
// only its own stream. In the session era every stream's events carry ids and
// the last ones are kept, for a client resuming it with Last-Event-ID.
//
// Sessions (session.go): the front's record of a session-era client, its
// activity (an idle session expires) and its resumable streams.
package front
