// Package front is the gateway's HTTP face: the MCP endpoint (/mcp, streamable
// HTTP of the 2025-11-25 specification with its sessions) behind a bearer
// token, and /health.
//
// It is the first link of the call path (front → session → router →
// upstream): it authenticates, tells protocol eras apart, keeps the HTTP
// sessions, decodes the JSON-RPC envelope and hands each message to the
// client's gateway.Session. It knows nothing about upstream servers or
// processes. It is an http.Handler: internal/httpd serves it, reading and
// answering POST /mcp itself and leaving the rest to net/http.
package front
