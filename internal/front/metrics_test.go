package front

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
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

// A stream closed as too slow counts in
// mcp_gateway_slow_client_disconnects_total.
func TestSlowClientCounted(t *testing.T) {
	h, _ := testHandler(50 * time.Millisecond)
	m := telemetry.NewMetrics()
	h.Telemetry = &telemetry.Telemetry{Metrics: m}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &stream{h: h, w: newStuckWriter(true), ctx: context.Background(), cancel: cancel, reqID: json.RawMessage(`7`)}
	within(t, "Send to a client that does not read", func() {
		for i := range 2 * streamBuffer {
			_ = st.Send(progress(i))
		}
	})
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the stream was not closed")
	}
	within(t, "the answer", func() { st.reply(json.RawMessage(`7`), gateway.Reply{Result: json.RawMessage(`{}`)}) })
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(w.Body.String(), "mcp_gateway_slow_client_disconnects_total 1\n") {
		t.Errorf("the scrape does not count one slow client:\n%s", w.Body)
	}
}
