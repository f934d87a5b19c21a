// Package codemode runs a JavaScript program that calls the gateway's
// tools: code mode, where an agent writes one program instead of making
// many tool calls, and the gateway describes a few servers' tools as
// typed functions instead of listing their definitions.
//
// A run sits behind one of the gateway's own tools (a code-mode tool,
// Tools). The program runs in github.com/dop251/goja (package engine), in a
// runner process of its own (cmd/mcp-gateway-codemode), an interpreter with
// no access to files, the network, processes or timers: the only way out
// is the functions the run gives it (servers.<server>.<tool>), each of
// which makes an inner call through the gateway's own tools/call path
// (gateway.BuiltinCall.CallInner), under the caller's policy, approval,
// audit, metrics, traces, progress and cancellation. Limits (Limits) end
// a run that takes too long, uses too much CPU or memory, calls too much,
// or reads or returns too much; the result says which.
//
// Files: runner.go (the runner processes the programs run in, package
// engine in cmd/mcp-gateway-codemode, and the pool of them),
// limits.go (package proto's limits and outcomes),
// signature.go (tool definitions as typed signatures), tools.go (the
// code-mode built-in and the tools it generates).
package codemode
