package attach

import (
	"slices"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// A catalog server run with npx gets npm_config_prefer_offline=true, so a
// pulled one starts from npx's cache without the network; nothing else
// does, and a setting of the gateway's or the server's own (in any case)
// is kept.
func TestPreferOffline(t *testing.T) {
	npx := []string{"npx", "-y", "@modelcontextprotocol/server-memory"}
	base := []string{"PATH=/usr/bin", "HOME=/root"}
	tests := []struct {
		name string
		s    mcpconfig.Server
		env  []string
		want []string
	}{
		{"catalog npx", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: npx}, base, append(slices.Clone(base), "npm_config_prefer_offline=true")},
		{"catalog npx by path", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: []string{"/usr/local/bin/npx", "-y", "x"}}, base, append(slices.Clone(base), "npm_config_prefer_offline=true")},
		{"catalog uvx", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: []string{"uvx", "mcp-server-time"}}, base, base},
		{"local command", mcpconfig.Server{Kind: mcpconfig.KindLocal, Command: []string{"/bin/sh", "-c", "npx -y x"}}, base, base},
		{"mcpServers npx", mcpconfig.Server{Kind: mcpconfig.KindLocal, Command: npx}, base, base},
		{"set by the server", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: npx}, []string{"npm_config_prefer_offline=false"}, []string{"npm_config_prefer_offline=false"}},
		{"set in capitals", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: npx}, []string{"NPM_CONFIG_PREFER_OFFLINE=false"}, []string{"NPM_CONFIG_PREFER_OFFLINE=false"}},
		{"empty environment", mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: npx}, nil, []string{"npm_config_prefer_offline=true"}},
	}
	for _, tt := range tests {
		before := slices.Clone(tt.env)
		if got := withPreferOffline(tt.s, tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("%s: env %q, want %q", tt.name, got, tt.want)
		}
		if !slices.Equal(tt.env, before) {
			t.Errorf("%s: the base environment was changed: %q", tt.name, tt.env)
		}
	}
	// The base shared by every server is never written through.
	shared := make([]string, 1, 4)
	shared[0] = "PATH=/usr/bin"
	_ = withPreferOffline(mcpconfig.Server{Kind: mcpconfig.KindCatalog, Command: npx}, shared)
	if got := shared[:2][1]; got != "" {
		t.Errorf("the shared base's spare capacity was written: %q", got)
	}
}
