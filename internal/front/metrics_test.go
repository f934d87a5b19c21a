package front

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// /metrics needs the bearer token /mcp needs, and is absent without metrics.
func TestMetricsRoute(t *testing.T) {
	gw := gateway.New(gateway.NewRouter(gateway.RouterOptions{}), gateway.Info{Name: "t"})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("scraped")) })
	for _, tc := range []struct {
		name    string
		metrics http.Handler
		auth    string
		want    int
	}{
		{"token", metrics, "Bearer secret", http.StatusOK},
		{"no token", metrics, "", http.StatusUnauthorized},
		{"wrong token", metrics, "Bearer nope", http.StatusUnauthorized},
		{"metrics off", nil, "Bearer secret", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Gateway: gw, Token: "secret", Metrics: tc.metrics}
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/metrics", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want == http.StatusOK && w.Body.String() != "scraped" {
				t.Errorf("body %q", w.Body)
			}
		})
	}
}
