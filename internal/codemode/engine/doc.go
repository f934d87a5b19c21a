// Package engine runs code-mode programs in github.com/dop251/goja: the
// runner process's side of code mode (cmd/mcp-gateway-codemode). Only the
// runner imports it, so the gateway never links the JavaScript engine.
//
// Files: run.go (a run: the engine, its event loop and limits), values.go
// (inner results as JavaScript values, errors as exceptions), serve.go
// (the runner's loop: runs from the gateway, inner calls back to it).
package engine
