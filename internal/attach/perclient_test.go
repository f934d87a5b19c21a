package attach

import (
	"slices"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// A per-client process gets its directory in its environment and in place
// of ${MCP_GATEWAY_CLIENT_DIR} in its env values and arguments; a shell
// command line is left for the shell to expand.
func TestWithClientDir(t *testing.T) {
	tests := []struct {
		command, want []string
	}{
		{[]string{"server", "--data", "${MCP_GATEWAY_CLIENT_DIR}/db"}, []string{"server", "--data", "/c/1/db"}},
		{[]string{"/bin/sh", "-c", "server --data ${MCP_GATEWAY_CLIENT_DIR}/db"}, []string{"/bin/sh", "-c", "server --data ${MCP_GATEWAY_CLIENT_DIR}/db"}},
	}
	for _, tt := range tests {
		s := mcpconfig.Server{Name: "m", Command: tt.command, Env: map[string]string{"FILE": "${MCP_GATEWAY_CLIENT_DIR}/graph.jsonl", "X": "y"}}
		got := withClientDir(s, "/c/1")
		if !slices.Equal(got.Command, tt.want) {
			t.Errorf("command %q became %q, want %q", tt.command, got.Command, tt.want)
		}
		if got.Env["FILE"] != "/c/1/graph.jsonl" || got.Env["X"] != "y" || got.Env[ClientDirEnv] != "/c/1" {
			t.Errorf("env %v", got.Env)
		}
		if s.Env["FILE"] != "${MCP_GATEWAY_CLIENT_DIR}/graph.jsonl" || s.Command[len(s.Command)-1] != tt.command[len(tt.command)-1] {
			t.Errorf("the server's own spec was changed: %v %v", s.Env, s.Command)
		}
	}
}
