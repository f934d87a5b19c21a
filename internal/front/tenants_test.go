package front

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// One gateway per token: a session opened with one token is not found with
// another, and an unknown token gets 401.
func TestTenantsSeparateSessions(t *testing.T) {
	a := gateway.New(gateway.NewRouter(gateway.RouterOptions{}), gateway.Info{Name: "a"})
	b := gateway.New(gateway.NewRouter(gateway.RouterOptions{}), gateway.Info{Name: "b"})
	h := &Handler{Tenants: func(token string) *gateway.Gateway {
		return map[string]*gateway.Gateway{"ta": a, "tb": b}[token]
	}}
	post := func(token, session, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	w := post("ta", "", init)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"name":"a"`) {
		t.Fatalf("initialize with token a: %d %s", w.Code, w.Body)
	}
	sid := w.Header().Get("Mcp-Session-Id")
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if w := post("ta", sid, ping); w.Code != http.StatusOK {
		t.Errorf("ping with the session's own token: %d %s", w.Code, w.Body)
	}
	if w := post("tb", sid, ping); w.Code != http.StatusNotFound {
		t.Errorf("a's session with b's token: %d %s, want 404", w.Code, w.Body)
	}
	for _, tok := range []string{"", "tc"} {
		if w := post(tok, sid, ping); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %d, want 401 with WWW-Authenticate", tok, w.Code)
		}
	}
	h.Forget(a)
	if w := post("ta", sid, ping); w.Code != http.StatusNotFound {
		t.Errorf("after Forget: %d, want 404", w.Code)
	}
}
