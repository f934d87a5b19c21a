package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// pinAS is an authorization server granting client_credentials to one
// client; it records every request it gets and each secret it was sent.
type pinAS struct {
	url            string
	mu             sync.Mutex
	requests       []string // "METHOD path"
	secretsSeen    int
	tokens         []string
	clientID, pass string
}

func startPinAS(t *testing.T, clientID, secret string) *pinAS {
	as := &pinAS{clientID: clientID, pass: secret}
	mux := http.NewServeMux()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		_, sec, _ := r.BasicAuth()
		as.mu.Lock()
		as.requests = append(as.requests, r.Method+" "+r.URL.Path)
		if sec == secret || strings.Contains(string(body), secret) {
			as.secretsSeen++
		}
		as.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	as.url = srv.URL
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": as.url, "token_endpoint": as.url + "/token",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, sec, ok := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		if !ok || id != clientID || sec != secret {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		as.mu.Lock()
		tok := fmt.Sprintf("pin-token-%d-%d", len(as.tokens), time.Now().UnixNano())
		as.tokens = append(as.tokens, tok)
		as.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	return as
}

func (as *pinAS) seen() ([]string, int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.requests), as.secretsSeen
}

// movingServer is an MCP server (the Go SDK's) whose protected resource
// metadata names one authorization server, and which accepts that one's
// tokens only; moveTo switches both.
type movingServer struct {
	url string
	mu  sync.Mutex
	as  *pinAS
}

func startMovingServer(t *testing.T, as *pinAS) *movingServer {
	ms := &movingServer{as: as}
	server := mcp.NewServer(&mcp.Implementation{Name: "moving", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "says who is calling"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "machine client"}}}, struct{}{}, nil
	})
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	ms.url = rs.URL + "/mcp"
	prm := rs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		ms.mu.Lock()
		meta := &oauthex.ProtectedResourceMetadata{Resource: ms.url, AuthorizationServers: []string{ms.as.url}}
		ms.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(meta)
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		ms.mu.Lock()
		as := ms.as
		ms.mu.Unlock()
		as.mu.Lock()
		defer as.mu.Unlock()
		if !slices.Contains(as.tokens, token) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(h))
	return ms
}

func (ms *movingServer) moveTo(as *pinAS) {
	ms.mu.Lock()
	ms.as = as
	ms.mu.Unlock()
}

const pinClientID, pinSecret = "pinned-bot", "pin-client-secret-value"

func pinConfig(url, extra string) string {
	return fmt.Sprintf(`{"protected":{"url":%q,"oauth":{"grant":"client_credentials","clientId":%q,"clientSecret":"${CLIENT_SECRET}"%s},"envs":{"CLIENT_SECRET":%q}}}`,
		url, pinClientID, extra, pinSecret)
}

// The authorization server of a client_credentials server is pinned at
// first use: when the server's metadata later names authorization server
// B on another origin, the gateway refuses (the agent's call says why,
// naming the server, A and B) and B gets no request at all, so never the
// client secret.
func TestOAuthPinnedAtFirstUse(t *testing.T) {
	a, b := startPinAS(t, pinClientID, pinSecret), startPinAS(t, pinClientID, pinSecret)
	srv := startMovingServer(t, a)
	g := newGW(t)
	g.mustLaunch(pinConfig(srv.url, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := g.connect(ctx)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || text(res) != "machine client" {
		t.Fatalf("before the move: %v %v", res, err)
	}
	if _, secrets := a.seen(); secrets == 0 {
		t.Fatal("A never got the client secret")
	}

	srv.moveTo(b) // A's token is refused from now on; the metadata names B
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		msg = text(res)
		if !res.IsError {
			t.Fatalf("after the move the call succeeded: %q", msg)
		}
	}
	for _, want := range []string{`mcp server "protected"`, "authorization server " + b.url, "pinned " + a.url, "no credentials were sent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the call's error %q lacks %q", msg, want)
		}
	}
	if reqs, secrets := b.seen(); len(reqs) != 0 || secrets != 0 {
		t.Errorf("authorization server B got %v (%d with the secret), want nothing", reqs, secrets)
	}
	if strings.Contains(g.log(), pinSecret) {
		t.Error("the log holds the client secret")
	}
}

// A configured "issuer" holds from the first request: a server whose
// metadata names another authorization server fails the launch with an
// error naming the server, the pinned issuer and the other; the other gets
// no request.
func TestOAuthPinnedByConfig(t *testing.T) {
	a, b := startPinAS(t, pinClientID, pinSecret), startPinAS(t, pinClientID, pinSecret)
	srv := startMovingServer(t, b)
	g := newGW(t)
	g.launch(pinConfig(srv.url, fmt.Sprintf(`,"issuer":%q`, a.url)))
	if g.exit == 0 {
		t.Fatal("launch succeeded with a server naming another authorization server than the configured issuer")
	}
	out := g.stderr + g.log()
	for _, want := range []string{`mcp server "protected"`, "authorization server " + b.url, "pinned " + a.url, `change "issuer"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr %q lacks %q", g.stderr, want)
		}
	}
	if reqs, secrets := b.seen(); len(reqs) != 0 || secrets != 0 {
		t.Errorf("authorization server B got %v (%d with the secret), want nothing", reqs, secrets)
	}

	// Pinned to the one the server names: it works.
	g2 := newGW(t)
	g2.mustLaunch(pinConfig(srv.url, fmt.Sprintf(`,"issuer":%q,"tokenEndpoint":%q`, b.url, b.url+"/token")))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := g2.connect(ctx).CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil || text(res) != "machine client" {
		t.Fatalf("pinned to B: %v %v", res, err)
	}
}

// On a host, `server add --oauth-issuer` pins a person's authorization:
// `auth` of a server whose metadata names another authorization server
// fails before it prints a URL to open, naming the pinned issuer and what
// to do; pinned to the one the server names, it authorizes as before.
func TestHostOAuthPinnedIssuer(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	other := startPinAS(t, pinClientID, pinSecret)
	resp, err := http.Get(strings.Replace(srv.url, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1))
	if err != nil {
		t.Fatal(err)
	}
	var prm oauthex.ProtectedResourceMetadata
	err = json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if err != nil || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("resource metadata %+v %v", prm, err)
	}
	named := prm.AuthorizationServers[0]

	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth", "--oauth-issuer", other.url)
	if info := h.mustCLI("", "server", "inspect", "prot"); !strings.Contains(info, `"issuer": "`+other.url+`"`) {
		t.Errorf("server inspect does not show the pinned issuer:\n%s", info)
	}
	out, stderr, code := h.cli("", "auth", "prot")
	if code == 0 || strings.Contains(out, "http") {
		t.Fatalf("auth of a server naming another issuer: exit %d, stdout %q", code, out)
	}
	for _, want := range []string{`mcp server "prot"`, "authorization server " + named, "not the pinned " + other.url, "--oauth-issuer"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("auth stderr %q lacks %q", stderr, want)
		}
	}
	if reqs, _ := other.seen(); len(reqs) != 0 {
		t.Errorf("the pinned authorization server was asked %v", reqs)
	}

	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth", "--replace", "--oauth-issuer", named)
	if out := authCLI(t, h, "prot"); !strings.Contains(out, `mcp server "prot" is authorized (issuer `+named) {
		t.Fatalf("auth pinned to the server's issuer:\n%s", out)
	}
}
