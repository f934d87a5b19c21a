// Package upstream connects the gateway to the MCP servers behind it.
//
// It is the last link on the path of a call:
//
//	agent ──▶ front ──▶ session ──▶ router ──▶ upstream ──stdio/HTTP──▶ MCP server
//
// The router has already chosen the server and restored the tool's original
// name; an upstream carries the request to that one server and brings back its
// answer. It owns everything about the connection: starting the server,
// the initialize handshake, restarting a crashed process on the next call, and
// the server's stderr. It imports nothing else of the gateway but netguard,
// which checks every address it connects to.
//
// [Stdio] is a local server run as a child process speaking line-delimited
// JSON-RPC over its stdin and stdout. One process is shared by every client of
// the gateway; requests get the pipe's own integer ids, random and unique
// among the calls pending (so concurrent callers never see each other's
// answers, and no id tells another), and every message goes to the
// server's stdin as one line. Forwarded traffic stays raw JSON-RPC bytes:
// params go out and results come back byte for byte, without the SDK's typed
// model, which both costs more per call and drops fields a gateway must keep.
//
// [HTTP] is a remote server reached over streamable HTTP or the legacy
// HTTP+SSE transport (detected when not configured), with the same method
// set — Start, Call, Notify, Generation, InitializeResult, Name, Close — so
// the router, which declares the small interface it needs, does not care
// which kind of server it talks to. Requests are written as raw JSON-RPC and
// results come back as the server's bytes; answers arrive as plain JSON or
// on event streams (a call's own, the GET stream, the legacy stream), whose
// server-to-client requests and notifications reach the same OnRequest and
// OnNotification callbacks as stdio's. Every connection goes through
// [netguard], so the address actually dialled is checked. One HTTP upstream
// is one MCP session; it is cheap (its GET stream opens only once the
// session needs one, see HTTPOptions.ListenAtStart), and the gateway may
// hold one per downstream client.
package upstream
