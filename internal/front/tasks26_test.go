package front

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// TestTaskNameHeader: a 2026-07-28 tasks/get, tasks/update or tasks/cancel
// whose Mcp-Name is not its params.taskId is refused with -32020 before the
// gateway sees it; a missing Mcp-Name is tolerated (the gateway answers:
// here, an unknown task).
func TestTaskNameHeader(t *testing.T) {
	h := &Handler{Gateway: gateway.New(gateway.NewRouter(gateway.RouterOptions{}), gateway.Info{Name: "t", Version: "1"})}
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		for _, tc := range []struct {
			name, header string
			status       int
			want         string
		}{
			{"matching", "t-1", 200, `"code":-32602,"message":"Task not found: t-1"`},
			{"missing", "", 200, `"code":-32602,"message":"Task not found: t-1"`},
			{"another id", "t-2", 400, `"code":-32020`},
		} {
			body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"taskId":"t-1","inputResponses":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", method)
			if tc.header != "" {
				req.Header.Set("Mcp-Name", tc.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%s, Mcp-Name %s: %d %s; want %d with %s", method, tc.name, w.Code, w.Body, tc.status, tc.want)
			}
		}
	}
}
