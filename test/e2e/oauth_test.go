package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ccServer is an MCP server (the Go SDK's) behind a bearer check, with an
// authorization server granting client_credentials to one client
// (client_secret_basic).
type ccServer struct {
	url    string // the MCP endpoint
	mu     sync.Mutex
	tokens []string // issued
	forms  []string // token requests' resource parameters
	// needScope, when set, is a scope a tools/call needs: a token granted
	// without it (by a person, authorization_code) gets 403
	// insufficient_scope naming it.
	needScope string
	asked     string            // the scope of the last authorization request
	scopeOf   map[string]string // a person's token's granted scope
}

func startCCServer(t *testing.T, clientID, secret string) *ccServer {
	t.Helper()
	cs := &ccServer{}
	asMux := http.NewServeMux()
	as := httptest.NewServer(asMux)
	t.Cleanup(as.Close)
	asMux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
			"authorization_endpoint": as.URL + "/authorize", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"},
			"registration_endpoint": as.URL + "/register", "authorization_response_iss_parameter_supported": true,
			"code_challenge_methods_supported": []string{"S256"}})
	})
	asMux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"client_id":"registered-client","token_endpoint_auth_method":"none"}`)
	})
	asMux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != cs.url {
			http.Error(w, "PKCE S256 and the resource are required", 400)
			return
		}
		cs.mu.Lock()
		cs.asked = q.Get("scope")
		cs.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {"the-code"}, "state": {q.Get("state")}, "iss": {as.URL}}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	asMux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		id, sec, ok := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		person := r.PostForm.Get("grant_type") == "authorization_code" && r.PostForm.Get("code") == "the-code" && r.PostForm.Get("code_verifier") != ""
		if person {
			id, sec, ok = clientID, secret, true
		}
		if !ok || id != clientID || sec != secret || r.PostForm.Get("grant_type") == "refresh_token" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		cs.mu.Lock()
		tok := fmt.Sprintf("cc-access-token-%d-%d", len(cs.tokens), time.Now().UnixNano())
		cs.tokens = append(cs.tokens, tok)
		cs.forms = append(cs.forms, r.PostForm.Get("resource"))
		scope := ""
		if person {
			if cs.scopeOf == nil {
				cs.scopeOf = map[string]string{}
			}
			scope = cs.asked
			cs.scopeOf[tok] = scope
		}
		cs.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
	})

	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "says who is calling"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "machine client " + clientID}}}, struct{}{}, nil
	})
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	cs.url = rs.URL + "/mcp"
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if !slices.Contains(cs.tokens, token) {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	prm := rs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: cs.url, AuthorizationServers: []string{as.URL}}))
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	scoped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		need := cs.needScope
		granted, person := cs.scopeOf[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		cs.mu.Unlock()
		if need != "" && person && r.Method == http.MethodPost && !slices.Contains(strings.Fields(granted), need) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			var msg struct{ Method string }
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, need, prm))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(scoped))
	return cs
}

// A sandbox gateway reaches an OAuth-protected remote server headless:
// the client_credentials grant from the server's "oauth" entry, its secret
// from envs. The agent sees the server's tools and results, never the
// token: not in a result, not in /health, not in the log.
func TestOAuthClientCredentialsHeadless(t *testing.T) {
	const clientID, secret = "sandbox-bot", "cc-client-secret-value"
	srv := startCCServer(t, clientID, secret)
	g := newGW(t)
	config := fmt.Sprintf(`{"protected":{"url":%q,"oauth":{"grant":"client_credentials","clientId":%q,"clientSecret":"${CLIENT_SECRET}"},"envs":{"CLIENT_SECRET":%q}}}`, srv.url, clientID, secret)
	g.mustLaunch(config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := g.connect(ctx)
	if names := toolNames(ctx, t, cs); !slices.Equal(names, []string{"whoami"}) {
		t.Fatalf("tools %v, want [whoami]", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "machine client "+clientID {
		t.Fatalf("whoami said %q", got)
	}
	srv.mu.Lock()
	tokens, resources := slices.Clone(srv.tokens), slices.Clone(srv.forms)
	srv.mu.Unlock()
	if len(tokens) == 0 {
		t.Fatal("no token was issued")
	}
	if resources[0] != srv.url {
		t.Errorf("token request resource %q, want %q", resources[0], srv.url)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", g.port))
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, tok := range tokens {
		for where, s := range map[string]string{"/health": string(health), "the log": g.log(), "the launcher's output": g.stdout + g.stderr} {
			if strings.Contains(s, tok) {
				t.Errorf("%s holds the access token", where)
			}
			if strings.Contains(s, secret) {
				t.Errorf("%s holds the client secret", where)
			}
		}
	}
}

// A missing client secret fails the launch before anything starts, naming
// the server and the placeholder.
func TestOAuthClientCredentialsBadConfig(t *testing.T) {
	g := newGW(t)
	g.launch(`{"protected":{"url":"https://example.com/mcp","oauth":{"grant":"client_credentials","clientId":"x","clientSecret":"plain-text"}}}`)
	if g.exit == 0 {
		t.Fatal("launch succeeded with a literal client secret")
	}
	if !strings.Contains(g.stderr, `protected`) || !strings.Contains(g.stderr, `"clientSecret" must be one placeholder`) {
		t.Fatalf("stderr %q does not name the server and the member", g.stderr)
	}
}

// On a host: `server add` finds that the server wants OAuth, `auth NAME`
// prints the URL and completes through the loopback callback when the
// person's browser (played here) comes back, the token is stored, a
// sandbox's agent calls the server's tool, `auth status` shows no token,
// `auth rm` forgets it.
func TestHostOAuthAuthorize(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	out := h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	if !strings.Contains(out, "it wants OAuth") || !strings.Contains(out, "mcp-gateway auth prot") {
		t.Fatalf("server add printed %q", out)
	}
	if st := h.mustCLI("", "auth", "status", "--json"); !strings.Contains(st, `"server": "prot"`) || !strings.Contains(st, `"authorized": false`) {
		t.Fatalf("auth status before: %s", st)
	}

	cmd := exec.Command(gatewayBin, "auth", "prot")
	cmd.Env = append(cmd.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http") {
			browseAuthorization(t, u) // the authorization server redirects at once
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth prot: %v\n%s\n%s\nhost log:\n%s", err, strings.Join(lines, "\n"), stderr.String(), h.log())
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `mcp server "prot" is authorized`) {
		t.Fatalf("auth printed %q", strings.Join(lines, "\n"))
	}
	st := h.mustCLI("", "auth", "status", "--json")
	if !strings.Contains(st, `"authorized": true`) {
		t.Fatalf("auth status after: %s", st)
	}
	srv.mu.Lock()
	tokens := slices.Clone(srv.tokens)
	srv.mu.Unlock()
	for _, tok := range tokens {
		if strings.Contains(st, tok) || strings.Contains(h.log(), tok) {
			t.Fatal("a token shows in auth status or the host's log")
		}
	}

	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := g.connect(ctx)
	if got, isErr := callText(ctx, t, cs, "whoami", map[string]any{}); isErr || got != "machine client unused" {
		t.Fatalf("whoami: %q (error %v)", got, isErr)
	}

	if out := h.mustCLI("", "auth", "rm", "prot"); !strings.Contains(out, `forgot the OAuth tokens of mcp server "prot"`) {
		t.Fatalf("auth rm printed %q", out)
	}
	if st := h.mustCLI("", "auth", "status", "--json"); !strings.Contains(st, `"authorized": false`) {
		t.Fatalf("auth status after rm: %s", st)
	}
	// The sandbox's client no longer sees the server's tools.
	deadline := time.Now().Add(30 * time.Second)
	names := toolNames(ctx, t, cs)
	for ; slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, cs) {
		time.Sleep(100 * time.Millisecond)
	}
	if slices.Contains(names, "whoami") || !slices.Contains(names, "prot-authorize") {
		t.Errorf("tools after auth rm: %v; want prot-authorize and no whoami", names)
	}
	h.failCLI("has no OAuth token", "", "auth", "rm", "prot")
}

// The agent's side: a sandbox sees prot-authorize instead of the tools of
// a server not yet authorized; calling it gives the URL, and once the
// person approves (the browser played here) the server's tools appear with
// list_changed. A grant the server then refuses (revoked) fails the call
// that found it, saying how to authorize again, and the tools go back to
// the authorize tool alone.
func TestHostOAuthAuthorizeTool(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, changed := g.connectListChanged(ctx)
	names := toolNames(ctx, t, cs)
	if !slices.Contains(names, "prot-authorize") || slices.Contains(names, "whoami") {
		t.Fatalf("tools before authorization: %v; want prot-authorize and no whoami", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "prot-authorize", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("prot-authorize: %v %s", err, text(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var out struct{ URL string }
	_ = json.Unmarshal(sc, &out)
	if out.URL == "" || !strings.Contains(text(res), out.URL) {
		t.Fatalf("prot-authorize gave no URL: %s", text(res))
	}
	browseAuthorization(t, out.URL)
	waitListChanged(t, changed, "the authorization")
	deadline := time.Now().Add(30 * time.Second)
	for names = toolNames(ctx, t, cs); !slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, cs) {
		waitListChanged(t, changed, "the authorization")
	}
	if !slices.Contains(names, "whoami") || !slices.Contains(names, "prot-authorize") {
		t.Fatalf("tools after authorization: %v; want whoami and prot-authorize", names)
	}
	if got, isErr := callText(ctx, t, cs, "whoami", map[string]any{}); isErr || got != "machine client unused" {
		t.Fatalf("whoami: %q (error %v)", got, isErr)
	}

	srv.mu.Lock()
	srv.tokens = nil // revoked
	srv.mu.Unlock()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		msg = text(res)
		if !res.IsError {
			t.Fatalf("whoami with a revoked grant succeeded: %s", msg)
		}
	}
	if !strings.Contains(msg, `"prot" is not authorized`) || !strings.Contains(msg, "prot-authorize") {
		t.Errorf("the call that found the revoked grant said %q; want it to say the server is not authorized and how to authorize it", msg)
	}
	deadline = time.Now().Add(30 * time.Second)
	for names = toolNames(ctx, t, cs); slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, cs) {
		waitListChanged(t, changed, "the lost grant")
	}
	if slices.Contains(names, "whoami") || !slices.Contains(names, "prot-authorize") {
		t.Fatalf("tools after the grant was lost: %v; want prot-authorize and no whoami", names)
	}
}

// A client that supports URL-mode elicitation is shown the authorization
// URL by the authorize tool: its user (played here) opens it from there.
func TestHostOAuthAuthorizeElicitation(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shown := make(chan string, 1)
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			shown <- req.Params.URL
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "prot-authorize", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("prot-authorize: %v", err)
	}
	var u string
	select {
	case u = <-shown:
	default:
		t.Fatalf("the client was not asked to open the URL; the tool said %s", text(res))
	}
	if !strings.Contains(text(res), "the user answered: accept") || !strings.Contains(text(res), u) {
		t.Errorf("the result %q should give the URL and the user's answer", text(res))
	}
	browseAuthorization(t, u)
	deadline := time.Now().Add(30 * time.Second)
	names := toolNames(ctx, t, cs)
	for ; !slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, cs) {
		waitListChanged(t, changed, "the authorization")
	}
	if !slices.Contains(names, "whoami") {
		t.Fatalf("tools after authorization: %v", names)
	}
}

// browseAuthorization plays the person's browser: it opens the
// authorization URL, whose server redirects at once, and follows the
// redirect to the gateway's loopback callback.
func browseAuthorization(t *testing.T, u string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp, err = http.Get(resp.Header.Get("Location")); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the callback answered %d", resp.StatusCode)
	}
}

// authCLI runs `mcp-gateway auth ARGS...`, opening the URL it prints as the
// person's browser would, and returns its output.
func authCLI(t *testing.T, h *hostGW, args ...string) string {
	t.Helper()
	cmd := exec.Command(gatewayBin, append([]string{"auth"}, args...)...)
	cmd.Env = append(cmd.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		lines = append(lines, sc.Text())
		if u := strings.TrimSpace(sc.Text()); strings.HasPrefix(u, "http") {
			browseAuthorization(t, u)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("auth %v: %v\n%s\n%s\nhost log:\n%s", args, err, strings.Join(lines, "\n"), stderr.String(), h.log())
	}
	return strings.Join(lines, "\n")
}

// A server registered --per-sandbox keeps one grant per sandbox: `auth
// NAME --sandbox a` authorizes sandbox a alone (b still sees only the
// authorize tool), b's authorize tool authorizes b's own grant, `auth
// status` shows each sandbox's, and `auth rm NAME --sandbox a` takes the
// tools from a while b keeps them.
func TestHostOAuthPerSandbox(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	out := h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--per-sandbox")
	if !strings.Contains(out, "it wants OAuth") || !strings.Contains(out, "mcp-gateway auth prot --sandbox SANDBOX") {
		t.Fatalf("server add --per-sandbox printed %q", out)
	}
	ga := h.createSandbox("a", "--static", "prot")
	gb := h.createSandbox("b", "--static", "prot")
	h.failCLI("name the sandbox", "", "auth", "prot")

	if out := authCLI(t, h, "prot", "--sandbox", "a"); !strings.Contains(out, `mcp server "prot" is authorized for sandbox "a"`) {
		t.Fatalf("auth prot --sandbox a printed %q", out)
	}
	var st []struct {
		Server, Sandbox string
		Authorized      bool
	}
	if err := json.Unmarshal([]byte(h.mustCLI("", "auth", "status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		Server, Sandbox string
		Authorized      bool
	}{{"prot", "a", true}, {"prot", "b", false}}
	if !slices.Equal(st, want) {
		t.Fatalf("auth status: %+v; want %+v", st, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca, changedA := ga.connectListChanged(ctx)
	cb, changedB := gb.connectListChanged(ctx)
	if got, isErr := callText(ctx, t, ca, "whoami", map[string]any{}); isErr || got != "machine client unused" {
		t.Fatalf("sandbox a: whoami: %q (error %v)", got, isErr)
	}
	if names := toolNames(ctx, t, cb); !slices.Contains(names, "prot-authorize") || slices.Contains(names, "whoami") {
		t.Fatalf("sandbox b's tools with only a authorized: %v; want prot-authorize and no whoami", names)
	}

	// b's authorize tool authorizes b's own grant.
	res, err := cb.CallTool(ctx, &mcp.CallToolParams{Name: "prot-authorize", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("prot-authorize in b: %v %s", err, text(res))
	}
	sc, _ := json.Marshal(res.StructuredContent)
	var tool struct{ URL string }
	_ = json.Unmarshal(sc, &tool)
	browseAuthorization(t, tool.URL)
	deadline := time.Now().Add(30 * time.Second)
	names := toolNames(ctx, t, cb)
	for ; !slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, cb) {
		waitListChanged(t, changedB, "b's authorization")
	}
	if !slices.Contains(names, "whoami") {
		t.Fatalf("sandbox b's tools after its authorization: %v", names)
	}
	srv.mu.Lock()
	issued := len(srv.tokens)
	srv.mu.Unlock()
	if issued != 2 {
		t.Errorf("the authorization server issued %d tokens; want 2, one per sandbox", issued)
	}

	if out := h.mustCLI("", "auth", "rm", "prot", "--sandbox", "a"); !strings.Contains(out, `forgot the OAuth tokens of mcp server "prot" for sandbox "a"`) {
		t.Fatalf("auth rm --sandbox a printed %q", out)
	}
	deadline = time.Now().Add(30 * time.Second)
	for names = toolNames(ctx, t, ca); slices.Contains(names, "whoami") && time.Now().Before(deadline); names = toolNames(ctx, t, ca) {
		waitListChanged(t, changedA, "a's grant removed")
	}
	if slices.Contains(names, "whoami") || !slices.Contains(names, "prot-authorize") {
		t.Fatalf("sandbox a's tools after auth rm --sandbox a: %v; want prot-authorize and no whoami", names)
	}
	if got, isErr := callText(ctx, t, cb, "whoami", map[string]any{}); isErr || got != "machine client unused" {
		t.Fatalf("sandbox b after a's grant was removed: whoami: %q (error %v)", got, isErr)
	}
	h.mustCLI("", "server", "add", "prot2", "--url", srv.url, "--allow-private-address", "--skip-auth")
	h.failCLI("not one per sandbox", "", "auth", "prot2", "--sandbox", "a")
}

// A 2026-07-28 client that supports URL elicitation gets the authorize
// tool's URL as an input_required result (an elicitation/create of mode
// url); its retry with the user's answer gets the final result, and the
// server's tools appear once the person approved. A 2026-07-28 client
// without URL elicitation gets the URL in the result at once.
func TestHostOAuthAuthorizeModernInputRequired(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	plain := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	_, out := postModernAs(ctx, t, g, plain, "tools/call", "prot-authorize", 1, map[string]any{"name": "prot-authorize", "arguments": map[string]any{}})
	res, _ := out["result"].(map[string]any)
	if res["resultType"] != "complete" || !strings.Contains(fmt.Sprint(res["structuredContent"]), "http") {
		t.Fatalf("a 2026-07-28 client without URL elicitation: %v; want a complete result with the URL", out)
	}

	urlCaps := map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	_, out = postModernAs(ctx, t, g, urlCaps, "tools/call", "prot-authorize", 2, map[string]any{"name": "prot-authorize", "arguments": map[string]any{}})
	res, _ = out["result"].(map[string]any)
	if res["resultType"] != "input_required" {
		t.Fatalf("a 2026-07-28 client with URL elicitation: %v; want input_required", out)
	}
	in, _ := res["inputRequests"].(map[string]any)
	if len(in) != 1 {
		t.Fatalf("inputRequests: %v; want one", in)
	}
	var key string
	var req map[string]any
	for k, v := range in {
		key, req = k, v.(map[string]any)
	}
	params, _ := req["params"].(map[string]any)
	u, _ := params["url"].(string)
	if req["method"] != "elicitation/create" || params["mode"] != "url" || u == "" {
		t.Fatalf("the input request: %v; want an elicitation/create of mode url with the URL", req)
	}
	browseAuthorization(t, u)

	_, out = postModernAs(ctx, t, g, urlCaps, "tools/call", "prot-authorize", 3, map[string]any{
		"name": "prot-authorize", "arguments": map[string]any{},
		"requestState": res["requestState"], "inputResponses": map[string]any{key: map[string]any{"action": "accept"}},
	})
	final, _ := out["result"].(map[string]any)
	if final["resultType"] != "complete" || !strings.Contains(fmt.Sprint(final["content"]), "the user answered: accept") || !strings.Contains(fmt.Sprint(final["content"]), u) {
		t.Fatalf("the retry's result: %v; want a complete result with the URL and the user's answer", out)
	}
	waitFor(ctx, t, "whoami after the authorization", func() bool {
		_, out := postModernAs(ctx, t, g, urlCaps, "tools/list", "", 4, map[string]any{})
		return strings.Contains(fmt.Sprint(out["result"]), "whoami")
	})
}

// A person's step-up within the call: the server answers a tools/call
// with 403 insufficient_scope; the gateway starts the authorization for
// the scopes granted and the new one and holds the call, auth status shows
// the authorization pending with its URL (never a token), and once the
// person approves (the browser played here) the call is sent again with
// the new token and its result reaches the client. When nobody approves
// before the call's bound (--call-timeout here), the call fails saying
// how to authorize. The client is of the 2026-07-28 era (the SDK's newest)
// without URL elicitation: the step-up's elicitation, meant for
// session-era clients only, neither fails nor suspends its call.
func TestHostOAuthStepUpHoldsCall(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir(), "--call-timeout", "5s")
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	authCLI(t, h, "prot")
	srv.mu.Lock()
	srv.needScope = "write"
	srv.mu.Unlock()
	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := g.connect(ctx)

	// Nobody approves: the call fails at its bound, saying what to do.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	text := ""
	if err != nil {
		text = err.Error()
	} else if res.IsError && len(res.Content) > 0 {
		text = res.Content[0].(*mcp.TextContent).Text
	}
	if !strings.Contains(text, "more scope") || !strings.Contains(text, "auth prot") {
		t.Fatalf("an unanswered step-up: result %+v, err %v; want a failure asking for more scope and naming `auth prot`\nhost log:\n%s", res, err, h.log())
	}

	// The person approves: the held call completes.
	type outcome struct {
		text  string
		isErr bool
	}
	done := make(chan outcome, 1)
	go func() {
		got, isErr := callText(ctx, t, cs, "whoami", map[string]any{})
		done <- outcome{got, isErr}
	}()
	var pending string
	for pending == "" {
		select {
		case o := <-done:
			t.Fatalf("the call ended before the person approved: %q (error %v)\nhost log:\n%s", o.text, o.isErr, h.log())
		case <-ctx.Done():
			t.Fatalf("auth status never showed the step-up pending\nhost log:\n%s", h.log())
		case <-time.After(100 * time.Millisecond):
		}
		var st []struct{ Server, Pending string }
		if err := json.Unmarshal([]byte(h.mustCLI("", "auth", "status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			// the second call waits (the first call's authorization,
			// still pending, is the one it waits for)
			if s.Server == "prot" && s.Pending != "" && strings.Count(h.log(), "a call waits for the person") >= 2 {
				pending = s.Pending
			}
		}
	}
	if u, _ := url.Parse(pending); u == nil || !slices.Contains(strings.Fields(u.Query().Get("scope")), "write") {
		t.Fatalf("the pending authorization %q does not ask for scope write", pending)
	}
	if !strings.Contains(h.mustCLI("", "auth", "status"), pending) {
		t.Error("auth status (text) does not show the pending authorization's URL")
	}
	browseAuthorization(t, pending)
	if o := <-done; o.isErr || o.text != "machine client unused" {
		t.Fatalf("the held call: %q (error %v)\nhost log:\n%s", o.text, o.isErr, h.log())
	}
	st := h.mustCLI("", "auth", "status", "--json")
	if !strings.Contains(st, `"write"`) || strings.Contains(st, `"pending"`) {
		t.Errorf("auth status after the step-up: %s", st)
	}
	srv.mu.Lock()
	tokens := slices.Clone(srv.tokens)
	srv.mu.Unlock()
	for _, tok := range tokens {
		if strings.Contains(st, tok) || strings.Contains(h.log(), tok) {
			t.Fatal("a token shows in auth status or the host's log")
		}
	}
}

// A session-era client that declared URL elicitation is shown a step-up's
// URL during the held call: its user (played here) opens it from there,
// and the call completes.
func TestHostOAuthStepUpElicitation(t *testing.T) {
	srv := startCCServer(t, "unused", "unused")
	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", srv.url, "--allow-private-address", "--skip-auth")
	authCLI(t, h, "prot")
	srv.mu.Lock()
	srv.needScope = "write"
	srv.mu.Unlock()
	g := h.createSandbox("sb", "--static", "prot")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shown := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			shown <- req.Params.URL
			go func() { // the user's browser
				c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := c.Get(req.Params.URL)
				if err == nil {
					resp.Body.Close()
					resp, err = http.Get(resp.Header.Get("Location"))
				}
				if err != nil {
					t.Errorf("the browser: %v", err)
					return
				}
				resp.Body.Close()
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{token: g.token, base: http.DefaultTransport}}, MaxRetries: -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, isErr := callText(ctx, t, cs, "whoami", map[string]any{}); isErr || got != "machine client unused" {
		t.Fatalf("the held call: %q (error %v)\nhost log:\n%s", got, isErr, h.log())
	}
	select {
	case u := <-shown:
		if pu, _ := url.Parse(u); pu == nil || !slices.Contains(strings.Fields(pu.Query().Get("scope")), "write") {
			t.Errorf("the elicitation's URL %q does not ask for scope write", u)
		}
	default:
		t.Fatal("the client was not shown the step-up's URL")
	}
}
