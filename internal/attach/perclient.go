package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// ClientDirEnv names, in a per-client process's environment, a directory of
// its own (removed when its client's session ends), so that a server keeping
// files keeps one set per client: the variable is set, and
// ${MCP_GATEWAY_CLIENT_DIR} in the server's env values and arguments is
// replaced by it.
const ClientDirEnv = "MCP_GATEWAY_CLIENT_DIR"

// newClientStdio builds one process of a per-client server ("share":
// "per-client"), offered caps (its client's capabilities), with a
// directory of its own, made when it starts.
func newClientStdio(s mcpconfig.Server, o Options, hooks gateway.Hooks, caps json.RawMessage) gateway.Upstream {
	return &clientStdio{swappable: swappable{name: s.Name}, spec: s, opts: o, hooks: hooks, caps: caps}
}

// clientStdio is a per-client process, made by its first Start; its
// directory lives as long as it. After Close, Start fails (as a remote
// server's session does) rather than make a process and a directory that
// nothing would remove.
type clientStdio struct {
	swappable
	spec  mcpconfig.Server
	opts  Options
	hooks gateway.Hooks
	caps  json.RawMessage

	dir string // under mu
}

func (u *clientStdio) Start(ctx context.Context) error {
	u.mu.Lock()
	if u.closed { // no directory or process made after Close: none would be removed
		u.mu.Unlock()
		return fmt.Errorf("mcp server %q: %w", u.spec.Name, upstream.ErrClosed)
	}
	if u.up == nil {
		dir, err := os.MkdirTemp("", "mcp-gateway-client-")
		if err != nil {
			u.mu.Unlock()
			return fmt.Errorf("mcp server %q: a directory for a client's process: %w", u.spec.Name, err)
		}
		u.dir = dir
		u.up = newStdioCaps(withClientDir(u.spec, dir), u.opts, u.hooks, u.caps)
	}
	up := u.up
	u.mu.Unlock()
	return up.Start(ctx)
}

// Stateless reports the process's era, as the router asks it of every upstream.
func (u *clientStdio) Stateless() bool {
	m, ok := u.current().(gateway.StatelessReporter)
	return ok && m.Stateless()
}

func (u *clientStdio) Close() error {
	u.mu.Lock()
	u.closed = true
	up, dir := u.up, u.dir
	u.mu.Unlock()
	var err error
	if up != nil {
		err = up.Close()
	}
	if dir != "" {
		err = errors.Join(err, os.RemoveAll(dir))
	}
	return err
}

// withClientDir is s for one client's process: ClientDirEnv set to dir,
// and ${MCP_GATEWAY_CLIENT_DIR} replaced by it in env values and arguments.
func withClientDir(s mcpconfig.Server, dir string) mcpconfig.Server {
	placeholder := "${" + ClientDirEnv + "}"
	env := make(map[string]string, len(s.Env)+1)
	for k, v := range s.Env {
		env[k] = strings.ReplaceAll(v, placeholder, dir)
	}
	env[ClientDirEnv] = dir
	s.Env = env
	cmd := make([]string, len(s.Command))
	for i, a := range s.Command {
		cmd[i] = a
		if !(len(s.Command) == 3 && i == 2 && s.Command[0] == "/bin/sh" && s.Command[1] == "-c") {
			cmd[i] = strings.ReplaceAll(a, placeholder, dir) // a shell expands it itself
		}
	}
	s.Command = cmd
	return s
}

// IsProcess marks a per-client upstream that is a process of its own, which
// the gateway counts against its per-client process limits (a remote
// server's per-client session is not one).
func (u *clientStdio) IsProcess() bool { return true }
