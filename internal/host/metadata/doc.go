// Package metadata turns the description of an MCP server published in the
// MCP registry into a command that host mode can run over stdio.
//
// It sits at the start of registering a server on a host:
//
//	server.json or registry entry ──▶ Parse ──▶ Spec ──▶ registry of the host daemon
//
// [Parse] accepts a server.json (https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json),
// the registry API's wrapping of it ({"server": {...}, "_meta": {...}}), a
// list response holding exactly one server ({"servers": [...]}), and the
// older snake_case spellings of the fields (registry_type, registry_name,
// environment_variables, package_arguments, runtime_hint, is_secret, ...).
//
// From the packages it takes the first one published on npm or PyPI that
// speaks stdio, else the first OCI image that does, and builds its command
// line: npx -y <package>@<version>, uvx <package>==<version>, or docker run
// -i --rm with isolation settings ([Docker]: no network, limits, no
// capabilities, no pull by default) and -e NAME for each variable, so a
// value never sits on docker's command line. Runtime arguments that would
// loosen that isolation (--privileged, --network, volumes, ...) are refused.
// Packages of other registries (NuGet, MCPB, ...) and remote-only servers
// are refused with a message that says what the entry offers; a remote
// server is registered by its URL instead.
//
// Environment variables become configuration ([Property]) except secret
// ones: those are named in [Spec.Secrets] and their value in [Spec.Env] is a
// ${name} placeholder that the gateway fills from its secret store, so a
// secret never sits in the registered command. Registry {placeholders} in
// argument values are kept as they are.
package metadata
