package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
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
	// Without --stored-auth-only and without a terminal, the inspector
	// (2.12.0, which reads no error code from a 401) stops before any
	// OAuth request too.
	cmd = exec.CommandContext(ctx, filepath.Join(npmBin, "mcp-inspector"), "--cli", rec.url,
		"--header", "Authorization: Bearer not-the-token", "--method", "tools/list")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "MCP_INSPECTOR_SECRET_STORE=memory")
	if out, err := cmd.CombinedOutput(); exitCode(err) != 3 {
		t.Errorf("inspector without --stored-auth-only: exit %d (%v), want 3\n%s", exitCode(err), err, out)
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

// agentFiles are the project-level files --write puts each agent's
// configuration in.
var agentFiles = map[string]string{
	"claude":   ".mcp.json",
	"codex":    ".codex/config.toml",
	"gemini":   ".gemini/settings.json",
	"opencode": "opencode.json",
	"vscode":   ".vscode/mcp.json",
	"cursor":   ".cursor/mcp.json",
}

// agentServer parses an agent's configuration in that agent's format and
// returns the gateway server's URL and the Authorization header as the
// agent would send it, the token reference resolved from token (VS Code's
// input: what the person types at its prompt).
func agentServer(t *testing.T, agent string, doc []byte, token string) (url, auth string) {
	t.Helper()
	if agent == "codex" {
		var cfg struct {
			MCPServers map[string]struct {
				URL               string            `toml:"url"`
				BearerTokenEnvVar string            `toml:"bearer_token_env_var"`
				HTTPHeaders       map[string]string `toml:"http_headers"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(doc), &cfg); err != nil {
			t.Fatalf("codex: the configuration is not TOML: %v\n%s", err, doc)
		}
		srv := cfg.MCPServers["mcp-gateway"]
		if srv.BearerTokenEnvVar == "MCP_GATEWAY_TOKEN" {
			return srv.URL, "Bearer " + token
		}
		return srv.URL, srv.HTTPHeaders["Authorization"]
	}
	var cfg map[string]any
	if err := json.Unmarshal(doc, &cfg); err != nil {
		t.Fatalf("%s: the configuration is not JSON: %v\n%s", agent, err, doc)
	}
	servers := map[string]string{"vscode": "servers", "opencode": "mcp"}[agent]
	if servers == "" {
		servers = "mcpServers"
	}
	m, _ := cfg[servers].(map[string]any)
	if agent == "opencode" {
		m, _ = m["servers"].(map[string]any)
	}
	srv, _ := m["mcp-gateway"].(map[string]any)
	if srv == nil {
		t.Fatalf("%s: no mcp-gateway server in %s", agent, doc)
	}
	url, _ = srv["url"].(string)
	if agent == "gemini" {
		url, _ = srv["httpUrl"].(string)
	}
	headers, _ := srv["headers"].(map[string]any)
	auth, _ = headers["Authorization"].(string)
	ref := map[string]string{
		"claude": "${MCP_GATEWAY_TOKEN}", "gemini": "${MCP_GATEWAY_TOKEN}", "opencode": "{env:MCP_GATEWAY_TOKEN}",
		"cursor": "${env:MCP_GATEWAY_TOKEN}", "vscode": "${input:mcp-gateway-token}",
	}[agent]
	return url, strings.Replace(auth, ref, token, 1)
}

// toolsThrough connects as the agent would, with url and the Authorization
// value auth, and lists the tools.
func toolsThrough(t *testing.T, url, auth string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		t.Fatalf("Authorization %q is not a bearer token", auth)
	}
	g := &gw{t: t, url: url, token: token, dir: t.TempDir()}
	return toolNames(ctx, t, g.connect(ctx))
}

// Configs for the agents people use (issue 24): `sandbox connect NAME
// --agent A` prints what each agent needs, in its own format, referencing
// the token through an environment variable (VS Code: its password
// input); the configuration, with the token the person supplies, really
// reaches the sandbox. --write merges it into the agent's project file in
// the current directory; --inline-token writes the token there, 0600.
func TestAuth24SandboxConnectAgents(t *testing.T) {
	h := startHost(t, t.TempDir())
	out := h.mustCLI("", "sandbox", "create", "agent-1", "--json")
	var created struct{ Token, URL string }
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	connect := func(dir, stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(gatewayBin, append([]string{"sandbox", "connect", "agent-1"}, args...)...)
		cmd.Env = append(os.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), exitCode(err)
	}
	for _, agent := range []string{"claude", "codex", "gemini", "opencode", "vscode", "cursor"} {
		t.Run(agent, func(t *testing.T) {
			doc, notes, code := connect(t.TempDir(), "", "--agent", agent)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, doc, notes)
			}
			if strings.Contains(doc, created.Token) || strings.Contains(notes, created.Token) {
				t.Errorf("the token is printed, though the host keeps only its hash:\n%s%s", doc, notes)
			}
			url, auth := agentServer(t, agent, []byte(doc), created.Token)
			if url != created.URL {
				t.Errorf("URL %q, want the sandbox's %q", url, created.URL)
			}
			if names := toolsThrough(t, url, auth); !slices.Contains(names, "mcp-find") {
				t.Errorf("through %s's configuration: tools %v, want the dynamic sandbox's mcp-find", agent, names)
			}
			if !strings.Contains(notes, agentFiles[agent]) {
				t.Errorf("the notes do not say where the file goes (%s):\n%s", agentFiles[agent], notes)
			}
			if agent != "vscode" && !strings.Contains(notes, "export MCP_GATEWAY_TOKEN=") {
				t.Errorf("the notes do not say how the token reaches the agent:\n%s", notes)
			}
			if agent == "claude" && !strings.Contains(notes, "claude mcp add --transport http --scope project mcp-gateway "+created.URL+" --header 'Authorization: Bearer ${MCP_GATEWAY_TOKEN}'") {
				t.Errorf("no claude mcp add command:\n%s", notes)
			}

			// --write, into a project that has a configuration already.
			dir := t.TempDir()
			path := filepath.Join(dir, agentFiles[agent])
			os.MkdirAll(filepath.Dir(path), 0o755)
			before := `{"mcpServers": {"other": {"command": "x"}}, "servers": {"other": {"command": "x"}}, "mcp": {"servers": {"other": {"type": "local", "command": ["x"]}}}}`
			if agent == "codex" {
				before = "[mcp_servers.other]\ncommand = \"x\"\n"
			}
			os.WriteFile(path, []byte(before), 0o644)
			if out, errOut, code := connect(dir, "", "--agent", agent, "--write"); code != 0 || !strings.Contains(out, "wrote server \"mcp-gateway\" to "+path) {
				t.Fatalf("--write: exit %d\n%s%s", code, out, errOut)
			}
			written, _ := os.ReadFile(path)
			if url, auth := agentServer(t, agent, written, created.Token); url != created.URL || !slices.Contains(toolsThrough(t, url, auth), "mcp-find") {
				t.Errorf("the written %s does not reach the sandbox:\n%s", path, written)
			}
			if !strings.Contains(string(written), "other") {
				t.Errorf("--write dropped the file's other server:\n%s", written)
			}

			// --inline-token: the token in the file, which is 0600.
			dir = t.TempDir()
			if out, errOut, code := connect(dir, created.Token+"\n", "--agent", agent, "--write", "--inline-token"); code != 0 {
				t.Fatalf("--inline-token: exit %d\n%s%s", code, out, errOut)
			}
			path = filepath.Join(dir, agentFiles[agent])
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s holds the token with mode %v; want 0600, never world-readable", path, fi.Mode().Perm())
			}
			written, _ = os.ReadFile(path)
			if url, auth := agentServer(t, agent, written, "not-used"); auth != "Bearer "+created.Token || !slices.Contains(toolsThrough(t, url, auth), "mcp-find") {
				t.Errorf("--inline-token wrote Authorization %q:\n%s", auth, written)
			}
		})
	}
	if _, errOut, code := connect(t.TempDir(), "", "--agent", "emacs"); code != 2 || !strings.Contains(errOut, `unknown agent "emacs": --agent takes one of claude, codex, gemini, opencode, vscode, cursor`) {
		t.Errorf("unknown agent: exit %d, %q", code, errOut)
	}
	cmd := exec.Command(gatewayBin, "sandbox", "connect", "nobody", "--agent", "claude")
	cmd.Env = append(os.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
	if out, err := cmd.CombinedOutput(); exitCode(err) != 1 || !strings.Contains(string(out), `no sandbox "nobody": mcp-gateway sandbox ls lists them`) {
		t.Errorf("unknown sandbox: exit %d, %q", exitCode(err), out)
	}
}

// The sandbox launcher's equivalent: `--agent A` prints, after the ready
// line, agent A's configuration for the gateway it started, and says how
// to take the token from the token file.
func TestAuth24LauncherAgent(t *testing.T) {
	g := newGW(t)
	// Launched as gw.launch does, but its stdout holds more than the
	// ready line.
	cmd := exec.Command(gatewayBin, "--config", fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()),
		"--host", "127.0.0.1", "--port", "0", "--token-file", g.tokenFile(), "--pid-file", g.pidFile(), "--log-file", g.logFile(),
		"--catalog-file", filepath.Join(g.dir, "none.json"), "--agent", "codex")
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+g.token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	g.stdout, g.stderr = stdout.String(), stderr.String()
	ready, doc, _ := strings.Cut(g.stdout, "\n")
	m := readyLine.FindStringSubmatch(ready + "\n")
	if err != nil || m == nil {
		t.Fatalf("launcher: %v; first line %q, want the ready line\nstderr: %s\nlog: %s", err, ready, g.stderr, g.log())
	}
	g.port, _ = strconv.Atoi(m[1])
	g.pid, _ = strconv.Atoi(m[2])
	g.url = fmt.Sprintf("http://127.0.0.1:%d/mcp", g.port)
	t.Cleanup(g.stop)
	url, auth := agentServer(t, "codex", []byte(doc), g.token)
	if url != g.url {
		t.Errorf("codex url %q, want %q", url, g.url)
	}
	if names := toolsThrough(t, url, auth); !slices.Contains(names, "echo") {
		t.Errorf("through the printed configuration: %v", names)
	}
	if want := `export MCP_GATEWAY_TOKEN="$(cat ` + g.tokenFile() + `)"`; !strings.Contains(g.stderr, want) {
		t.Errorf("stderr does not say how to take the token (%s):\n%s", want, g.stderr)
	}
	if strings.Contains(g.stdout+g.stderr, g.token) {
		t.Errorf("the launcher printed the token")
	}
	bad := newGW(t)
	bad.launch(fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()), "--agent", "emacs")
	if bad.exit != 2 || !strings.Contains(bad.stderr, `unknown agent "emacs"`) {
		t.Errorf("--agent emacs: exit %d, stderr %q; want 2 before anything starts", bad.exit, bad.stderr)
	}
	if _, err := os.Stat(bad.tokenFile()); err == nil {
		t.Errorf("--agent emacs wrote the token file")
	}
}

// scopedAS is an authorization server listing the scopes it supports
// (read, write, offline_access) with an MCP server behind it whose
// resource metadata lists read and write: what an authorization asked for
// is recorded. It grants dynamic registration (public clients) and one
// pre-registered confidential client, "confidential" with secret
// "conf-s3cret" (client_secret_basic).
type scopedAS struct {
	url    string // the MCP endpoint
	bare   string // an MCP endpoint without resource metadata (no discovery leads to the authorization server)
	issuer string
	mu     sync.Mutex
	asked  []string // each authorization request's scope parameter ("<none>" when absent)
	basic  []string // the token requests' client_secret_basic client ids
	tokens map[string]bool
}

func startScopedAS(t *testing.T) *scopedAS {
	t.Helper()
	s := &scopedAS{tokens: map[string]bool{}}
	asMux := http.NewServeMux()
	as := httptest.NewServer(asMux)
	t.Cleanup(as.Close)
	asMux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize", "token_endpoint": as.URL + "/token",
			"registration_endpoint": as.URL + "/register", "response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "none"}, "authorization_response_iss_parameter_supported": true,
			"scopes_supported": []string{"read", "write", "offline_access"}})
	})
	asMux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"client_id":"dcr-client","token_endpoint_auth_method":"none"}`)
	})
	asMux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		if _, ok := q["scope"]; ok {
			s.asked = append(s.asked, q.Get("scope"))
		} else {
			s.asked = append(s.asked, "<none>")
		}
		s.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		to.RawQuery = url.Values{"code": {"code-" + q.Get("client_id")}, "state": {q.Get("state")}, "iss": {as.URL}}.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	asMux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		id, secret, basic := r.BasicAuth()
		if basic {
			s.mu.Lock()
			s.basic = append(s.basic, id)
			s.mu.Unlock()
		}
		switch {
		case r.PostForm.Get("code") == "code-confidential" && (!basic || id != "confidential" || secret != "conf-s3cret"):
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"invalid_client","error_description":"the confidential client must authenticate"}`)
			return
		case r.PostForm.Get("grant_type") != "authorization_code":
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"unsupported_grant_type"}`)
			return
		}
		s.mu.Lock()
		tok := fmt.Sprintf("scoped-token-%d", len(s.tokens))
		s.tokens[tok] = true
		scope := s.asked[len(s.asked)-1]
		s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": strings.TrimPrefix(scope, "<none>")})
	})

	server := mcp.NewServer(&mcp.Implementation{Name: "scoped", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello", Description: "says hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, struct{}{}, nil
	})
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	s.url = rs.URL + "/mcp"
	prm := rs.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.url, AuthorizationServers: []string{as.URL}, ScopesSupported: []string{"read", "write"}}))
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.tokens[token] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	mux.Handle("/bare/mcp", auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	s.bare, s.issuer = rs.URL+"/bare/mcp", as.URL
	return s
}

func (s *scopedAS) lastAsked() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.asked) == 0 {
		return ""
	}
	return s.asked[len(s.asked)-1]
}

func (s *scopedAS) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked)
}

// authStatusJSON is `auth status [NAME] --json`.
func authStatusJSON(t *testing.T, h *hostGW, args ...string) []map[string]any {
	t.Helper()
	var list []map[string]any
	out := h.mustCLI("", append([]string{"auth", "status", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("auth status --json: %v\n%s", err, out)
	}
	return list
}

func joined(v any) string {
	list, _ := v.([]any)
	var s []string
	for _, x := range list {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, " ")
}

// OAuth flags as sbx users expect them (issue 24, stumble 7), against a
// real authorization server: server add's --scope asked for in place of
// the server's (not "offline_access read write"); auth --scope and
// --no-scope for one run; a scope the server does not support refused
// before the browser; auth status NAME showing that server alone with the
// scopes asked for and supported; auth --all; server rm taking the OAuth
// token with it; and the confidential client's secret stored first as
// mcp:<server>:client_secret (sbx's name and order), shown by inspect and
// sent to the token endpoint.
func TestAuth24OAuthFlags(t *testing.T) {
	as := startScopedAS(t)
	h := startHost(t, t.TempDir())
	h.mustCLI("", "server", "add", "prot", "--url", as.url, "--allow-private-address", "--scope", "read", "--skip-auth")
	h.mustCLI("", "server", "add", "other", "--url", as.url, "--allow-private-address", "--skip-auth")

	out := authCLI(t, h, "prot")
	if got := as.lastAsked(); got != "read" {
		t.Errorf("server add --scope read, then auth: the authorization asked for %q; want %q (the person's scopes first, as sbx)", got, "read")
	}
	if !strings.Contains(out, `mcp server "prot" is authorized`) || !strings.Contains(out, "scopes: read") {
		t.Errorf("auth prot printed:\n%s", out)
	}

	st := authStatusJSON(t, h, "prot")
	if len(st) != 1 || st[0]["server"] != "prot" || st[0]["authorized"] != true || joined(st[0]["requested_scopes"]) != "read" ||
		joined(st[0]["supported_scopes"]) != "read write offline_access" {
		t.Errorf("auth status prot --json: %v; want prot alone, requested read, supported read write offline_access", st)
	}
	table := h.mustCLI("", "auth", "status", "prot")
	if !strings.Contains(table, "REQUESTED") || !strings.Contains(table, "SUPPORTED") || strings.Contains(table, "other") || !strings.Contains(table, "read write offline_access") {
		t.Errorf("auth status prot:\n%s", table)
	}
	// Before its authorization, a server's status shows the scopes its
	// metadata supports, discovered now.
	if st := authStatusJSON(t, h, "other"); len(st) != 1 || st[0]["authorized"] != false || joined(st[0]["supported_scopes"]) != "read write offline_access" {
		t.Errorf("auth status other (not authorized): %v", st)
	}
	h.failCLI(`mcp server "nope" is not registered`, "", "auth", "status", "nope")

	authCLI(t, h, "prot", "--scope", "write")
	if got := as.lastAsked(); got != "write" {
		t.Errorf("auth --scope write asked for %q", got)
	}
	authCLI(t, h, "prot", "--no-scope")
	if got := as.lastAsked(); got != "<none>" {
		t.Errorf("auth --no-scope asked for %q, want no scope parameter", got)
	}
	asked := as.count()
	h.failCLI(`scope "admin" is not one the server supports (read write offline_access)`, "", "auth", "prot", "--scope", "admin")
	if as.count() != asked {
		t.Errorf("an unsupported scope still sent the person to the authorization server")
	}
	h.failCLI("give --scope or --no-scope, not both", "", "auth", "prot", "--scope", "read", "--no-scope")

	// auth --all authorizes every server that wants OAuth.
	out = authCLI(t, h, "--all")
	for _, name := range []string{"prot", "other"} {
		if !strings.Contains(out, fmt.Sprintf("mcp server %q is authorized", name)) {
			t.Errorf("auth --all did not authorize %s:\n%s", name, out)
		}
	}
	for _, s := range authStatusJSON(t, h) {
		if s["authorized"] != true {
			t.Errorf("after auth --all: %v", s)
		}
	}

	// server rm takes the OAuth token with it: registered again, the
	// server is not authorized.
	out = h.mustCLI("", "server", "rm", "other")
	if !strings.Contains(out, "its OAuth tokens were removed with it (other)") {
		t.Errorf("server rm printed %q", out)
	}
	if ls := h.mustCLI("", "secret", "ls"); strings.Contains(ls, "mcp:other:") {
		t.Errorf("after server rm, secret ls still lists:\n%s", ls)
	}
	h.mustCLI("", "server", "add", "other", "--url", as.url, "--allow-private-address", "--skip-auth")
	if st := authStatusJSON(t, h, "other"); st[0]["authorized"] != false {
		t.Errorf("other registered again after server rm is authorized: %v", st)
	}

	// sbx's order: the client secret first, then server add --client-id.
	out = h.mustCLI("conf-s3cret", "secret", "set", "mcp:conf:client_secret")
	if !strings.Contains(out, `mcp server "conf" is not registered yet`) || !strings.Contains(out, "secret mcp:conf:client_secret stored") {
		t.Errorf("secret set before server add printed %q", out)
	}
	h.mustCLI("", "server", "add", "conf", "--url", as.url, "--allow-private-address", "--client-id", "confidential", "--skip-auth")
	var info struct {
		Secrets []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(h.mustCLI("", "server", "inspect", "conf")), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Secrets) != 1 || info.Secrets[0].Name != "mcp:conf:client_secret" || info.Secrets[0].Status != "set (the OAuth client's secret)" {
		t.Errorf("server inspect conf: secrets %+v; want mcp:conf:client_secret set", info.Secrets)
	}
	out = authCLI(t, h, "conf")
	as.mu.Lock()
	basic := slices.Clone(as.basic)
	as.mu.Unlock()
	if !strings.Contains(out, `mcp server "conf" is authorized`) || !slices.Contains(basic, "confidential") {
		t.Errorf("auth conf: %s\ntoken requests authenticated as %v; want the confidential client with its secret", out, basic)
	}
	// The older name still works, and storing it warns of nothing.
	h.mustCLI("", "server", "add", "conf2", "--url", as.url, "--allow-private-address", "--client-id", "confidential", "--skip-auth")
	if out := h.mustCLI("conf-s3cret", "secret", "set", "mcp:conf2:client-secret"); strings.Contains(out, "not used") {
		t.Errorf("mcp:conf2:client-secret: %q", out)
	}
	if out := authCLI(t, h, "conf2"); !strings.Contains(out, `mcp server "conf2" is authorized`) {
		t.Errorf("auth conf2 with mcp:conf2:client-secret:\n%s", out)
	}
}

// --oauth-authorization-server FILE|URL: a server whose metadata does not
// lead to its authorization server (no resource metadata) is authorized
// with the authorization server's metadata the person gives, as a file (in
// the caller's directory) or a URL.
func TestAuth24OAuthAuthorizationServer(t *testing.T) {
	as := startScopedAS(t)
	h := startHost(t, t.TempDir())
	meta := fmt.Sprintf(`{"issuer": %q, "authorization_endpoint": %q, "token_endpoint": %q, "registration_endpoint": %q,
		"response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"], "authorization_response_iss_parameter_supported": true,
		"token_endpoint_auth_methods_supported": ["none"], "scopes_supported": ["read", "write"]}`,
		as.issuer, as.issuer+"/authorize", as.issuer+"/token", as.issuer+"/register")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "as.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	// A relative file name, resolved in the caller's directory.
	cmd := exec.Command(gatewayBin, "server", "add", "bare", "--url", as.bare, "--allow-private-address", "--oauth-authorization-server", "as.json", "--scope", "read", "--skip-auth")
	cmd.Env = append(os.Environ(), "MCP_GATEWAY_STATE_DIR="+h.state)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "it wants OAuth") {
		t.Fatalf("server add --oauth-authorization-server as.json: %v\n%s\nhost log:\n%s", err, out, h.log())
	}
	if out := authCLI(t, h, "bare"); !strings.Contains(out, `mcp server "bare" is authorized (issuer `+as.issuer) || as.lastAsked() != "read" {
		t.Errorf("auth bare: asked %q\n%s", as.lastAsked(), out)
	}
	if st := authStatusJSON(t, h, "bare"); st[0]["authorized"] != true || joined(st[0]["supported_scopes"]) != "read write" {
		t.Errorf("auth status bare: %v", st)
	}
	g := h.createSandbox("sb", "--static", "bare")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, isErr := callText(ctx, t, g.connect(ctx), "hello", map[string]any{}); isErr || got != "hello" {
		t.Errorf("hello through the authorized server: %q (error %v)", got, isErr)
	}

	// The metadata's URL, fetched by the daemon.
	h.mustCLI("", "server", "add", "bare2", "--url", as.bare, "--allow-private-address", "--oauth-authorization-server", as.issuer+"/.well-known/oauth-authorization-server", "--skip-auth")
	if out := authCLI(t, h, "bare2"); !strings.Contains(out, `mcp server "bare2" is authorized`) {
		t.Errorf("auth bare2:\n%s", out)
	}
	h.failCLI("fetching --oauth-authorization-server "+as.issuer+"/nowhere: HTTP 404", "", "server", "add", "bad", "--url", as.bare, "--allow-private-address",
		"--oauth-authorization-server", as.issuer+"/nowhere")
	os.WriteFile(filepath.Join(dir, "partial.json"), []byte(`{"issuer": "`+as.issuer+`", "authorization_endpoint": "`+as.issuer+`/authorize"}`), 0o644)
	h.failCLI(`mcp server "bad": --oauth-authorization-server's metadata has no token_endpoint`, "", "server", "add", "bad", "--url", as.bare, "--allow-private-address",
		"--oauth-authorization-server", filepath.Join(dir, "partial.json"))
}
