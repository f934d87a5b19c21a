package front

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// BenchmarkSessionPing is the plain-JSON path of a session-era request
// without interim messages (the front's share of a call): compare it side
// by side with the code before a change to the streams.
func BenchmarkSessionPing(b *testing.B) {
	gw := gateway.New(gateway.NewRouter(gateway.RouterOptions{Logger: slog.New(slog.DiscardHandler)}), gateway.Info{Name: "b", Version: "1"})
	h := &Handler{Gateway: gw}
	defer h.Close()
	init := httptest.NewRequest("POST", "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, init)
	sid := w.Header().Get("Mcp-Session-Id")
	body := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.Header.Set("Mcp-Session-Id", sid)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
