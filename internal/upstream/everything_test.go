package upstream_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

// TestEverythingServer runs the reference MCP server (TypeScript SDK) pinned
// in test/npm, when it is installed: the fake server proves the details, this
// proves a real implementation agrees.
func TestEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	npm, err := filepath.Abs("../../test/npm/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(npm, ".bin", "node")
	server := filepath.Join(npm, ".bin", "mcp-server-everything")
	for _, f := range []string{node, server} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("reference server not installed (run npm ci in test/npm): %v", err)
		}
	}
	ctx := testContext(t)
	fx := newFake(t, "", func(o *upstream.StdioOptions) {
		o.Name = "everything"
		o.Command = []string{node, server, "stdio"}
		o.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	})
	if err := fx.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
	}
	if err := json.Unmarshal(fx.s.InitializeResult(), &init); err != nil || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize result %s: %v", fx.s.InitializeResult(), err)
	}
	resp, err := fx.s.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"Echo: hi"}]}`; string(resp.Result) != want {
		t.Errorf("echo result = %s, want %s", resp.Result, want)
	}
	resp, err = fx.s.Call(ctx, "tools/list", nil)
	if err != nil || !strings.Contains(string(resp.Result), `"name":"echo"`) {
		t.Errorf("tools/list = %s, %v", resp.Result, err)
	}
	if err := fx.s.Close(); err != nil {
		t.Fatal(err)
	}
}
