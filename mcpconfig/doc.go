// Package mcpconfig reads the mcp object, the JSON that names the MCP servers
// a gateway runs, and the catalog of servers known by name.
//
// It is the first step of the gateway's path, before any process starts or
// any file is written, and it is public so that two programs share one set
// of rules:
//
//   - the gateway's command line, mcp-gateway --config '<json>', calls
//     [LoadCatalog] and [Parse] to validate the whole object and resolve it
//     into [Server] specs (argv, environment, working directory);
//   - a sandbox platform's API calls [Check] to answer a malformed mcp object
//     with HTTP 400 before it creates a sandbox.
//
// # The mcp object
//
// A JSON object keyed by server name; each value an object, or null meaning
// {}. An entry is recognised in this order:
//
//  1. a key github/<owner>/<repo> is a GitHub server:
//     {"runCmd": ..., "installCmd"?: ..., "envs"?: {...}};
//  2. a key in the [Catalog] is a catalog server: the value holds the
//     entry's properties, and "envs";
//  3. any other key whose value has "url" is a remote server:
//     {"url": ..., "headers"?: {...}, "transport"?: "http"|"sse", "envs"?: {...}};
//     header values may hold ${NAME} placeholders, which
//     [Server.ResolveHeaders] fills from "envs" or from any other source;
//  4. any other key whose value has "runCmd" is a local command, run with
//     /bin/sh -c from /, with its "envs".
//
// Anything else is an error that lists the catalog's names. E2B's Python
// spellings run_cmd and install_cmd are accepted for runCmd and installCmd.
// Unknown properties are warnings, not errors, so an older gateway accepts
// what a newer SDK sends.
//
// # The mcpServers format
//
// Parse also takes the configuration file of Claude Desktop, Cursor and
// others, {"mcpServers": {"name": {"command", "args", "env", "cwd"} or
// {"url" (or "serverUrl"), "headers", "type"}}}, and VS Code's
// {"servers": {...}}, and converts it into the same [Server] values: a
// command runs directly, without a shell.
//
// # Errors
//
// A problem with the mcp object is an *[Error] naming the server and the
// property; a problem with a catalog file is a *[CatalogError] naming the
// file, the entry and the property. Parse and Check report every problem
// they find, joined one per line; errors.As finds the first.
package mcpconfig
