package attach

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// TestNotStartedNamesTheServer: a remote server's session and a per-client
// process exist before their Start; until then a call or a notification
// fails with upstream.ErrNotRunning naming the server, and the rest answers
// empty. Closed, it does not start.
func TestNotStartedNamesTheServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		up   gateway.Upstream
	}{
		{"remote", &remoteUpstream{swappable: swappable{name: "weather"}, spec: mcpconfig.Server{Name: "weather"}}},
		{"per-client", newClientStdio(mcpconfig.Server{Name: "weather"}, Options{}, gateway.Hooks{}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, callErr := tc.up.Call(ctx, "tools/list", nil)
			notifyErr := tc.up.Notify(ctx, "notifications/initialized", nil)
			for what, err := range map[string]error{"Call": callErr, "Notify": notifyErr} {
				if !errors.Is(err, upstream.ErrNotRunning) || !strings.Contains(err.Error(), `mcp server "weather"`) {
					t.Errorf("%s before Start: %v, want ErrNotRunning naming the server", what, err)
				}
			}
			if got := tc.up.InitializeResult(); got != nil {
				t.Errorf("InitializeResult before Start: %s, want nil", got)
			}
			if got := tc.up.Generation(); got != 0 {
				t.Errorf("Generation before Start: %d, want 0", got)
			}
			if got := tc.up.Name(); got != "weather" {
				t.Errorf("Name: %q", got)
			}
			if err := tc.up.Close(); err != nil {
				t.Errorf("Close before Start: %v", err)
			}
			// Closed, it starts nothing more: a per-client process made
			// now, and its directory, would never be removed.
			if err := tc.up.Start(ctx); !errors.Is(err, upstream.ErrClosed) || !strings.Contains(err.Error(), `mcp server "weather"`) {
				t.Errorf("Start after Close: %v, want ErrClosed naming the server", err)
			}
			if pc, ok := tc.up.(*clientStdio); ok && pc.dir != "" {
				t.Errorf("Start after Close made the directory %q", pc.dir)
			}
		})
	}
}
