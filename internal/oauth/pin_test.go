package oauth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// movingRS is an MCP server whose protected resource metadata names the
// authorization servers it is given, and which accepts the tokens of the
// first of them only: moving it to another makes its next answer a 401.
type movingRS struct {
	url string
	mu  sync.Mutex
	ass []*testAS
}

func newMovingRS(t *testing.T, ass ...*testAS) *movingRS {
	rs := &movingRS{}
	server := mcp.NewServer(&mcp.Implementation{Name: "moving", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "authorized"}}}, struct{}{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	rs.url = srv.URL + "/mcp"
	prm := srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		var names []string
		for _, as := range rs.ass {
			names = append(names, as.issuer)
		}
		rs.mu.Unlock()
		writeJSON(w, 200, &oauthex.ProtectedResourceMetadata{Resource: rs.url, AuthorizationServers: names})
	})
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		rs.mu.Lock()
		as := rs.ass[0]
		rs.mu.Unlock()
		return as.verify(ctx, token, r)
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(h))
	rs.move(ass...)
	return rs
}

func (rs *movingRS) move(ass ...*testAS) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.ass = ass
	for _, as := range ass {
		as.resource = rs.url
	}
}

func (as *testAS) requestCount() int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.hits
}

// The issuer of the first grant is pinned: when the server's metadata
// later names another authorization server, the client refuses, naming
// both, and sends the other nothing at all (no metadata request, no
// secret).
func TestClientCredentialsPinsIssuerAtFirstUse(t *testing.T) {
	a, b := newTestAS(t), newTestAS(t)
	b.clientID, b.secret = a.clientID, a.secret // B would grant the same client
	rs := newMovingRS(t, a)
	cc, err := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: a.clientID, ClientSecret: a.secret})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := callWhoami(t, rs.url, cc, &log); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if p := cc.Pinned(); p.Issuer != a.issuer || p.TokenEndpoint != a.issuer+"/token" || p.Configured {
		t.Fatalf("pinned %+v, want A's issuer and token endpoint, at first use", p)
	}
	rs.move(b)
	_, err = callWhoami(t, rs.url, cc, &log)
	if !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("after the move: err %v, want ErrPinMismatch", err)
	}
	for _, want := range []string{`mcp server "remote"`, "authorization server " + b.issuer, "pinned " + a.issuer, "no credentials were sent", `set "issuer"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := b.requestCount(); n != 0 {
		t.Errorf("authorization server B got %d requests, want none", n)
	}
}

// A configured issuer holds from the first request: a server naming
// another is refused before anything is sent to it; one naming it among
// others is served by it.
func TestClientCredentialsConfiguredIssuer(t *testing.T) {
	a, b := newTestAS(t), newTestAS(t)
	b.clientID, b.secret = a.clientID, a.secret
	rs := newMovingRS(t, b)
	cc, _ := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: a.clientID, ClientSecret: a.secret, Issuer: a.issuer})
	var log bytes.Buffer
	_, err := callWhoami(t, rs.url, cc, &log)
	if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), `change "issuer"`) {
		t.Fatalf("err %v, want ErrPinMismatch advising to change the configured issuer", err)
	}
	if n := b.requestCount(); n != 0 {
		t.Errorf("authorization server B got %d requests, want none", n)
	}

	rs2 := newMovingRS(t, a, b) // A listed (first), B too
	rs2.move(a, b)
	cc2, _ := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs2.url, ClientID: a.clientID, ClientSecret: a.secret, Issuer: b.issuer})
	cc3, _ := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs2.url, ClientID: a.clientID, ClientSecret: a.secret, Issuer: a.issuer + "/"})
	if _, err := callWhoami(t, rs2.url, cc3, &log); err != nil {
		t.Fatalf("issuer A (trailing slash) listed first: %v", err)
	}
	before := len(b.tokenRequests())
	_, _ = callWhoami(t, rs2.url, cc2, &log) // B's token is not the server's, but B was the one asked
	if len(b.tokenRequests()) != before+1 || len(a.tokenRequests()) != 1 {
		t.Errorf("configured issuer B listed second: token requests A %d, B %d; want B asked", len(a.tokenRequests()), len(b.tokenRequests()))
	}
}

// A token endpoint on another origin than its issuer's gets no secret
// unless the configuration names it.
func TestClientCredentialsTokenEndpointOrigin(t *testing.T) {
	a, elsewhere := newTestAS(t), newTestAS(t)
	a.tokenEndpoint = elsewhere.issuer + "/token"
	rs := newMovingRS(t, a)
	var log bytes.Buffer
	cc, _ := NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: a.clientID, ClientSecret: a.secret})
	_, err := callWhoami(t, rs.url, cc, &log)
	if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), `"tokenEndpoint": "`+elsewhere.issuer+`/token"`) {
		t.Fatalf("err %v, want a refusal advising \"tokenEndpoint\"", err)
	}
	if n := elsewhere.requestCount(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	cc, _ = NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: a.clientID, ClientSecret: a.secret, TokenEndpoint: elsewhere.issuer + "/token"})
	_, _ = callWhoami(t, rs.url, cc, &log)
	if n := len(elsewhere.tokenRequests()); n != 1 {
		t.Fatalf("configured token endpoint got %d token requests, want 1", n)
	}
	cc, _ = NewClientCredentials(ClientCredentialsConfig{Server: "remote", URL: rs.url, ClientID: a.clientID, ClientSecret: a.secret, TokenEndpoint: a.issuer + "/token"})
	if _, err = callWhoami(t, rs.url, cc, &log); !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), "token endpoint "+elsewhere.issuer) {
		t.Fatalf("err %v, want a refusal of the metadata's other token endpoint", err)
	}
}

// A person's authorization of a server pinned to an issuer (server add
// --oauth-issuer) stops before the person is sent anywhere when the
// server names another.
func TestAuthorizeConfiguredIssuer(t *testing.T) {
	a, b := newTestAS(t), newTestAS(t)
	rs := newMovingRS(t, b)
	_, err := Authorize(context.Background(), FlowConfig{Server: "remote", URL: rs.url, Issuer: a.issuer, RedirectURL: "http://127.0.0.1:1/cb",
		Fetch: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			t.Fatal("the person was sent to an authorization server")
			return nil, nil
		}})
	if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), "--oauth-issuer") {
		t.Fatalf("err %v, want ErrPinMismatch advising --oauth-issuer", err)
	}
	if n := b.requestCount(); n != 0 {
		t.Errorf("authorization server B got %d requests", n)
	}
}
