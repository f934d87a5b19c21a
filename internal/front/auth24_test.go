package front

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A request without a bearer token gets the contract's bare challenge; one
// with a token that is not the gateway's gets error="invalid_token" and a
// JSON-RPC error naming the real problem, on /mcp and /metrics alike.
func TestInvalidTokenIsNotAnOAuthChallenge(t *testing.T) {
	srv := httptest.NewServer(&Handler{Gateway: newGateway(), Token: "secret", Metrics: http.NotFoundHandler()})
	defer srv.Close()
	for _, tc := range []struct {
		name, path, auth string
		invalid          bool
	}{
		{"no header", "/mcp", "", false},
		{"empty bearer", "/mcp", "Bearer ", false},
		{"basic scheme", "/mcp", "Basic c2VjcmV0", false},
		{"wrong bearer", "/mcp", "Bearer nope", true},
		{"wrong bearer, lower-case scheme", "/mcp", "bearer nope", true},
		{"wrong bearer on /metrics", "/metrics", "Bearer nope", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s %q, want 401", resp.Status, body)
			}
			got := resp.Header.Get("WWW-Authenticate")
			if !tc.invalid {
				if got != `Bearer realm="mcp-gateway"` {
					t.Errorf("WWW-Authenticate %q, want the bare contract challenge", got)
				}
				return
			}
			if want := `Bearer realm="mcp-gateway", error="invalid_token", error_description="the bearer token is not valid for this gateway"`; got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &msg); err != nil {
				t.Fatalf("body %q is not JSON-RPC: %v", body, err)
			}
			if msg.JSONRPC != "2.0" || string(msg.ID) != "null" || msg.Error.Code != -32600 ||
				!strings.Contains(msg.Error.Message, "the bearer token is not valid for this gateway") ||
				!strings.Contains(msg.Error.Message, "does not use OAuth") {
				t.Errorf("body %s, want a JSON-RPC error -32600 saying the token is not valid for this gateway", body)
			}
		})
	}
}
