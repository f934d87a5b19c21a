package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pathRecorder is a reverse proxy in front of a gateway that records the
// paths it is asked for, to tell whether a client started an OAuth flow
// (discovery, registration, authorization) against the gateway.
type pathRecorder struct {
	url   string // the proxy's /mcp
	mu    sync.Mutex
	paths []string
}

func recordPaths(t *testing.T, target string) *pathRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &pathRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.paths = append(rec.paths, r.Method+" "+r.URL.Path)
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.url = srv.URL + "/mcp"
	return rec
}

func (p *pathRecorder) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.paths...)
}

// A wrong token is not "this server needs OAuth" (issue 24, stumble 6): a
// bearer token presented but not the gateway's gets 401 with
// error="invalid_token" and a JSON-RPC error naming the problem; a missing
// one keeps the contract's bare challenge. The inspector CLI, run as in CI
// (--stored-auth-only), shows that message and asks the gateway for no
// OAuth metadata, registration or authorization.
func TestAuth24WrongTokenIsNotOAuth(t *testing.T) {
	s := startServe(t, fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()))
	post := func(auth string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post("")
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="mcp-gateway"` {
		t.Errorf("no token: %s, WWW-Authenticate %q, body %q; want 401 with the bare challenge", resp.Status, resp.Header.Get("WWW-Authenticate"), body)
	}
	resp, body = post("Bearer not-the-token")
	wantChallenge := `Bearer realm="mcp-gateway", error="invalid_token", error_description="the bearer token is not valid for this gateway"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != wantChallenge {
		t.Errorf("wrong token: %s, WWW-Authenticate %q; want 401 with %q", resp.Status, resp.Header.Get("WWW-Authenticate"), wantChallenge)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" ||
		!strings.HasPrefix(body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized: the bearer token is not valid for this gateway (this gateway does not use OAuth)`) {
		t.Errorf("wrong token: Content-Type %q, body %q; want a JSON-RPC error naming the invalid token", ct, body)
	}

	rec := recordPaths(t, s.url)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(npmBin, "mcp-inspector"), "--cli", rec.url,
		"--header", "Authorization: Bearer not-the-token", "--stored-auth-only", "--method", "tools/list")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory")
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 3 {
		t.Errorf("inspector with a wrong token: exit %d (%v), want 3 (auth required)\n%s", code, err, out)
	}
	if !strings.Contains(string(out), "the bearer token is not valid for this gateway") {
		t.Errorf("the inspector does not show the gateway's explanation:\n%s", out)
	}
	for _, p := range rec.seen() {
		if !strings.HasSuffix(p, " /mcp") {
			t.Errorf("the inspector asked the gateway for %s: an OAuth flow was started against a gateway that has none", p)
		}
	}
	if len(rec.seen()) == 0 {
		t.Errorf("the inspector sent nothing to the gateway")
	}
}
