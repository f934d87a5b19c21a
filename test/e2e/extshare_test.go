package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExtensionSessionsShareEachClient: a 2026-07-28 client of a remote
// server spoken to in the session era gets a session made for its declared
// capabilities, but one client declaring ever new sets fills only its share
// (4): past it its calls take the gateway's own session, which carries no
// client's extensions, while another client's set still gets a session of
// its own, and /metrics counts the refusals.
func TestExtensionSessionsShareEachClient(t *testing.T) {
	dual := startModernRemote(t, false, true)
	g := startServe(t, fmt.Sprintf(`{"dual": {"url": %q, "discoverFirst": false}}`, dual.url))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := func(client, ext string, id int) string {
		t.Helper()
		caps := map[string]any{"extensions": map[string]any{ext: map[string]any{}}}
		status, out := postModernFromAs(ctx, t, g.gw, client, caps, "tools/call", "seen_caps", id, map[string]any{"name": "seen_caps", "arguments": map[string]any{}})
		if status != http.StatusOK || out["result"] == nil {
			t.Fatalf("%s's call declaring %s: status %d: %v\nlog:\n%s", client, ext, status, out, g.serveLog())
		}
		return resultText(t, out["result"])
	}
	for i := range 6 {
		ext := fmt.Sprintf("io.example/greedy-%d", i)
		if caps := seen("greedy", ext, i+1); !strings.Contains(caps, ext) {
			t.Errorf("greedy client's set %d: the server saw %s for the call, want its extension (in the request's _meta)", i, caps)
		}
	}
	if caps := seen("victim", "io.example/victim", 100); !strings.Contains(caps, "io.example/victim") {
		t.Errorf("another client's set: the server saw %s, want its extension", caps)
	}
	// The sessions the server was given: the gateway's own, and one for
	// each set declared within its client's share.
	var sets []string
	for ss := range dual.server.Sessions() {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
			b, _ := json.Marshal(ip.Capabilities.Extensions)
			sets = append(sets, string(b))
		}
	}
	slices.Sort(sets)
	var want []string
	for _, ext := range []string{"greedy-0", "greedy-1", "greedy-2", "greedy-3", "victim"} {
		want = append(want, `{"io.example/`+ext+`":{}}`)
	}
	var got []string
	for _, s := range sets {
		if s != "null" && s != "{}" {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the server's sessions were made for the extensions %v, want %v (the greedy client's share of 4, and the other client's set)", got, want)
	}
	metrics := scrape(t, strings.TrimSuffix(g.gw.url, "/mcp")+"/metrics", g.gw.token)
	if want := `mcp_gateway_limit_refusals_total{limit="max-extension-sessions-per-client"} 2`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
