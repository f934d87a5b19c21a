package host

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// OAuth on the host: a remote server that answers 401 at registration is
// marked as wanting OAuth; a person authorizes it once with `mcp-gateway
// auth NAME` (or an agent with its <server>-authorize tool); its tokens are
// kept encrypted in the secret store, bound to the server's URL and to the
// issuer that granted them, and shared by every sandbox the server is
// attached to (one grant per server: the person who registers a server on
// the host authorizes it for the host's sandboxes), or, for a server
// registered --per-sandbox, kept per sandbox: each sandbox authorizes it
// on its own and uses its own tokens only.

// ClientSecretKey is the secret of a pre-registered confidential client:
// mcp:<server>:client_secret, sbx's name. LegacyClientSecretKey, the name
// earlier versions used, is read too.
const (
	ClientSecretKey       = "client_secret"
	LegacyClientSecretKey = "client-secret"
)

// isClientSecretKey reports whether key names a confidential client's secret.
func isClientSecretKey(key string) bool {
	return key == ClientSecretKey || key == LegacyClientSecretKey
}

// AuthOptions are the person's choices for one authorization (`auth
// --scope`, `auth --no-scope`): Scopes, when set, are asked for alone, in
// place of the registration's; NoScope asks for none.
type AuthOptions struct {
	Scopes  []string
	NoScope bool
}

// authFlowTimeout bounds how long an authorization waits for the person.
const authFlowTimeout = 10 * time.Minute

type hostOAuth struct {
	once  sync.Once
	store *oauth.Versioned

	mu    sync.Mutex
	flows map[string]*authFlow // by grant (oauth.GrantKey)
}

// authFlow is an authorization in progress.
type authFlow struct {
	url string
	// elicitation is the id of the URL elicitation that showed url to a
	// 2026-07-28 client (its authorize tool's input_required result).
	elicitation string
	done        chan struct{}
	err         error
	rec         *oauth.Record
}

// tokenStore is the host's OAuth token store, in the secret store.
func (h *Host) tokenStore() *oauth.Versioned {
	h.oauth.once.Do(func() {
		h.oauth.store = &oauth.Versioned{Store: oauth.SecretStore{S: h.secrets}}
		h.oauth.flows = map[string]*authFlow{}
	})
	return h.oauth.store
}

// grantSandbox is the sandbox whose own grant of srv an authorization for
// sandbox (given by `auth --sandbox` or the sandbox's authorize tool) is:
// sandbox for a server registered --per-sandbox, "" (the server's grant)
// otherwise. Called with h.mu held.
func (h *Host) grantSandbox(srv *registry.Server, sandbox string, explicit bool) (string, error) {
	if !srv.PerSandbox {
		if explicit && sandbox != "" {
			return "", fmt.Errorf("mcp server %q has one OAuth grant shared by its sandboxes, not one per sandbox; authorize it without --sandbox "+
				"(or register it again with --per-sandbox --replace)", srv.Name)
		}
		return "", nil
	}
	if sandbox == "" {
		return "", fmt.Errorf("mcp server %q keeps an OAuth grant per sandbox (--per-sandbox): name the sandbox, `mcp-gateway auth %s --sandbox SANDBOX`", srv.Name, srv.Name)
	}
	if h.state.Sandboxes[sandbox] == nil {
		return "", h.unknownSandbox(sandbox)
	}
	return sandbox, nil
}

// grantStore is the store of the grants used in sandbox: the host's
// (servers' grants), with a sandbox's own grants under their own keys.
func (h *Host) grantStore(sandbox string) oauth.Store {
	if sandbox == "" {
		return h.tokenStore()
	}
	return oauth.SandboxStore{Store: h.tokenStore(), Sandbox: sandbox}
}

// oauthClient makes a server's requests to its authorization server,
// through the server's address checks.
func (h *Host) oauthClient(srv *registry.Server) *http.Client {
	return &http.Client{Transport: upstream.NewHTTPClient(srv.Name, h.guard(srv)).Transport, Timeout: 30 * time.Second, CheckRedirect: oauth.CheckRedirect}
}

// detectOAuth probes a remote server being registered without headers: a
// 401 (or 403) to a request without credentials means it wants OAuth. A
// --client-id says so without a probe's answer.
func (h *Host) detectOAuth(ctx context.Context, srv *registry.Server, req ServerRequest) {
	pinned := req.OAuthIssuer != "" || req.OAuthTokenEndpoint != ""
	if srv.URL == "" || (len(srv.Headers) > 0 && req.ClientID == "" && !pinned) {
		// Headers (an API key, a bearer secret) are how this server is
		// reached; a probe without them would take their 401 for OAuth.
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, resp, err := oauth.Probe(pctx, srv.Name, srv.URL, h.oauthClient(srv))
	if err != nil && req.ClientID == "" && !pinned {
		return // no 401: the server is used without OAuth (a --client-id or --oauth-issuer says it wants it)
	}
	if resp != nil {
		resp.Body.Close()
	}
	o := &mcpconfig.OAuth{Grant: mcpconfig.GrantAuthorizationCode, ClientID: req.ClientID, ClientMetadataURL: req.ClientMetadataURL, Scopes: req.Scopes,
		Issuer: req.OAuthIssuer, TokenEndpoint: req.OAuthTokenEndpoint}
	if req.ClientID != "" {
		o.ClientSecret = "${" + ClientSecretKey + "}"
	}
	srv.OAuth = o
}

// AuthStart begins the authorization of a registered server by a person:
// it returns the URL to open; the flow completes when the authorization
// server redirects the browser to the gateway's loopback callback (see
// AuthWait). An authorization already in progress for the server is
// replaced. sandbox names the sandbox whose own grant to authorize, for a
// server registered --per-sandbox (and must be "" for another).
func (h *Host) AuthStart(ctx context.Context, name, sandbox string) (string, error) {
	return h.AuthStartWith(ctx, name, sandbox, AuthOptions{})
}

// AuthStartWith is AuthStart with the person's scopes for this
// authorization.
func (h *Host) AuthStartWith(ctx context.Context, name, sandbox string, opt AuthOptions) (string, error) {
	if opt.NoScope && len(opt.Scopes) > 0 {
		return "", fmt.Errorf("mcp server %q: give --scope or --no-scope, not both", name)
	}
	u, _, err := h.authBegin(ctx, name, sandbox, true, false, opt)
	return u, err
}

func (h *Host) authStart(ctx context.Context, name, sandbox string, explicit bool) (string, error) {
	u, _, err := h.authBegin(ctx, name, sandbox, explicit, false, AuthOptions{})
	return u, err
}

// authBegin starts an authorization and returns its URL and flow. A
// step-up's flow (stepUp) does not restart the server's instances when it
// completes: a call is waiting on one of them, whose client reads the new
// grant from the store.
func (h *Host) authBegin(ctx context.Context, name, sandbox string, explicit, stepUp bool, opt AuthOptions) (string, *authFlow, error) {
	cfg, sandbox, err := h.authFlowConfig(name, sandbox, explicit, opt)
	if err != nil {
		return "", nil, err
	}
	lb, err := oauth.NewLoopback(cmp.Or(h.opts.OAuthCallback, "127.0.0.1:0"))
	if err != nil {
		return "", nil, fmt.Errorf("mcp server %q: %w", name, err)
	}
	cfg.RedirectURL = lb.RedirectURL()
	urls := make(chan string, 1)
	cfg.Fetch = lb.Fetcher(func(u string) { urls <- u })
	key := oauth.GrantKey(name, sandbox)
	f := &authFlow{done: make(chan struct{})}
	h.tokenStore()
	h.oauth.mu.Lock()
	h.oauth.flows[key] = f
	h.oauth.mu.Unlock()
	go func() {
		defer lb.Close()
		h.runAuthFlow(f, cfg, sandbox, key, stepUp)
	}()
	select {
	case u := <-urls:
		h.oauth.mu.Lock()
		f.url = u
		h.oauth.mu.Unlock()
		return u, f, nil
	case <-f.done:
		return "", nil, f.err
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

// authFlowConfig is what an authorization of the named server needs: its
// URL, HTTP client, client identity and scopes, and whether it steps up an
// existing grant; and the sandbox the grant is for ("" for the server's).
func (h *Host) authFlowConfig(name, sandbox string, explicit bool, opt AuthOptions) (oauth.FlowConfig, string, error) {
	h.mu.Lock()
	srv := h.state.Servers[name]
	if srv == nil {
		h.mu.Unlock()
		return oauth.FlowConfig{}, "", h.unknownServer(name)
	}
	if !srv.Remote() {
		h.mu.Unlock()
		return oauth.FlowConfig{}, "", fmt.Errorf("mcp server %q is a local command; OAuth is for remote servers", name)
	}
	sandbox, err := h.grantSandbox(srv, sandbox, explicit)
	if err != nil {
		h.mu.Unlock()
		return oauth.FlowConfig{}, "", err
	}
	spec, _ := h.instanceSpec(srv, "", nil)
	lookup := h.secretLookup(srv)
	client := h.oauthClient(srv)
	asMeta := srv.OAuthAuthorizationServer
	h.mu.Unlock()

	cfg := oauth.FlowConfig{Server: name, URL: srv.URL, Client: client}
	if spec.OAuth == nil {
		spec.OAuth = &mcpconfig.OAuth{Grant: mcpconfig.GrantAuthorizationCode}
	}
	o := *spec.OAuth
	if o.ClientSecret != "" {
		if v, ok := lookup(ClientSecretKey); ok {
			o.ClientSecret = v
		} else {
			o.ClientSecret = "" // a public pre-registered client
		}
	}
	cfg.ClientID, cfg.ClientSecret, cfg.ClientMetadataURL, cfg.Scopes = o.ClientID, o.ClientSecret, o.ClientMetadataURL, o.Scopes
	switch {
	case opt.NoScope:
		cfg.Scopes, cfg.NoScope, cfg.ExactScopes = nil, true, true
	case len(opt.Scopes) > 0:
		cfg.Scopes, cfg.ExactScopes = opt.Scopes, true
	}
	cfg.Issuer, cfg.TokenEndpoint = o.Issuer, o.TokenEndpoint
	if len(asMeta) > 0 {
		meta, err := oauth.ParseAuthServerMetadata(name, asMeta)
		if err != nil {
			return oauth.FlowConfig{}, "", err
		}
		cfg.AuthServer = meta
	}
	if rec, _ := h.grantStore(sandbox).Load(name, srv.URL); rec != nil {
		cfg.StepUp = rec.StepUp() // the server asked for more scope since: a step-up
	}
	return cfg, sandbox, nil
}

// runAuthFlow runs one authorization to its end (within authFlowTimeout,
// or the daemon's shutdown), stores the grant and closes f.done. A step-up
// ends there; a first authorization returns once the server's instances
// use the grant and its tools are listed, so what `auth` reports has
// happened.
func (h *Host) runAuthFlow(f *authFlow, cfg oauth.FlowConfig, sandbox, key string, stepUp bool) {
	name := cfg.Server
	fctx, cancel := context.WithTimeout(context.Background(), authFlowTimeout)
	defer cancel()
	go func() { // the daemon's shutdown ends a flow still waiting
		select {
		case <-h.closed:
			cancel()
		case <-fctx.Done():
		}
	}()
	rec, err := oauth.Authorize(fctx, cfg)
	if err == nil {
		err = h.grantStore(sandbox).Save(name, cfg.URL, rec)
	}
	f.rec, f.err = rec, err
	if err != nil {
		h.log.Warn(fmt.Sprintf("mcp server %q: authorization failed", name), "sandbox", sandbox, "err", err)
		close(f.done)
		return
	}
	h.log.Info(fmt.Sprintf("mcp server %q authorized", name), "sandbox", sandbox, "issuer", rec.Issuer, "scopes", rec.Scopes)
	if stepUp {
		close(f.done)
		h.oauth.mu.Lock()
		if h.oauth.flows[key] == f {
			delete(h.oauth.flows, key)
		}
		h.oauth.mu.Unlock()
		return
	}
	h.authorized(name, sandbox)
	close(f.done)
}

// stepUpWait bounds how long a call waits for the person to authorize a
// step-up (the call's own timeout may end it sooner).
const stepUpWait = 3 * time.Minute

// stepUp asks the person for a wider grant of a server (for grant: a
// sandbox's own, or "" the shared one) while a call waits: it starts the
// authorization (or joins one in progress), logs its URL (shown by `auth
// status` too) and waits for it, at most stepUpWait and within the
// call's ctx. Its instances are not restarted: the waiting call is retried
// with the new token. A token is never logged.
func (h *Host) stepUp(ctx context.Context, name, grant string, scopes []string) error {
	wait := stepUpWait
	if dl, ok := ctx.Deadline(); ok {
		// End before the call's own bound, so the call fails saying what
		// to do rather than that the server did not answer in time.
		left := time.Until(dl)
		if left -= min(2*time.Second, left/10); left < wait {
			wait = left
		}
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	f := h.flowOf(name, grant)
	u := ""
	if f != nil {
		h.oauth.mu.Lock()
		u = f.url
		h.oauth.mu.Unlock()
		select {
		case <-f.done:
			f = nil // over: a new authorization asks for the new scopes
		default:
		}
	}
	if f == nil || u == "" {
		var err error
		if u, f, err = h.authBegin(ctx, name, grant, false, true, AuthOptions{}); err != nil {
			return err
		}
	}
	h.log.Warn(fmt.Sprintf("mcp server %q asks for more scope: a call waits for the person to authorize it; open this URL in a browser on this host", name),
		"url", u, "sandbox", grant, "scopes", scopes, "waits", wait.Round(time.Second))
	// A session-era client that declared URL elicitation is shown the URL
	// too (its user opens it from there); the call waits for the
	// authorization, whatever the answer.
	params, _ := json.Marshal(map[string]any{
		"mode": "url", "url": u, "elicitationId": "step-up-" + name + "-" + rand.Text(),
		"message": fmt.Sprintf("The MCP server %q asks for more permissions (%s): sign in to approve them; the call goes on once you have.", name, strings.Join(scopes, " ")),
		"_meta":   map[string]any{gateway.SessionEraOnlyMeta: true},
	})
	go func() {
		if res, werr, ok := upstream.AskClient(ctx, "elicitation/create", params); ok {
			action, _ := wire.GetString(res, "action")
			h.log.Debug(fmt.Sprintf("mcp server %q: the step-up's URL elicitation", name), "action", action, "err", werr)
		}
	}()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("nobody authorized it within %s (the URL stays open until the authorization expires: `mcp-gateway auth status` shows it)", wait.Round(time.Second))
	}
}

// AuthWait waits for the authorization of a server begun by AuthStart
// (for sandbox, as given to AuthStart).
func (h *Host) AuthWait(ctx context.Context, name, sandbox string) (*oauth.Status, error) {
	h.mu.Lock()
	if srv := h.state.Servers[name]; srv != nil && !srv.PerSandbox {
		sandbox = ""
	}
	h.mu.Unlock()
	key := oauth.GrantKey(name, sandbox)
	h.tokenStore()
	h.oauth.mu.Lock()
	f := h.oauth.flows[key]
	h.oauth.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("mcp server %q: no authorization in progress; start one with `mcp-gateway auth %s`", name, name)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp server %q: gave up waiting for the authorization: %w", name, ctx.Err())
	}
	h.oauth.mu.Lock()
	if h.oauth.flows[key] == f {
		delete(h.oauth.flows, key)
	}
	h.oauth.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	st := f.rec.Status(name)
	st.Sandbox = sandbox
	return &st, nil
}

// grantUsers are the running sandboxes that use the grant of server for
// sandbox: the server's attached sandboxes for its shared grant (""), that
// sandbox alone for its own. Called with h.mu held.
func (h *Host) grantUsers(server, grant string) []*sandbox {
	users := h.attachedTo(server)
	if grant == "" {
		return users
	}
	return slices.DeleteFunc(users, func(sb *sandbox) bool { return sb.name != grant })
}

// authorized restarts the server's instances in the sandboxes that use
// the new grant, so its tools appear (with list_changed), and lists its
// tools for mcp-find.
func (h *Host) authorized(name, sandbox string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.startTimeout())
	defer cancel()
	h.mu.Lock()
	for _, sb := range h.grantUsers(name, sandbox) {
		if err := h.restartInstance(ctx, sb, name); err != nil {
			h.log.Warn(fmt.Sprintf("sandbox %q: mcp server %q did not start after its authorization", sb.name, name), "err", err)
		}
	}
	h.mu.Unlock()
	if err := h.listToolsAs(ctx, name, sandbox); err != nil {
		h.log.Warn(fmt.Sprintf("mcp server %q: its tools could not be listed after its authorization", name), "err", err)
	}
}

func (h *Host) startTimeout() time.Duration {
	if h.opts.StartTimeout > 0 {
		return h.opts.StartTimeout
	}
	return 60 * time.Second
}

// AuthStatus describes the authorization of every remote server that
// wants OAuth (or has a token): never a token. A server registered
// --per-sandbox has one line per sandbox: each sandbox it is attached to,
// and each that holds a grant of it.
func (h *Host) AuthStatus() ([]oauth.Status, error) {
	type grant struct {
		srv     *registry.Server
		sandbox string
	}
	h.mu.Lock()
	var list []grant
	for _, name := range sortedKeys(h.state.Servers) {
		srv := h.state.Servers[name]
		if !srv.Remote() {
			continue
		}
		if !srv.PerSandbox {
			list = append(list, grant{srv, ""})
			continue
		}
		for _, sb := range sortedKeys(h.state.Sandboxes) {
			if slices.Contains(h.state.Sandboxes[sb].Servers, name) || h.secrets.Has(oauth.SecretName(name, sb)) {
				list = append(list, grant{srv, sb})
			}
		}
	}
	h.mu.Unlock()
	out := []oauth.Status{}
	for _, g := range list {
		rec, err := h.grantStore(g.sandbox).Load(g.srv.Name, g.srv.URL)
		if err != nil {
			out = append(out, oauth.Status{Server: g.srv.Name, Sandbox: g.sandbox, Error: err.Error()})
			continue
		}
		if rec == nil && g.srv.OAuth == nil {
			continue
		}
		st := rec.Status(g.srv.Name)
		st.Sandbox = g.sandbox
		st.Pending = h.pending(g.srv.Name, g.sandbox)
		out = append(out, st)
	}
	return out, nil
}

// AuthStatusOf is AuthStatus for one server (`auth status NAME`): its
// grants, each with the scopes it asked for (before an authorization,
// those the registration will ask for) and those the server supports
// (before an authorization, discovered now, at best effort).
func (h *Host) AuthStatusOf(ctx context.Context, name string) ([]oauth.Status, error) {
	h.mu.Lock()
	srv := h.state.Servers[name]
	h.mu.Unlock()
	if srv == nil {
		return nil, h.unknownServer(name)
	}
	all, err := h.AuthStatus()
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(all, func(s oauth.Status) bool { return s.Server != name })
	if len(out) == 0 {
		return nil, fmt.Errorf("mcp server %q does not use OAuth: it answered without a token when it was registered (register it again with --client-id or --oauth-issuer if it does)", name)
	}
	var supported []string
	for i := range out {
		st := &out[i]
		if !st.Authorized && srv.OAuth != nil {
			st.Requested = srv.OAuth.Scopes
		}
		if len(st.Supported) == 0 {
			if supported == nil {
				supported = h.discoverScopes(ctx, srv)
			}
			st.Supported = supported
		}
	}
	return out, nil
}

// discoverScopes asks a server's metadata which scopes it supports (RFC
// 8414's scopes_supported, else its resource metadata's); none on any
// failure.
func (h *Host) discoverScopes(ctx context.Context, srv *registry.Server) []string {
	if len(srv.OAuthAuthorizationServer) > 0 {
		if meta, err := oauth.ParseAuthServerMetadata(srv.Name, srv.OAuthAuthorizationServer); err == nil && len(meta.ScopesSupported) > 0 {
			return meta.ScopesSupported
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	client := h.oauthClient(srv)
	_, resp, err := oauth.Probe(ctx, srv.Name, srv.URL, client)
	if err != nil {
		return []string{}
	}
	resp.Body.Close()
	d, err := oauth.Discover(ctx, srv.Name, srv.URL, resp.Header.Values("WWW-Authenticate"), client)
	if err != nil {
		return []string{}
	}
	if len(d.ASM.ScopesSupported) > 0 {
		return d.ASM.ScopesSupported
	}
	return append([]string{}, d.PRM.ScopesSupported...)
}

// pending is the URL of the authorization in progress of a grant, or "".
func (h *Host) pending(name, grant string) string {
	h.oauth.mu.Lock()
	defer h.oauth.mu.Unlock()
	f := h.oauth.flows[oauth.GrantKey(name, grant)]
	if f == nil {
		return ""
	}
	select {
	case <-f.done:
		return ""
	default:
		return f.url
	}
}

// AuthRemove forgets the tokens of a server (or of all with all): it is
// unauthorized from its next request on. For a server registered
// --per-sandbox, sandbox names the one grant to forget; "" forgets every
// sandbox's. It returns what it forgot: server, or server@sandbox
// (oauth.GrantKey).
func (h *Host) AuthRemove(name, sandbox string, all bool) ([]string, error) {
	h.mu.Lock()
	var names []string
	if all {
		for n, srv := range h.state.Servers {
			if srv.Remote() {
				names = append(names, n)
			}
		}
	} else {
		srv := h.state.Servers[name]
		if srv == nil && !h.secrets.Has(oauth.SecretName(name, "")) && (sandbox == "" || !h.secrets.Has(oauth.SecretName(name, sandbox))) {
			h.mu.Unlock()
			return nil, h.unknownServer(name)
		}
		if sandbox != "" && srv != nil && !srv.PerSandbox {
			h.mu.Unlock()
			return nil, fmt.Errorf("mcp server %q has one OAuth grant shared by its sandboxes, not one per sandbox; forget it with `mcp-gateway auth rm %s`", name, name)
		}
		names = []string{name}
	}
	// Every grant of these servers: the shared one, and each sandbox's own.
	var keys []grantRef
	for _, n := range names {
		keys = append(keys, grantRef{n, ""})
		for _, sb := range sortedKeys(h.state.Sandboxes) {
			keys = append(keys, grantRef{n, sb})
		}
	}
	h.mu.Unlock()
	if !all && sandbox != "" {
		keys = []grantRef{{name, sandbox}}
	}
	slices.SortFunc(keys, func(a, b grantRef) int { return strings.Compare(a.key(), b.key()) })
	var removed []string
	for _, g := range keys {
		if !h.secrets.Has(oauth.SecretName(g.server, g.sandbox)) {
			continue
		}
		if err := h.grantStore(g.sandbox).Remove(g.server); err != nil {
			return removed, err
		}
		removed = append(removed, g.key())
		h.restartAttached(g.server, g.sandbox) // its tools leave the sandboxes; its authorize tool stays
	}
	if !all && len(removed) == 0 {
		if sandbox != "" {
			return nil, fmt.Errorf("mcp server %q has no OAuth token for sandbox %q", name, sandbox)
		}
		return nil, fmt.Errorf("mcp server %q has no OAuth token", name)
	}
	return removed, nil
}

// forgetSandboxGrants removes a removed sandbox's own grants. Called with
// h.mu held.
func (h *Host) forgetSandboxGrants(sandbox string) {
	for _, e := range h.secrets.List() {
		if e.Key == oauth.SecretKey+"."+sandbox {
			if err := h.grantStore(sandbox).Remove(e.Server); err != nil {
				h.log.Warn(fmt.Sprintf("sandbox %q: its OAuth grant of mcp server %q could not be removed", sandbox, e.Server), "err", err)
			}
		}
	}
}

// grantRef names one grant: a server's (sandbox "") or a sandbox's own.
type grantRef struct{ server, sandbox string }

func (g grantRef) key() string { return oauth.GrantKey(g.server, g.sandbox) }

// authorizeSuffix names a server's authorize tool: <server>-authorize.
const authorizeSuffix = "-authorize"

// authorizeTool is the definition of a server's authorize tool.
func authorizeTool(server string) json.RawMessage {
	def := map[string]any{
		"name":  server + authorizeSuffix,
		"title": "Authorize " + server,
		"description": fmt.Sprintf("Authorize the gateway to use the remote MCP server %q for you (OAuth). Returns a URL the user must open in a browser "+
			"on the gateway's host to sign in and consent; once they have, %q's tools appear (tools/list_changed). Call it again to re-authorize, "+
			"e.g. after a call failed saying the server is not authorized.", server, server),
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}},
		"annotations": map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
	}
	b, _ := json.Marshal(def)
	return b
}

// authorizeTools are the <server>-authorize tools of a sandbox's servers
// that want OAuth; they stay listed once the server is authorized, to
// re-authorize it. A server registered --per-sandbox is authorized for
// the calling sandbox alone. Called with h.mu held.
func (h *Host) authorizeTools(sandbox string, servers []string) []gateway.Builtin {
	var out []gateway.Builtin
	for _, name := range servers {
		srv := h.state.Servers[name]
		if srv == nil || srv.OAuth == nil {
			continue
		}
		out = append(out, gateway.Builtin{Tool: authorizeTool(name), Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
			return h.authorizeCall(ctx, c, name, sandbox)
		}})
	}
	return out
}

// refreshBuiltins gives a running sandbox its built-in tools anew (after a
// server that wants OAuth was attached). Called with h.mu held.
func (h *Host) refreshBuiltins(sb *sandbox, servers []string) {
	if err := sb.gw.Router.SetBuiltins(append(h.builtins(sb), h.authorizeTools(sb.name, servers)...)); err != nil {
		h.log.Error("built-in tools", "err", err)
	}
}

// authorizeStatePrefix starts the requestState of the authorize tool's
// input_required result (a 2026-07-28 client's retry comes back to the
// tool with it).
const authorizeStatePrefix = "mcp-gateway-authorize."

// authorizeInputKey names the URL elicitation in that result.
const authorizeInputKey = "authorize"

// authorizeCall starts the server's authorization and gives the user its
// URL: as a URL-mode elicitation to a client that supports them (the
// client shows it to the user): asked of a session-era client during the
// call, and for a 2026-07-28 client as an input_required result whose
// retry (with the user's answer) gets the final result; and in the final
// result in any case. The flow completes in the background when the
// browser comes back.
func (h *Host) authorizeCall(ctx context.Context, c *gateway.BuiltinCall, name, sandbox string) (json.RawMessage, error) {
	if c != nil {
		if state, ok := wire.GetString(c.Params, "requestState"); ok && strings.HasPrefix(state, authorizeStatePrefix) {
			return h.authorizeRetry(c, name, sandbox, strings.TrimPrefix(state, authorizeStatePrefix))
		}
	}
	u, err := h.authStart(ctx, name, sandbox, false)
	if err != nil {
		return nil, err
	}
	elicitation := ""
	if c != nil {
		id := "authorize-" + name + "-" + rand.Text()
		params, _ := json.Marshal(map[string]any{
			"mode": "url", "url": u, "elicitationId": id,
			"message": fmt.Sprintf("Sign in to authorize the gateway to use the MCP server %q.", name),
		})
		if c.CanRequireInput("elicitation/create", params) {
			if f := h.flowOf(name, sandbox); f != nil {
				h.oauth.mu.Lock()
				f.elicitation = id
				h.oauth.mu.Unlock()
				return json.Marshal(map[string]any{
					"resultType":    "input_required",
					"inputRequests": map[string]any{authorizeInputKey: map[string]any{"method": "elicitation/create", "params": json.RawMessage(params)}},
					"requestState":  authorizeStatePrefix + id,
				})
			}
		}
		res, asked, err := c.Ask(ctx, "elicitation/create", params)
		switch {
		case err != nil:
			elicitation = fmt.Sprintf("the URL could not be shown to the user by the client (%v)", err)
		case asked:
			action, _ := wire.GetString(res, "action")
			elicitation = "the client was asked to open the URL; the user answered: " + action
		}
	}
	return authorizeResult(name, u, elicitation)
}

// flowOf is the authorization in progress of a server's grant used by
// sandbox (its own for a server registered --per-sandbox), or nil.
func (h *Host) flowOf(name, sandbox string) *authFlow {
	h.mu.Lock()
	if srv := h.state.Servers[name]; srv == nil || !srv.PerSandbox {
		sandbox = ""
	}
	h.mu.Unlock()
	h.tokenStore()
	h.oauth.mu.Lock()
	defer h.oauth.mu.Unlock()
	return h.oauth.flows[oauth.GrantKey(name, sandbox)]
}

// authorizeRetry answers a 2026-07-28 client's retry of the authorize
// tool's input_required result: the URL elicitation's answer, with the
// URL, while the authorization it showed is in progress (or done).
func (h *Host) authorizeRetry(c *gateway.BuiltinCall, name, sandbox, id string) (json.RawMessage, error) {
	answer := wire.Get(wire.Get(c.Params, "inputResponses"), authorizeInputKey)
	if answer == nil {
		return nil, fmt.Errorf("%s%s: the retry's inputResponses lacks %q, the answer to the URL elicitation", name, authorizeSuffix, authorizeInputKey)
	}
	action, _ := wire.GetString(answer, "action")
	f := h.flowOf(name, sandbox)
	h.oauth.mu.Lock()
	var u string
	if f != nil && f.elicitation == id {
		u = f.url
	}
	h.oauth.mu.Unlock()
	if u == "" {
		return nil, fmt.Errorf("%s%s: the authorization this answer is for is no longer in progress (it completed, failed or was replaced); call %s%s again without requestState to start one",
			name, authorizeSuffix, name, authorizeSuffix)
	}
	return authorizeResult(name, u, "the client was asked to open the URL; the user answered: "+action)
}

// authorizeResult is the authorize tool's final result: the URL, and what
// became of showing it to the user.
func authorizeResult(name, u, elicitation string) (json.RawMessage, error) {
	text := fmt.Sprintf("To authorize mcp server %q, the user must open this URL in a browser on the gateway's host and approve:\n\n%s\n\n"+
		"Its tools appear once they have (tools/list_changed). The authorization waits %s at most.", name, u, authFlowTimeout)
	if elicitation != "" {
		text += "\n(" + elicitation + ")"
	}
	res := map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": text}},
		"structuredContent": map[string]any{"server": name, "url": u},
	}
	return json.Marshal(res)
}

// grantLost is told when a server's grant (for sandbox: its own, or the
// shared one with "") is refused or revoked: the instances that used it
// restart, unauthorized, so its tools leave those sandboxes (with
// list_changed) and only its authorize tool stays.
func (h *Host) grantLost(name, sandbox string, err error) {
	h.log.Warn(fmt.Sprintf("mcp server %q lost its OAuth authorization", name), "sandbox", sandbox, "err", err)
	h.restartAttached(name, sandbox)
}

// restartAttached restarts a server's instances in the sandboxes using
// its grant for sandbox (see grantUsers; one without a grant then fails to
// start: its tools leave).
func (h *Host) restartAttached(name, sandbox string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.startTimeout())
	defer cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sb := range h.grantUsers(name, sandbox) {
		_ = h.restartInstance(ctx, sb, name) // fails: not authorized
	}
}
