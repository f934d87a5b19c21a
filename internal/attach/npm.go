package attach

import (
	"path/filepath"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// preferOffline is npm's setting that uses what its cache holds without
// asking the registry whether it is still current (missing data is still
// fetched). A catalog server run with npx gets it, so one installed ahead
// of time (`mcp-gateway pull`, which fills npx's cache with the whole
// package tree) starts without the network, and without a registry round
// trip per package when there is one.
const preferOffline = "npm_config_prefer_offline"

// withPreferOffline returns env with npm_config_prefer_offline=true when s is
// a catalog server run with npx and env does not set it already (in any
// case of its name, as npm reads it): the gateway's environment or the
// server's envs may choose otherwise.
func withPreferOffline(s mcpconfig.Server, env []string) []string {
	if s.Kind != mcpconfig.KindCatalog || len(s.Command) == 0 || filepath.Base(s.Command[0]) != "npx" {
		return env
	}
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); strings.EqualFold(name, preferOffline) {
			return env
		}
	}
	return append(env[:len(env):len(env)], preferOffline+"=true")
}
