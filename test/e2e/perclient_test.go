package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// "share": "per-client": each client session gets its own process of the
// server, so two clients of a memory server keep two graphs, and a server's
// request to its client (elicitation) reaches the caller even while another
// client's call is in flight on the same server, where a shared process
// refuses it (TestPassthroughElicitation).
func TestPerClientProcesses(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"memory": {"share": "per-client", "envs": {"MEMORY_FILE_PATH": "${MCP_GATEWAY_CLIENT_DIR}/graph.jsonl"}},
		"everything": {"runCmd": %q, "share": "per-client"}}`, filepath.Join(npmBin, "mcp-server-everything")))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitForTools(ctx, t, g, "create_entities", "trigger-elicitation-request")

	a, recA := recordingClient(ctx, t, g, sessionEra, "A")
	b, recB := recordingClient(ctx, t, g, sessionEra, "B")
	if got, isErr := callText(ctx, t, a, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"A's"}}}}); isErr {
		t.Fatalf("A's create_entities: %s", got)
	}
	if got, isErr := callText(ctx, t, b, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Grace", "entityType": "person", "observations": []string{"B's"}}}}); isErr {
		t.Fatalf("B's create_entities: %s", got)
	}
	if got, _ := callText(ctx, t, a, "read_graph", nil); !strings.Contains(got, "Ada") || strings.Contains(got, "Grace") {
		t.Errorf("A's graph: %s, want Ada alone", got)
	}
	if got, _ := callText(ctx, t, b, "read_graph", nil); !strings.Contains(got, "Grace") || strings.Contains(got, "Ada") {
		t.Errorf("B's graph: %s, want Grace alone", got)
	}

	// B's long operation runs on its own everything process while A's asks A.
	token := "b-busy-per-client"
	ctxB, cancelB := context.WithCancel(ctx)
	defer cancelB()
	callB := callAsync(ctxB, b, longRun(20, 20, token))
	waitFor(ctx, t, "B's first progress notification", func() bool { return len(recB.progressFor(token)) > 0 })
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
	checkElicitedAnswer(t, "A", recA, callResult{res, err})
	if n := len(recB.snapshotElicits()); n != 0 {
		t.Errorf("B was asked %d times, want never", n)
	}
	cancelB()
	awaitCall(ctx, t, "B's call", callB)
}

// On a host, --per-client gives each client session of a sandbox its own
// process, ${client_dir} its own directory.
func TestHostPerClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := startHost(t, filepath.Join(t.TempDir(), "state"))
	h.mustCLI("", "server", "add", "memory", "--per-client", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${client_dir}/graph.jsonl")
	h.failCLI("--per-client is for a local server", "", "server", "add", "remote", "--per-client", "--url", "http://127.0.0.1:1/mcp")
	sb := h.createSandbox("s", "--static", "memory")
	a, b := sb.connectEra(ctx, sessionEra), sb.connectEra(ctx, sessionEra)
	if got, isErr := callText(ctx, t, a, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []string{"A's"}}}}); isErr {
		t.Fatalf("A's create_entities: %s", got)
	}
	if got, _ := callText(ctx, t, b, "read_graph", nil); strings.Contains(got, "Ada") {
		t.Errorf("B sees A's entity: %s", got)
	}
	if got, _ := callText(ctx, t, a, "read_graph", nil); !strings.Contains(got, "Ada") {
		t.Errorf("A lost its entity: %s", got)
	}
}
