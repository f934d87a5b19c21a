package oauth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

// browser plays the person: it opens the authorization URL, which the test
// authorization server answers with a redirect to the callback at once,
// and follows that redirect to the loopback; edit may alter the callback
// URL first. It returns the callback URL it used.
func browser(t *testing.T, edit func(url.Values)) (func(string), *string) {
	var used string
	return func(authURL string) {
		go func() {
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Get(authURL)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			resp.Body.Close()
			loc, err := url.Parse(resp.Header.Get("Location"))
			if err != nil || loc.Host == "" {
				t.Errorf("browser: the authorization endpoint answered %d without a redirect", resp.StatusCode)
				return
			}
			if edit != nil {
				q := loc.Query()
				edit(q)
				loc.RawQuery = q.Encode()
			}
			used = loc.String()
			resp, err = http.Get(used)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}, &used
}

// runFlowTimeout bounds runFlow's authorization: the person's consent is
// waited for until then.
var runFlowTimeout = 20 * time.Second

func runFlow(t *testing.T, rsURL string, cfg FlowConfig, edit func(url.Values)) (*Record, *Loopback, *string, error) {
	t.Helper()
	lb, err := NewLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lb.Close() })
	show, used := browser(t, edit)
	cfg.Server, cfg.URL, cfg.RedirectURL, cfg.Fetch = "remote", rsURL, lb.RedirectURL(), lb.Fetcher(show)
	ctx, cancel := context.WithTimeout(context.Background(), runFlowTimeout)
	defer cancel()
	rec, err := Authorize(ctx, cfg)
	return rec, lb, used, err
}

func TestAuthorizationCodeFlow(t *testing.T) {
	as := newTestAS(t)
	as.scopes = []string{"read", "offline_access"}
	rs := newTestRS(t, as)
	rec, _, used, err := runFlow(t, rs.url, FlowConfig{}, nil)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	if rec.Issuer != as.issuer || rec.Resource != rs.url || rec.ClientID != "dcr-client" || rec.Token.RefreshToken == "" {
		t.Fatalf("record issuer %q resource %q client %q refresh %v", rec.Issuer, rec.Resource, rec.ClientID, rec.Token.RefreshToken != "")
	}
	reqs := as.tokenRequests()
	if f := reqs[0]; f.Get("grant_type") != "authorization_code" || f.Get("code_verifier") == "" || f.Get("resource") != rs.url {
		t.Errorf("code exchange %v: want PKCE verifier and resource", f)
	}

	// The callback is taken once: the same code again is refused.
	resp, err := http.Get(*used)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a replayed callback answered %d, want 400", resp.StatusCode)
	}

	// Stored: the token reaches the server; a refused token is refreshed.
	store := &MemoryStore{}
	store.Save("remote", rs.url, rec)
	st := NewStored("remote", rs.url, store, nil)
	var log bytes.Buffer
	if got, err := callWhoami(t, rs.url, st, &log); err != nil || !strings.Contains(got, "authorized") {
		t.Fatalf("call with the stored token: %q, %v", got, err)
	}
	as.revokeAll()
	h := upstream.NewHTTP(upstream.HTTPOptions{Name: "remote", URL: rs.url, Auth: st, NoListen: true})
	defer h.Close()
	if _, err := h.Call(context.Background(), "tools/list", nil); err != nil {
		t.Fatalf("after the access token was revoked: %v", err)
	}
	if f := as.tokenRequests(); f[len(f)-1].Get("grant_type") != "refresh_token" {
		t.Errorf("last token request %v, want a refresh", f[len(f)-1])
	}
	saved, _ := store.Load("remote", rs.url)
	if saved.Token.AccessToken == rec.Token.AccessToken {
		t.Error("the refreshed token was not saved")
	}

	// A refused refresh (revoked grant): not authorized, nothing kept.
	as.failRefresh = true
	as.revokeAll()
	var notified error
	done := make(chan struct{})
	var once sync.Once
	st.OnUnauthorized = func(_ string, err error) { once.Do(func() { notified = err; close(done) }) }
	h2 := upstream.NewHTTP(upstream.HTTPOptions{Name: "remote", URL: rs.url, Auth: st, NoListen: true})
	defer h2.Close()
	_, err = h2.Call(context.Background(), "tools/list", nil)
	if !errors.Is(err, ErrNotAuthorized) || !errors.Is(err, upstream.ErrAuthorization) || !strings.Contains(err.Error(), "mcp-gateway auth remote") {
		t.Fatalf("err %v, want not authorized with the way to authorize", err)
	}
	<-done
	if notified == nil {
		t.Error("OnUnauthorized was not called")
	}
	if r, _ := store.Load("remote", rs.url); r != nil {
		t.Error("the refused grant is still stored")
	}
}

func TestAuthorizationCodePreregistered(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as)
	rec, _, _, err := runFlow(t, rs.url, FlowConfig{ClientID: "pre-client", ClientSecret: "pre-secret"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ClientID != "pre-client" {
		t.Errorf("client %q, want the pre-registered one", rec.ClientID)
	}
}

func TestAuthorizationBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(as *testAS) func(*oauthex.ProtectedResourceMetadata)
		edit   func(url.Values)
		step   string
		detail string
		// waits: the flow fails only when the wait for the person ends
		// (a callback with a wrong state is refused and waited past)
		waits bool
	}{
		{name: "garbage metadata", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) { as.garbageMetadata = true; return nil },
			step: "authorization server metadata"},
		{name: "metadata of another issuer", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) {
			as.metadataIssuer = "https://attacker.example.com"
			return nil
		}, step: "authorization server metadata", detail: "attacker.example.com"},
		{name: "non-HTTPS authorization server", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) {
			return func(m *oauthex.ProtectedResourceMetadata) { m.AuthorizationServers = []string{"http://as.example.com"} }
		}, step: "discovery", detail: "http://as.example.com"},
		{name: "metadata for another resource", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) {
			return func(m *oauthex.ProtectedResourceMetadata) { m.Resource = "https://other.example.com/mcp" }
		}, step: "discovery", detail: "other.example.com"},
		{name: "callback from another issuer", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) {
			as.issInRedirect = "https://evil.example.com"
			return nil
		}, step: "issuer check", detail: "evil.example.com"},
		{name: "wrong state", setup: func(*testAS) func(*oauthex.ProtectedResourceMetadata) { return nil },
			edit: func(q url.Values) { q.Set("state", "forged") }, step: "callback (state check)", detail: "did not send", waits: true},
		{name: "refused consent", setup: func(*testAS) func(*oauthex.ProtectedResourceMetadata) { return nil },
			edit: func(q url.Values) { q.Del("code"); q.Set("error", "access_denied") }, step: "authorization (the person's consent)", detail: "access_denied"},
		{name: "used code", setup: func(as *testAS) func(*oauthex.ProtectedResourceMetadata) { return nil },
			edit: func(q url.Values) { q.Set("code", "code-used") }, step: "token request (authorization code)", detail: "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.waits {
				defer func(d time.Duration) { runFlowTimeout = d }(runFlowTimeout)
				runFlowTimeout = 2 * time.Second
			}
			as := newTestAS(t)
			edit := tc.setup(as)
			as.codes["code-used"] = codeGrant{used: true}
			rs := newTestRSPRM(t, as, edit)
			store := &MemoryStore{}
			rec, _, _, err := runFlow(t, rs.url, FlowConfig{}, tc.edit)
			var se *StepError
			if !errors.As(err, &se) || se.Server != "remote" || se.Step != tc.step {
				t.Fatalf("err %v (%#v), want a step error of server remote at %q", err, se, tc.step)
			}
			if !strings.Contains(err.Error(), `mcp server "remote"`) || !strings.Contains(err.Error(), tc.detail) {
				t.Errorf("error %q should name the server and %q", err, tc.detail)
			}
			if rec != nil {
				t.Error("a record came back from a failed authorization")
			}
			if r, _ := store.Load("remote", rs.url); r != nil {
				t.Error("something was stored")
			}
		})
	}
}

// Metadata of an HTTPS server that redirects to a plain-HTTP URL is refused
// (a downgrade), naming the server and the step.
func TestDiscoveryRefusesDowngradeRedirect(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the plain-HTTP target of the redirect was fetched")
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
	}))
	defer tls.Close()
	header := []string{`Bearer resource_metadata="` + tls.URL + `/.well-known/oauth-protected-resource/mcp"`}
	_, err := Discover(context.Background(), "remote", tls.URL+"/mcp", header, tls.Client())
	var se *StepError
	if !errors.As(err, &se) || se.Step != "discovery" || !strings.Contains(err.Error(), `mcp server "remote"`) || !strings.Contains(err.Error(), "non-HTTPS") {
		t.Fatalf("err %v, want a discovery error of server remote about the non-HTTPS redirect", err)
	}
}

// A step-up by a person: a 403 insufficient_scope is remembered with the
// grant, and the next authorization asks for the scopes granted with the
// new ones (SEP-2350), not only those the server's 401 names.
func TestStepUpAuthorization(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as, "read")
	rec, _, _, err := runFlow(t, rs.url, FlowConfig{}, nil)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	store := &MemoryStore{}
	if err := store.Save("remote", rs.url, rec); err != nil {
		t.Fatal(err)
	}
	st := NewStored("remote", rs.url, store, nil)
	req := httptest.NewRequest(http.MethodPost, rs.url, nil)
	req.Header.Set("Authorization", "Bearer x")
	resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
		"Www-Authenticate": {`Bearer error="insufficient_scope", scope="write"`}}}
	err = st.Authorize(context.Background(), req, resp)
	if !errors.Is(err, ErrNotAuthorized) || !strings.Contains(err.Error(), "more scope (write)") {
		t.Fatalf("the 403's error: %v", err)
	}
	saved, _ := store.Load("remote", rs.url)
	if got := saved.StepUp(); strings.Join(got, " ") != "read write" {
		t.Fatalf("the grant's step-up scopes %q; want read write", got)
	}
	rec2, _, _, err := runFlow(t, rs.url, FlowConfig{StepUp: saved.StepUp()}, nil)
	if err != nil {
		t.Fatalf("authorize again: %v", err)
	}
	got := slices.Sorted(slices.Values(rec2.Scopes)) // a set (RFC 6749 3.3): the server orders it as it likes
	if strings.Join(got, " ") != "read write" {
		t.Errorf("the new grant's scopes %q; want read write (the union)", rec2.Scopes)
	}
}

// A person's step-up within the call (Stored.StepUp): a tools/call refused
// with 403 insufficient_scope asks StepUp for the new scope and, when it
// completes, is retried (Authorize returns nil); when it fails, the call
// fails saying why and how to authorize; a refused request other than a
// tools/call (a session's start, a listing) does not wait for a person.
func TestStoredStepUpWithinCall(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		stepUp       error
		wantAsked    bool
		wantErr      string // "" for a retry
	}{
		{"approved", "tools/call", nil, true, ""},
		{"nobody approved", "tools/call", errors.New("nobody authorized it within 3m0s"), true, "did not complete (nobody authorized it within 3m0s)"},
		{"a listing", "tools/list", nil, false, "more scope (write)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &MemoryStore{}
			rec := &Record{URL: "https://mcp.example.com/mcp", Scopes: []string{"read"}, Token: &oauth2.Token{AccessToken: "x"}}
			if err := store.Save("remote", rec.URL, rec); err != nil {
				t.Fatal(err)
			}
			st := NewStored("remote", rec.URL, store, nil)
			var asked []string
			st.StepUp = func(_ context.Context, server string, scopes []string) error {
				asked = scopes
				return tc.stepUp
			}
			req := httptest.NewRequest(http.MethodPost, rec.URL, nil)
			req.Header.Set("Authorization", "Bearer x")
			req.Header.Set("Mcp-Method", tc.method)
			resp := &http.Response{StatusCode: http.StatusForbidden, Body: http.NoBody, Header: http.Header{
				"Www-Authenticate": {`Bearer error="insufficient_scope", scope="write"`}}}
			err := st.Authorize(context.Background(), req, resp)
			if (asked != nil) != tc.wantAsked || tc.wantAsked && strings.Join(asked, " ") != "write" {
				t.Errorf("StepUp asked for %q; want asked %v (write)", asked, tc.wantAsked)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Authorize: %v; want nil (the call is retried)", err)
			case tc.wantErr != "" && (!errors.Is(err, ErrNotAuthorized) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "mcp-gateway auth remote")):
				t.Fatalf("Authorize: %v; want an error saying %q and how to authorize", err, tc.wantErr)
			}
		})
	}
}
