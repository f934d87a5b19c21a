// Package upstream connects the gateway to the MCP servers behind it.
//
// It is the last link on the path of a call:
//
//	agent ──▶ front ──▶ session ──▶ router ──▶ upstream ──stdio/HTTP──▶ MCP server
//
// The router has already chosen the server and restored the tool's original
// name; an upstream carries the request to that one server and brings back its
// answer as a [wire.Response]. It owns everything about the connection:
// starting the server, the handshake (initialize, or server/discover for a
// server of the 2026-07-28 era), restarting a crashed process or an expired
// session on the next call, and the server's stderr. It imports nothing else
// of the gateway but wire and netguard, which checks every address it
// connects to; the gateway, in turn, knows it only as the method set it
// declares (Start, Call, Notify, Generation, InitializeResult, Name, Close,
// Stateless).
//
// One correlation engine, [rpc.Conn] (internal/upstream/rpc), serves every
// connection: request ids (random, unique among the calls pending, so that
// no id tells another), pending calls, the server's requests and
// notifications (handed to the OnRequest and OnNotification options),
// cancellation both ways, and failing what is pending when a connection
// goes down. Each transport supplies only its framing, a writer of one
// message and readers of one message at a time, and what its failures mean:
//
//   - [Stdio] (stdio.go, process.go, lines.go) runs a local server as a
//     supervised child process speaking line-delimited JSON-RPC over its
//     stdin and stdout. One process is shared by every client of the
//     gateway; every message goes to stdin as one line, and a line that is
//     not JSON-RPC stops the process (the next call restarts it).
//   - [HTTP] (http.go, session.go) reaches a remote server over streamable
//     HTTP (streamable.go: a request's answer as a JSON body or its own event
//     stream; the GET stream between calls) or the legacy HTTP+SSE transport
//     (legacy.go), detected when not configured; request.go builds its
//     requests and reads their status, events.go the messages of any event
//     stream. One HTTP upstream is one MCP session, cheap (its GET stream
//     opens only once the session needs one, see HTTPOptions.ListenAtStart),
//     and the gateway may hold one per downstream client. stateless_http.go
//     speaks to a remote server of the 2026-07-28 era (no session, _meta and
//     headers on every request); auth.go is the narrow seam to its OAuth
//     client.
//
// Forwarded traffic stays raw JSON-RPC bytes: params go out and results come
// back byte for byte, without the SDK's typed model, which both costs more
// per call and drops fields a gateway must keep.
package upstream
