// Package host is mcp-gateway's host mode (the `sbx mcp` model): one
// long-running daemon serving many sandboxes or agents on one MCP endpoint.
//
// Servers are registered once on the host (a remote URL with header
// templates, a local command, or a registry entry), their credentials kept
// in the encrypted secret store and bound to the server's endpoint. Each
// sandbox gets its own bearer token, its own router and its own server
// instances (a local server runs one process per sandbox), and its mode:
// static (named servers pre-loaded) or dynamic (the agent finds and adds
// servers with the built-in tools). The token decides which sandbox's
// gateway a request reaches; nothing of one sandbox is visible to another.
//
// Administration goes through a Unix socket in the state directory, owner
// only (control.go); the CLI is its client. Every change is serialized by
// the daemon and written to the state file before it is answered, so
// registrations, attachments and secrets survive a restart.
//
// Path of a call: front (token → sandbox gateway) → gateway → router →
// upstream, as in the sandbox gateway; this package only wires sandboxes
// and keeps the registry.
//
// The packages only host mode uses sit beneath this one: registry (the
// state file), secrets (the encrypted secret store), search (ranking for
// mcp-find) and metadata (MCP registry entries).
package host
