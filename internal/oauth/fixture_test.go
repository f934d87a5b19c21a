package oauth

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// testAS is an authorization server for the tests: client_credentials
// (basic, post, private_key_jwt), authorization_code with PKCE S256,
// refresh_token, dynamic registration. It records what it was asked.
type testAS struct {
	t      *testing.T
	srv    *httptest.Server
	issuer string

	clientID, secret string
	pub              *ecdsa.PublicKey
	resource         string   // the resource every token request must name
	scopes           []string // scopes_supported
	methods          []string // token_endpoint_auth_methods_supported
	ttl              time.Duration

	mu       sync.Mutex
	tokens   map[string]grant // access token → grant
	refresh  map[string]grant
	codes    map[string]codeGrant
	requests []url.Values // token requests' forms
	authHdr  []string     // their Authorization headers
	n        int
	// bad-input switches
	garbageMetadata bool
	metadataIssuer  string // "" = the real one
	issInRedirect   string // "" = the real one
	failRefresh     bool
	tokenEndpoint   string // "" = the issuer's /token
	hits            int    // requests of any kind
}

type grant struct {
	scopes []string
	exp    time.Time
}

type codeGrant struct {
	challenge, redirect, resource string
	scopes                        []string
	used                          bool
}

func newTestAS(t *testing.T) *testAS {
	as := &testAS{t: t, clientID: "gw-client", secret: "s3cret-value", ttl: time.Hour,
		tokens: map[string]grant{}, refresh: map[string]grant{}, codes: map[string]codeGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("/token", as.token)
	mux.HandleFunc("/authorize", as.authorize)
	mux.HandleFunc("/register", as.register)
	as.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		as.mu.Lock()
		as.hits++
		as.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(as.srv.Close)
	as.issuer = as.srv.URL
	return as
}

func (as *testAS) metadata(w http.ResponseWriter, r *http.Request) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.garbageMetadata {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"issuer": 42, <garbage`))
		return
	}
	iss := as.issuer
	if as.metadataIssuer != "" {
		iss = as.metadataIssuer
	}
	methods := as.methods
	if methods == nil {
		methods = []string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"}
	}
	writeJSON(w, 200, map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         as.issuer + "/authorize",
		"token_endpoint":                                 cmp.Or(as.tokenEndpoint, as.issuer+"/token"),
		"registration_endpoint":                          as.issuer + "/register",
		"scopes_supported":                               as.scopes,
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"token_endpoint_auth_methods_supported":          methods,
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (as *testAS) fail(w http.ResponseWriter, code int, e, desc string) {
	writeJSON(w, code, map[string]string{"error": e, "error_description": desc})
}

func (as *testAS) issue(w http.ResponseWriter, scopes []string, withRefresh bool) {
	as.n++
	access := fmt.Sprintf("access-%d-%s", as.n, strings.Repeat("x", 8))
	as.tokens[access] = grant{scopes: scopes, exp: time.Now().Add(as.ttl)}
	resp := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(as.ttl / time.Second), "scope": strings.Join(scopes, " ")}
	if withRefresh {
		rt := fmt.Sprintf("refresh-%d", as.n)
		as.refresh[rt] = grant{scopes: scopes}
		resp["refresh_token"] = rt
	}
	writeJSON(w, 200, resp)
}

func (as *testAS) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	as.mu.Lock()
	defer as.mu.Unlock()
	as.requests = append(as.requests, r.PostForm)
	as.authHdr = append(as.authHdr, r.Header.Get("Authorization"))
	f := r.PostForm
	if as.resource != "" && f.Get("resource") != as.resource {
		as.fail(w, 400, "invalid_target", "resource must be "+as.resource)
		return
	}
	scopes := strings.Fields(f.Get("scope"))
	switch f.Get("grant_type") {
	case "client_credentials":
		if !as.clientAuthenticated(r) {
			as.fail(w, 401, "invalid_client", "client authentication failed")
			return
		}
		as.issue(w, scopes, false)
	case "authorization_code":
		c, ok := as.codes[f.Get("code")]
		if !ok || c.used {
			as.fail(w, 400, "invalid_grant", "unknown or used code")
			return
		}
		c.used = true
		as.codes[f.Get("code")] = c
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			as.fail(w, 400, "invalid_grant", "PKCE verification failed")
			return
		}
		if f.Get("redirect_uri") != c.redirect {
			as.fail(w, 400, "invalid_grant", "redirect_uri differs")
			return
		}
		as.issue(w, c.scopes, true)
	case "refresh_token":
		g, ok := as.refresh[f.Get("refresh_token")]
		if !ok || as.failRefresh {
			as.fail(w, 400, "invalid_grant", "refresh token revoked")
			return
		}
		delete(as.refresh, f.Get("refresh_token"))
		as.issue(w, g.scopes, true)
	default:
		as.fail(w, 400, "unsupported_grant_type", f.Get("grant_type"))
	}
}

func (as *testAS) clientAuthenticated(r *http.Request) bool {
	f := r.PostForm
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		return id == as.clientID && secret == as.secret
	}
	if f.Get("client_secret") != "" {
		return f.Get("client_id") == as.clientID && f.Get("client_secret") == as.secret
	}
	if f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" && as.pub != nil {
		tok, err := jwt.Parse(f.Get("client_assertion"), func(*jwt.Token) (any, error) { return as.pub, nil },
			jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(as.issuer), jwt.WithIssuer(as.clientID), jwt.WithSubject(as.clientID), jwt.WithExpirationRequired())
		if err != nil {
			as.t.Logf("assertion refused: %v", err)
		}
		return err == nil && tok.Valid
	}
	return false
}

func (as *testAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	defer as.mu.Unlock()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "PKCE S256 required", 400)
		return
	}
	if as.resource != "" && q.Get("resource") != as.resource {
		http.Error(w, "wrong resource", 400)
		return
	}
	as.n++
	code := fmt.Sprintf("code-%d", as.n)
	as.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
	iss := as.issuer
	if as.issInRedirect != "" {
		iss = as.issInRedirect
	}
	to, _ := url.Parse(q.Get("redirect_uri"))
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	v.Set("iss", iss)
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (as *testAS) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	json.NewDecoder(r.Body).Decode(&meta)
	writeJSON(w, 201, map[string]any{"client_id": "dcr-client", "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
}

// verify is the resource server's token check.
func (as *testAS) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	as.mu.Lock()
	defer as.mu.Unlock()
	g, ok := as.tokens[token]
	if !ok || time.Now().After(g.exp) {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: g.scopes, Expiration: g.exp}, nil
}

func (as *testAS) revokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.tokens)
}

func (as *testAS) tokenRequests() []url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.requests)
}

// testRS is an MCP server (the Go SDK's) behind a bearer token check, with
// its protected resource metadata naming as.
type testRS struct {
	srv      *httptest.Server
	url      string // the MCP endpoint
	required []string
	seen     []string // Authorization headers received
	mu       sync.Mutex
}

func newTestRS(t *testing.T, as *testAS, required ...string) *testRS {
	return newTestRSPRM(t, as, nil, required...)
}

// newTestRSPRM is newTestRS with its resource metadata changed by edit.
func newTestRSPRM(t *testing.T, as *testAS, edit func(*oauthex.ProtectedResourceMetadata), required ...string) *testRS {
	rs := &testRS{required: required}
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, struct{}{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	rs.srv = httptest.NewUnstartedServer(mux)
	rs.srv.Start()
	t.Cleanup(rs.srv.Close)
	rs.url = rs.srv.URL + "/mcp"
	prm := rs.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	meta := &oauthex.ProtectedResourceMetadata{
		Resource: rs.url, AuthorizationServers: []string{as.issuer}, ScopesSupported: append([]string{"read"}, required...),
	}
	if edit != nil {
		edit(meta)
	}
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(meta))
	protected := auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm, Scopes: required})(h)
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Get("Authorization"))
		rs.mu.Unlock()
		protected.ServeHTTP(w, r)
	}))
	as.resource = rs.url
	return rs
}
