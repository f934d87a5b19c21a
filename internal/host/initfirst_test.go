package host

import (
	"slices"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/test/remotes"
)

// A remote server registered with InitializeFirst (--initialize-first) is
// asked initialize first, by a sandbox's instance as by the listing at
// registration, never server/discover; the choice is kept with the
// registration (inspect, a reopened host). Without it the gateway asks
// server/discover first (the default), then falls back to initialize.
func TestRemoteInitializeFirst(t *testing.T) {
	for _, c := range []struct {
		name    string
		initFst bool
		first   string
	}{
		{"default", false, "server/discover"},
		{"initialize first", true, "initialize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			h := openHost(t, dir)
			remote := remotes.StartSessionOnly(t)
			mustAdd(t, h, ServerRequest{Name: "old", URL: remote.URL, InitializeFirst: c.initFst})
			listed := remote.Methods()
			if c.initFst && slices.Contains(listed, "server/discover") {
				t.Errorf("registering asked server/discover: %v", listed)
			}
			if !c.initFst && !slices.Contains(listed, "server/discover") {
				t.Errorf("registering without InitializeFirst never asked server/discover: %v", listed)
			}
			info, err := h.InspectServer("old")
			if err != nil || info.InitializeFirst != c.initFst {
				t.Fatalf("inspect: InitializeFirst %v (%v), want %v", info != nil && info.InitializeFirst, err, c.initFst)
			}
			closeHost(t, h)

			h = openHost(t, dir) // the registration as stored
			sb := mustSandbox(t, h, "sb", "old")
			if got := connect(t, h, sb.Token).callOK("echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Fatalf("echo answered %q", got)
			}
			m := remote.Methods()
			if len(m) == 0 || m[0] != c.first {
				t.Fatalf("the sandbox's first request to the server was not %s: %v", c.first, m)
			}
			if c.initFst && slices.Contains(m, "server/discover") {
				t.Errorf("a server registered with InitializeFirst was asked server/discover: %v", m)
			}
		})
	}
}
