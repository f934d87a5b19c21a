package front

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// TestParamHeaders: a 2026-07-28 tools/call mirrors the tool's
// x-mcp-header arguments in Mcp-Param-* headers. An empty string argument
// is an empty header, present: not a missing one.
func TestParamHeaders(t *testing.T) {
	r := gateway.NewRouter(gateway.RouterOptions{})
	err := r.SetBuiltins([]gateway.Builtin{{
		Tool: json.RawMessage(`{"name":"where","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`),
		Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
			return json.RawMessage(`{"content":[{"type":"text","text":"here"}]}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Gateway: gateway.New(r, gateway.Info{Name: "t", Version: "1"})}
	call := func(region string, header []string) *httptest.ResponseRecorder {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"where","arguments":{"region":` + region + `},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "where")
		if header != nil {
			req.Header["Mcp-Param-Region"] = header
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for _, tc := range []struct {
		name, region string
		header       []string
		ok           bool
	}{
		{"mirrored", `"us-west1"`, []string{"us-west1"}, true},
		{"empty string, empty header", `""`, []string{""}, true},
		{"empty string, no header", `""`, nil, false},
		{"missing", `"us-west1"`, nil, false},
		{"other value", `"us-west1"`, []string{"eu"}, false},
		{"null argument, no header", `null`, nil, true},
	} {
		w := call(tc.region, tc.header)
		if got := strings.Contains(w.Body.String(), `"text":"here"`); got != tc.ok {
			t.Errorf("%s: %d %s", tc.name, w.Code, w.Body)
		}
	}
}
