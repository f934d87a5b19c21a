package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// `mcp-gateway stdio` serves the same merged view over stdin/stdout, as an
// agent that starts MCP servers as processes uses it; in both eras.
func TestStdioFront(t *testing.T) {
	config := fmt.Sprintf(`{"memory": {"envs": {"MEMORY_FILE_PATH": %q}}, "one": {"runCmd": %q}}`, filepath.Join(t.TempDir(), "m.jsonl"), testServerCmd())
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.Command(gatewayBin, "stdio", "--config", config, "--catalog-file", filepath.Join(t.TempDir(), "none.json"))
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatalf("connecting over stdio: %v\nstderr:\n%s", err, stderr.String())
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != era {
				t.Errorf("negotiated %s, want %s", got, era)
			}
			names := toolNames(ctx, t, cs)
			for _, want := range []string{"echo", "read_graph", "create_entities"} {
				if !slices.Contains(names, want) {
					t.Errorf("tool %q missing from %v", want, names)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over stdio " + era}})
			if err != nil || text(res) != "over stdio "+era {
				t.Errorf("echo over stdio: %v %v", res, err)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"})
			if err == nil || !strings.Contains(err.Error(), "Unknown tool: nope") {
				t.Errorf("unknown tool over stdio: %v", err)
			}
			if !strings.Contains(stderr.String(), "[memory] ") {
				t.Errorf("servers' stderr is not on the gateway's stderr, prefixed:\n%s", stderr.String())
			}
		})
	}
}

// lockedBuffer is a buffer a child process writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
