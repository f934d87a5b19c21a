// Package upstream connects the gateway to the MCP servers behind it.
//
// It is the last link on the path of a call:
//
//	agent ──▶ front ──▶ session ──▶ router ──▶ upstream ──stdio──▶ MCP server
//
// The router has already chosen the server and restored the tool's original
// name; an upstream carries the request to that one server and brings back its
// answer. It owns everything about the connection: starting the server,
// the initialize handshake, restarting a crashed process on the next call, and
// the server's stderr. It imports nothing else of the gateway.
//
// [Stdio] is a local server run as a child process speaking line-delimited
// JSON-RPC over its stdin and stdout. One process is shared by every client of
// the gateway; requests get the pipe's own integer ids, so concurrent callers
// never see each other's answers. Forwarded traffic stays raw JSON-RPC bytes:
// params go out and results come back byte for byte, without the SDK's typed
// model, which both costs more per call and drops fields a gateway must keep.
//
// The remote transports (streamable HTTP and the legacy HTTP+SSE) will join
// this package behind the same method set — Start, Call, Notify, Generation,
// InitializeResult, Name, Close — so the router, which declares the small
// interface it needs, does not care which kind of server it talks to.
package upstream
