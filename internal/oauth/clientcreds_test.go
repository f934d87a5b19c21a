package oauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

func ecKeyPEM(t *testing.T) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// callWhoami makes a session with the server through an HTTP upstream
// using a, and calls its tool.
func callWhoami(t *testing.T, rsURL string, a upstream.Authorizer, log *bytes.Buffer) (string, error) {
	t.Helper()
	h := upstream.NewHTTP(upstream.HTTPOptions{Name: "remote", URL: rsURL, Auth: a, Transport: upstream.TransportStreamable, NoListen: true,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := h.Call(ctx, "tools/call", []byte(`{"name":"whoami","arguments":{}}`))
	if err != nil {
		return "", err
	}
	return string(resp.Result), nil
}

func TestClientCredentialsGrant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		methods []string // the AS's token_endpoint_auth_methods_supported
		jwt     bool
		check   func(t *testing.T, form map[string][]string, authz string)
	}{
		{name: "client_secret_basic", methods: []string{"client_secret_basic"}, check: func(t *testing.T, form map[string][]string, authz string) {
			if !strings.HasPrefix(authz, "Basic ") || form["client_secret"] != nil {
				t.Errorf("want the secret in a Basic header only; Authorization %q, form %v", authz, form)
			}
		}},
		{name: "client_secret_post", methods: []string{"client_secret_post"}, check: func(t *testing.T, form map[string][]string, authz string) {
			if authz != "" || len(form["client_secret"]) != 1 {
				t.Errorf("want the secret in the form only; Authorization %q", authz)
			}
		}},
		{name: "private_key_jwt", methods: []string{"private_key_jwt"}, jwt: true, check: func(t *testing.T, form map[string][]string, authz string) {
			if authz != "" || form["client_secret"] != nil || len(form["client_assertion"]) != 1 {
				t.Errorf("want a client assertion and no secret; Authorization %q, form keys %v", authz, form)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newTestAS(t)
			as.methods = tc.methods
			rs := newTestRS(t, as, "mcp:tools")
			cfg := ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: as.clientID}
			if tc.jwt {
				key, pemText := ecKeyPEM(t)
				as.pub = &key.PublicKey
				cfg.PrivateKey = pemText
			} else {
				cfg.ClientSecret = as.secret
			}
			cc, err := NewClientCredentials(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			got, err := callWhoami(t, rs.url, cc, &log)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if !strings.Contains(got, "authorized") {
				t.Fatalf("result %s", got)
			}
			reqs := as.tokenRequests()
			if len(reqs) != 1 {
				t.Fatalf("%d token requests, want 1 (the token is reused)", len(reqs))
			}
			f := reqs[0]
			if f.Get("grant_type") != "client_credentials" || f.Get("resource") != rs.url || f.Get("scope") != "mcp:tools" {
				t.Errorf("token request grant %q resource %q scope %q; want client_credentials, %s, the challenge's mcp:tools", f.Get("grant_type"), f.Get("resource"), f.Get("scope"), rs.url)
			}
			as.mu.Lock()
			authz := as.authHdr[0]
			as.mu.Unlock()
			tc.check(t, f, authz)
			if strings.Contains(log.String(), "access-") || strings.Contains(log.String(), as.secret) {
				t.Errorf("the log holds a token or the secret:\n%s", log.String())
			}
		})
	}
}

func TestClientCredentialsRefused(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as)
	cc, err := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: as.clientID, ClientSecret: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	_, err = callWhoami(t, rs.url, cc, &log)
	if !errors.Is(err, upstream.ErrAuthorization) {
		t.Fatalf("err %v, want ErrAuthorization", err)
	}
	for _, want := range []string{`mcp server "remote"`, "token request", "invalid_client"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the secret: %v", err)
	}
}

// A token the server stops accepting is replaced by a new grant on the
// 401, and the call goes through.
func TestClientCredentialsRenewsRefusedToken(t *testing.T) {
	as := newTestAS(t)
	rs := newTestRS(t, as)
	cc, _ := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: as.clientID, ClientSecret: as.secret})
	var log bytes.Buffer
	h := upstream.NewHTTP(upstream.HTTPOptions{Name: "remote", URL: rs.url, Auth: cc, NoListen: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	defer h.Close()
	ctx := context.Background()
	if _, err := h.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	as.revokeAll()
	resp, err := h.Call(ctx, "tools/call", []byte(`{"name":"whoami","arguments":{}}`))
	if err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if !strings.Contains(string(resp.Result), "authorized") {
		t.Fatalf("result %s", resp.Result)
	}
	if n := len(as.tokenRequests()); n != 2 {
		t.Errorf("%d token requests, want 2", n)
	}
}

func TestNewClientCredentialsChecks(t *testing.T) {
	_, pemText := ecKeyPEM(t)
	for _, tc := range []struct {
		cfg  ClientCredentialsConfig
		want string
	}{
		{ClientCredentialsConfig{Server: "s", ClientSecret: "x"}, "clientId is required"},
		{ClientCredentialsConfig{Server: "s", ClientID: "c"}, "exactly one of clientSecret"},
		{ClientCredentialsConfig{Server: "s", ClientID: "c", ClientSecret: "x", PrivateKey: pemText}, "exactly one of clientSecret"},
		{ClientCredentialsConfig{Server: "s", ClientID: "c", PrivateKey: "not pem"}, "privateKey: not a PEM block"},
		{ClientCredentialsConfig{Server: "s", ClientID: "c", PrivateKey: pemText, SigningAlg: "RS256"}, `"RS256" does not fit this EC key`},
		{ClientCredentialsConfig{Server: "s", ClientID: "c", ClientSecret: "x", Method: "tls"}, `"tls" is not one of`},
	} {
		_, err := NewClientCredentials(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `mcp server "s"`) {
			t.Errorf("%+v: err %v, want %q naming the server", tc.cfg.Method, err, tc.want)
		}
	}
}

// A headless client steps up on its own: the server wants mcp:basic to
// list and mcp:write to call (a 403 insufficient_scope naming it); the
// client asks a new token for the union of the scopes and the call
// succeeds.
func TestClientCredentialsStepUp(t *testing.T) {
	as := newTestAS(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, struct{}{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	rsURL, prm := rs.URL+"/mcp", rs.URL+"/.well-known/oauth-protected-resource/mcp"
	as.resource = rsURL
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: rsURL, AuthorizationServers: []string{as.issuer}, ScopesSupported: []string{"mcp:basic", "mcp:write"}}))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		info, err := as.verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer scope="mcp:basic", resource_metadata="`+prm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if bytes.Contains(body, []byte(`"tools/call"`)) && !slices.Contains(info.Scopes, "mcp:write") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:write", resource_metadata="`+prm+`"`)
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
	cc, err := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rsURL, ClientID: as.clientID, ClientSecret: as.secret})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	got, err := callWhoami(t, rsURL, cc, &log)
	if err != nil || !strings.Contains(got, "authorized") {
		t.Fatalf("call: %v %s\n%s", err, got, log.String())
	}
	var scopes []string
	for _, f := range as.tokenRequests() {
		scopes = append(scopes, f.Get("scope"))
	}
	if want := []string{"mcp:basic", "mcp:basic mcp:write"}; !slices.Equal(scopes, want) {
		t.Errorf("token requests' scopes %q; want %q (the challenge's, then the union)", scopes, want)
	}
}
