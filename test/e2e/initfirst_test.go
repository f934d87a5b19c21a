package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/test/remotes"
)

// TestHostInitializeFirst: host mode's opt-out of asking server/discover
// first. A session-era-only remote server registered with `server add
// --url URL --initialize-first` is shown so by `server inspect`, and a
// static sandbox's client reaches it with initialize as the gateway's first
// request to it, server/discover never asked; the same server registered
// without the flag is asked server/discover first (the default).
func TestHostInitializeFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := startHost(t, filepath.Join(t.TempDir(), "state"))
	for _, c := range []struct {
		name  string
		flags []string
		first string
	}{
		{"plain", nil, "server/discover"},
		{"old", []string{"--initialize-first"}, "initialize"},
	} {
		remote := remotes.StartSessionOnly(t)
		h.mustCLI("", append([]string{"server", "add", c.name, "--url", remote.URL, "--allow-private-address"}, c.flags...)...)
		registering := remote.Methods()
		out := h.mustCLI("", "server", "inspect", c.name)
		if hasFlag := strings.Contains(out, `"initializeFirst": true`); hasFlag != (c.flags != nil) {
			t.Errorf("server inspect %s (registered with %v) shows initializeFirst %v:\n%s", c.name, c.flags, hasFlag, out)
		}

		sb := h.createSandbox("sb-"+c.name, "--static", c.name)
		cs := sb.connectEra(ctx, "2025-11-25")
		if got, isErr := callText(ctx, t, cs, "echo", map[string]any{"text": "hi " + c.name}); got != "hi "+c.name || isErr {
			t.Fatalf("echo through sandbox sb-%s answered %q (error %v)", c.name, got, isErr)
		}
		m := remote.Methods()
		if len(m) == 0 || m[0] != c.first {
			t.Errorf("server %s (registered with %v): the sandbox's first request to it was not %s: %v", c.name, c.flags, c.first, m)
		}
		if c.flags != nil && slices.Contains(append(registering, m...), "server/discover") {
			t.Errorf("server %s, registered with --initialize-first, was asked server/discover: registering %v, then %v", c.name, registering, m)
		}
	}
}
