// Package secrets keeps the secrets of host mode's MCP servers (API keys,
// tokens) encrypted at rest in the host state directory.
//
// It sits between the CLI that sets a secret and the daemon that starts a
// server with it:
//
//	mcp-gateway secret set mcp:github:token ──▶ Store.Set ──▶ dir/secrets.json
//	daemon starts server "github"           ──▶ Store.Get ──▶ env of the process
//
// The directory holds two files, both mode 0600 and written atomically:
//
//   - secret.key: 32 random bytes, created on the first [Open]. [Open]
//     refuses a key file that group or others can read.
//   - secrets.json: one entry per secret, its value sealed with AES-256-GCM
//     under that key. Neither the value nor the binding is stored in clear.
//
// A secret is named mcp:<server>:<key> ([ParseName]) and is bound to the
// identity of its server when it is set: the server's URL for a remote server,
// its command line for a local one. The binding is authenticated data of the
// cipher and its SHA-256 is kept beside the entry, so when a server is
// registered again with another URL or command, [Store.Get] answers
// [ErrBindingChanged] instead of sending the secret to a new endpoint: the
// user has to set it again.
//
// The daemon is the only writer; a [Store] is safe for concurrent use by its
// goroutines.
package secrets
