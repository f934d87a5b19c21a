package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host/metadata"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/host/secrets"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// ServerRequest registers a server: exactly one of URL, Command, Metadata.
type ServerRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`

	URL       string   `json:"url,omitempty"`
	Transport string   `json:"transport,omitempty"` // "", "http", "sse"
	Headers   []string `json:"headers,omitempty"`   // "Name: value", values may hold ${secret}
	// InitializeFirst starts the remote server's sessions with initialize
	// instead of server/discover (serve mode's "discoverFirst": false).
	InitializeFirst bool `json:"initializeFirst,omitempty"`

	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Env     []string `json:"env,omitempty"`        // "NAME=value", values may hold ${secret}
	Props   []string `json:"properties,omitempty"` // environment variables a sandbox may set (mcp-config-set)

	Metadata string `json:"metadata,omitempty"` // a registry entry's, server.json's or server.yaml's URL (or file)
	// Docker sets how an OCI package of Metadata runs (docker run's
	// network, limits and pull policy); nil is the defaults.
	Docker *metadata.Docker `json:"docker,omitempty"`

	// PerClient runs a local server as a process per client session
	// instead of one per sandbox.
	PerClient bool `json:"perClient,omitempty"`

	// AllowPrivateAddress lets the server's URL (and its metadata URL)
	// reach private, loopback and link-local addresses without a warning.
	AllowPrivateAddress bool `json:"allowPrivateAddress,omitempty"`

	// Replace replaces a registration of the same name, keeping its
	// attachments (their instances restart).
	Replace bool `json:"replace,omitempty"`

	// OAuth client identity of a remote server that wants OAuth: a
	// pre-registered client id (its secret, for a confidential client, in
	// mcp:<server>:client_secret, or the older mcp:<server>:client-secret),
	// or a client ID metadata document URL; neither means dynamic
	// registration. Scopes are asked for in place of those the server
	// names (sbx's order: the person's first).
	ClientID          string   `json:"clientId,omitempty"`
	ClientMetadataURL string   `json:"clientMetadataUrl,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	// OAuthIssuer and OAuthTokenEndpoint pin the authorization server
	// (--oauth-issuer, --oauth-token-endpoint): an authorization naming
	// another is refused. Unset, the issuer of the first grant is kept
	// with it.
	OAuthIssuer        string `json:"oauthIssuer,omitempty"`
	OAuthTokenEndpoint string `json:"oauthTokenEndpoint,omitempty"`
	// OAuthAuthorizationServer is the URL of the authorization server's
	// metadata (RFC 8414), OAuthAuthorizationServerMetadata the document
	// itself (read from a file by the command line): for a server whose
	// metadata does not lead to its authorization server. It pins the
	// issuer and the token endpoint it names.
	OAuthAuthorizationServer         string          `json:"oauthAuthorizationServer,omitempty"`
	OAuthAuthorizationServerMetadata json.RawMessage `json:"oauthAuthorizationServerMetadata,omitempty"`
	// PerSandbox keeps the OAuth grant per sandbox instead of per server.
	PerSandbox bool `json:"perSandbox,omitempty"`
}

// AddResult answers a registration.
type AddResult struct {
	Server   *registry.Server `json:"server"`
	Warnings []string         `json:"warnings,omitempty"`
	// OAuth: the server wants OAuth and has no token yet (authorize it
	// with `mcp-gateway auth NAME`).
	OAuth bool `json:"oauth,omitempty"`
}

// AddServer validates and registers a server, then lists its tools once
// (for mcp-find); a server that cannot be listed yet is registered with a
// warning saying why.
func (h *Host) AddServer(ctx context.Context, req ServerRequest) (*AddResult, error) {
	srv, warnings, err := h.buildServer(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := h.authServerMetadata(ctx, srv, &req); err != nil {
		return nil, err
	}
	for _, p := range [][2]string{{"--oauth-issuer", req.OAuthIssuer}, {"--oauth-token-endpoint", req.OAuthTokenEndpoint}} {
		flag, v := p[0], p[1]
		if v == "" {
			continue
		}
		if srv.URL == "" {
			return nil, fmt.Errorf("mcp server %q: %s is for a remote server that wants OAuth (--url)", srv.Name, flag)
		}
		if err := mcpconfig.CheckOAuthURL(v); err != nil {
			return nil, fmt.Errorf("mcp server %q: %s %v", srv.Name, flag, err)
		}
	}
	h.detectOAuth(ctx, srv, req)
	if req.PerSandbox {
		if srv.URL == "" {
			return nil, fmt.Errorf("mcp server %q: --per-sandbox is for a remote server that wants OAuth (--url)", srv.Name)
		}
		srv.PerSandbox = true
		if srv.OAuth == nil {
			warnings = append(warnings, "--per-sandbox has no effect: the server did not ask for OAuth (it answered without a token)")
		}
	}
	h.mu.Lock()
	old := h.state.Servers[srv.Name]
	if old != nil && !req.Replace {
		h.mu.Unlock()
		return nil, fmt.Errorf("mcp server %q is already registered (%s); remove it first, or pass --replace", srv.Name, endpoint(old))
	}
	if old != nil {
		srv.Tools = nil
		if old.Binding() != srv.Binding() {
			if left := h.secrets.ForServer(srv.Name); len(left) > 0 {
				warnings = append(warnings, fmt.Sprintf("the endpoint changed: its secrets (%s) were set for the old one and are not sent until set again with `mcp-gateway secret set NAME`", strings.Join(left, ", ")))
			}
		}
	}
	h.state.Servers[srv.Name] = srv
	if err := h.save(); err != nil {
		if old != nil {
			h.state.Servers[srv.Name] = old
		} else {
			delete(h.state.Servers, srv.Name)
		}
		h.mu.Unlock()
		return nil, err
	}
	warnings = append(warnings, h.bindPending(srv)...)
	if old != nil {
		for _, sb := range h.attachedTo(srv.Name) {
			if err := h.restartInstance(ctx, sb, srv.Name); err != nil {
				warnings = append(warnings, fmt.Sprintf("sandbox %q: %v", sb.name, err))
			}
		}
	}
	h.mu.Unlock()

	needsAuth := false
	if srv.OAuth != nil {
		rec, _ := h.tokenStore().Load(srv.Name, srv.URL)
		needsAuth = rec == nil || srv.PerSandbox
	}
	if needsAuth && srv.PerSandbox {
		warnings = append(warnings, fmt.Sprintf("it wants OAuth, one grant per sandbox: authorize it for each sandbox with `mcp-gateway auth %s --sandbox SANDBOX` (or the sandbox's %s-authorize tool)", srv.Name, srv.Name))
	} else if needsAuth {
		warnings = append(warnings, fmt.Sprintf("it wants OAuth: authorize it with `mcp-gateway auth %s`; until then its tools are not known", srv.Name))
	} else if err := h.listTools(ctx, srv.Name); err != nil {
		warnings = append(warnings, fmt.Sprintf("its tools could not be listed yet, so mcp-find knows only its name and description: %v", err))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return &AddResult{Server: h.state.Servers[srv.Name], Warnings: warnings, OAuth: needsAuth}, nil
}

// authServerMetadata takes the authorization server's metadata given with
// --oauth-authorization-server (a document, or its URL, fetched through the
// server's address checks), keeps it with the registration and pins the
// issuer and token endpoint it names.
func (h *Host) authServerMetadata(ctx context.Context, srv *registry.Server, req *ServerRequest) error {
	doc := req.OAuthAuthorizationServerMetadata
	if req.OAuthAuthorizationServer == "" && len(doc) == 0 {
		return nil
	}
	if srv.URL == "" {
		return fmt.Errorf("mcp server %q: --oauth-authorization-server is for a remote server that wants OAuth (--url)", srv.Name)
	}
	if len(doc) == 0 {
		u := req.OAuthAuthorizationServer
		if err := mcpconfig.CheckOAuthURL(u); err != nil {
			return fmt.Errorf("mcp server %q: --oauth-authorization-server %v", srv.Name, err)
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("mcp server %q: --oauth-authorization-server %q: %v", srv.Name, u, err)
		}
		hreq.Header.Set("Accept", "application/json")
		resp, err := h.oauthClient(srv).Do(hreq)
		if err != nil {
			return fmt.Errorf("mcp server %q: fetching --oauth-authorization-server %s: %v", srv.Name, u, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("mcp server %q: fetching --oauth-authorization-server %s: HTTP %s", srv.Name, u, resp.Status)
		}
		if doc, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return fmt.Errorf("mcp server %q: fetching --oauth-authorization-server %s: %v", srv.Name, u, err)
		}
	}
	meta, err := oauth.ParseAuthServerMetadata(srv.Name, doc)
	if err != nil {
		return err
	}
	for _, p := range []struct{ flag, pinned, named string }{{"--oauth-issuer", req.OAuthIssuer, meta.Issuer}, {"--oauth-token-endpoint", req.OAuthTokenEndpoint, meta.TokenEndpoint}} {
		if p.pinned != "" && p.pinned != p.named {
			return fmt.Errorf("mcp server %q: %s %s is not the %s the --oauth-authorization-server metadata names; give one of them", srv.Name, p.flag, p.pinned, p.named)
		}
	}
	req.OAuthIssuer, req.OAuthTokenEndpoint = meta.Issuer, meta.TokenEndpoint
	srv.OAuthAuthorizationServer, _ = json.Marshal(meta)
	return nil
}

// buildServer turns a request into a registration, or says what is wrong.
func (h *Host) buildServer(ctx context.Context, req ServerRequest) (*registry.Server, []string, error) {
	if err := registry.ValidName("server", req.Name); err != nil {
		return nil, nil, err
	}
	if req.Name == gateway.BuiltinServer {
		return nil, nil, fmt.Errorf("server name %q is reserved for the gateway's own tools", req.Name)
	}
	kinds := 0
	for _, set := range []bool{req.URL != "", req.Command != "", req.Metadata != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return nil, nil, fmt.Errorf("mcp server %q: give exactly one of --url (a remote server), --command (a local one) or --metadata (a registry entry or server.json)", req.Name)
	}
	if req.AllowPrivateAddress && req.Command != "" {
		return nil, nil, fmt.Errorf("mcp server %q: --allow-private-address is for a server reached over the network (--url, or a --metadata URL), not a --command", req.Name)
	}
	if req.InitializeFirst && req.URL == "" {
		return nil, nil, fmt.Errorf("mcp server %q: --initialize-first is for a remote server (--url): a local one speaks over stdio and is asked in its own era", req.Name)
	}
	if req.PerClient && req.URL != "" {
		return nil, nil, fmt.Errorf("mcp server %q: --per-client is for a local server (--command or --metadata); a remote one already gets a session per client", req.Name)
	}
	srv := &registry.Server{Name: req.Name, Description: req.Description, AllowPrivateAddress: req.AllowPrivateAddress, Added: time.Now().UTC().Truncate(time.Second)}
	if req.PerClient {
		srv.Share = mcpconfig.SharePerClient
	}
	if req.Docker != nil && req.Metadata == "" {
		return nil, nil, fmt.Errorf("mcp server %q: the --docker-* flags set how an OCI package of --metadata runs; with --command docker, give docker's options in --args", req.Name)
	}
	var warnings []string
	switch {
	case req.URL != "":
		if req.Command != "" || len(req.Args) > 0 || len(req.Env) > 0 || req.Dir != "" || len(req.Props) > 0 {
			return nil, nil, fmt.Errorf("mcp server %q: --args, --env, --dir and --property belong to a local server (--command), not to a remote one", req.Name)
		}
		var err error
		if warnings, err = h.remote(ctx, srv, req); err != nil {
			return nil, nil, err
		}
	case req.Metadata != "":
		spec, err := h.fromMetadata(ctx, srv, req)
		if err != nil {
			return nil, nil, err
		}
		if err := local(srv, req); err != nil {
			return nil, nil, err
		}
		if err := dockerCommand(srv, spec, req); err != nil {
			return nil, nil, err
		}
	default:
		srv.Command, srv.Args = req.Command, req.Args
		if err := local(srv, req); err != nil {
			return nil, nil, err
		}
	}
	return srv, warnings, nil
}

// remote fills a remote registration: URL, transport, header templates.
func (h *Host) remote(ctx context.Context, srv *registry.Server, req ServerRequest) ([]string, error) {
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp server %q: --url must be an http:// or https:// URL with a host, not %q", srv.Name, req.URL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("mcp server %q: put credentials in a header with a ${placeholder}, not in the URL", srv.Name)
	}
	switch req.Transport {
	case "", mcpconfig.TransportHTTP, mcpconfig.TransportSSE:
	default:
		return nil, fmt.Errorf("mcp server %q: --transport must be %q or %q (or left out to detect it), not %q", srv.Name, mcpconfig.TransportHTTP, mcpconfig.TransportSSE, req.Transport)
	}
	srv.URL, srv.Transport, srv.InitializeFirst = req.URL, req.Transport, req.InitializeFirst
	for _, hv := range req.Headers {
		name, value, ok := strings.Cut(hv, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return nil, fmt.Errorf("mcp server %q: --header %q: write 'Name: value'", srv.Name, redactHeader(hv))
		}
		keys, err := mcpconfig.PlaceholderNames(value)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: header %s: %w", srv.Name, name, err)
		}
		if credentialName(name) && len(keys) == 0 {
			return nil, fmt.Errorf("mcp server %q: header %s carries a credential, so its value must name a stored secret: write it like 'Bearer ${api-key}' and store the value with `mcp-gateway secret set mcp:%s:api-key`", srv.Name, name, srv.Name)
		}
		if srv.Headers == nil {
			srv.Headers = map[string]string{}
		}
		key := http.CanonicalHeaderKey(name)
		if _, dup := srv.Headers[key]; dup {
			return nil, fmt.Errorf("mcp server %q: header %s is given twice (header names are case-insensitive): give each header once", srv.Name, key)
		}
		srv.Headers[key] = value
	}
	return h.addressWarnings(ctx, srv, u), nil
}

// local checks and fills a local registration's environment and properties.
func local(srv *registry.Server, req ServerRequest) error {
	if len(req.Headers) > 0 || req.Transport != "" {
		return fmt.Errorf("mcp server %q: --header and --transport belong to a remote server (--url)", srv.Name)
	}
	if req.Dir != "" {
		if !filepath.IsAbs(req.Dir) {
			return fmt.Errorf("mcp server %q: --dir must be an absolute path, not %q", srv.Name, req.Dir)
		}
		srv.Dir = req.Dir
	}
	for i, a := range srv.Args {
		if _, err := mcpconfig.PlaceholderNames(a); err != nil {
			return fmt.Errorf("mcp server %q: argument %d: %w", srv.Name, i+1, err)
		}
	}
	seen := map[string]bool{}
	for _, kv := range req.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !envName(name) {
			return fmt.Errorf("mcp server %q: --env %q: write NAME=value, NAME made of letters, digits and '_'", srv.Name, name)
		}
		if seen[name] {
			return fmt.Errorf("mcp server %q: --env %s is given twice: give each variable once", srv.Name, name)
		}
		seen[name] = true
		keys, err := mcpconfig.PlaceholderNames(value)
		if err != nil {
			return fmt.Errorf("mcp server %q: env %s: %w", srv.Name, name, err)
		}
		if credentialName(name) && len(keys) == 0 && value != "" {
			return fmt.Errorf("mcp server %q: env %s looks like a credential, so its value must name a stored secret: write --env %s='${%s}' and store the value with `mcp-gateway secret set mcp:%s:%s`", srv.Name, name, name, strings.ToLower(name), srv.Name, strings.ToLower(name))
		}
		if srv.Env == nil {
			srv.Env = map[string]string{}
		}
		srv.Env[name] = value
	}
	for _, p := range req.Props {
		if !envName(p) {
			return fmt.Errorf("mcp server %q: --property %q: name the environment variable it sets (letters, digits and '_')", srv.Name, p)
		}
		if slices.ContainsFunc(srv.Config, func(q registry.Property) bool { return q.Env == p }) {
			continue
		}
		srv.Config = append(srv.Config, registry.Property{Name: strings.ToLower(p), Env: p})
	}
	return nil
}

// fromMetadata reads a registry entry or server.json into a local registration.
func (h *Host) fromMetadata(ctx context.Context, srv *registry.Server, req ServerRequest) (*metadata.Spec, error) {
	data, err := h.readMetadata(ctx, srv, req.Metadata)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: reading %s: %w", srv.Name, req.Metadata, err)
	}
	spec, err := metadata.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %s: %w", srv.Name, req.Metadata, err)
	}
	if req.Command != "" {
		return nil, fmt.Errorf("mcp server %q: --metadata gives the command; leave out --command", srv.Name)
	}
	if req.Docker != nil && spec.OCI == nil {
		return nil, fmt.Errorf("mcp server %q: the --docker-* flags are for an OCI package, and %s runs %s", srv.Name, req.Metadata, spec.Package)
	}
	srv.Metadata, srv.Package = req.Metadata, spec.Package
	srv.Command, srv.Args = spec.Command, append(slices.Clone(spec.Args), req.Args...)
	if srv.Description == "" {
		srv.Description = spec.Description
	}
	for k, v := range spec.Env {
		if srv.Env == nil {
			srv.Env = map[string]string{}
		}
		srv.Env[k] = v
	}
	for _, p := range spec.Config {
		srv.Config = append(srv.Config, registry.Property{Name: p.Name, Description: p.Description, Env: p.Env, Default: p.Default, Required: p.Required})
	}
	return spec, nil
}

// dockerCommand sets the docker run arguments of an OCI package, once its
// environment (the entry's and --env, --property) is known: each variable
// reaches the container by name (`-e NAME`), so the values, secrets among
// them, stay in docker's environment and off its command line. --args
// follow the entry's package arguments, after the image.
func dockerCommand(srv *registry.Server, spec *metadata.Spec, req ServerRequest) error {
	if spec.OCI == nil {
		return nil
	}
	var env []string
	for k := range srv.Env {
		env = append(env, k)
	}
	for _, p := range srv.Config {
		env = append(env, p.Env)
	}
	slices.Sort(env)
	var d metadata.Docker
	if req.Docker != nil {
		d = *req.Docker
	}
	args, err := d.Args(spec.OCI, slices.Compact(env))
	if err != nil {
		return fmt.Errorf("mcp server %q: %s: %w", srv.Name, spec.Package, err)
	}
	srv.Args = append(args, req.Args...)
	return nil
}

func (h *Host) readMetadata(ctx context.Context, srv *registry.Server, ref string) ([]byte, error) {
	if !strings.HasPrefix(ref, "http://") && !strings.HasPrefix(ref, "https://") {
		return os.ReadFile(strings.TrimPrefix(ref, "file://"))
	}
	if h.opts.Fetch != nil {
		return h.opts.Fetch(ctx, ref)
	}
	return fetchMetadata(ctx, h.guard(srv), srv.Name, ref)
}

// guard is the address policy of a server's connections: the daemon's, or
// its own override (--allow-private-address).
func (h *Host) guard(srv *registry.Server) *netguard.Policy {
	if srv.AllowPrivateAddress {
		return h.privateGuard
	}
	return h.opts.Attach.Guard
}

// fetchMetadata reads a metadata URL through the address checks a server's
// URL gets: before the request, and at every connection (redirects too),
// so neither the URL nor DNS can lead it to a refused address.
func fetchMetadata(ctx context.Context, guard *netguard.Policy, server, rawURL string) ([]byte, error) {
	if err := guard.CheckURL(ctx, server, rawURL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	client := &http.Client{Transport: &http.Transport{
		DialContext:         guard.DialContext(server, &net.Dialer{Timeout: 10 * time.Second}),
		TLSHandshakeTimeout: 10 * time.Second,
	}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 4<<20))
}

// addressWarnings are the address checks at registration: what the URL's
// host resolves to now. Connections are checked again at every dial.
func (h *Host) addressWarnings(ctx context.Context, srv *registry.Server, u *url.URL) []string {
	guard := h.guard(srv)
	if guard != nil && guard.AllowAll {
		return nil
	}
	host := u.Hostname()
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
			return []string{fmt.Sprintf("cannot resolve %s now (%v); it is checked again at every connection", host, err)}
		}
	}
	var warnings []string
	for _, ip := range ips {
		switch c := netguard.Classify(ip); {
		case guard.Allow(ip) == nil && srv.AllowPrivateAddress:
			// the server's own override: no warning
		case c.Refused():
			warnings = append(warnings, fmt.Sprintf("%s resolves to %s, a %s address: connections to it are refused unless the host runs with --allow-any-address%s", host, ip, c, map[bool]string{true: "", false: " (or, for a link-local one, the server is registered with --allow-private-address)"}[c == netguard.Metadata]))
		case c.Warned():
			warnings = append(warnings, fmt.Sprintf("%s resolves to %s, a %s address: allowed, but DNS rebinding remains a risk (--allow-private-address registers it without this warning)", host, ip, c))
		}
	}
	return warnings
}

// ServerSummary is one line of `server ls`.
type ServerSummary struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"` // "remote" or "local"
	Endpoint    string   `json:"endpoint"`
	Description string   `json:"description,omitempty"`
	Tools       int      `json:"tools"`
	Sandboxes   []string `json:"sandboxes,omitempty"`
}

// Servers lists the registrations, sorted by name.
func (h *Host) Servers() []ServerSummary {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ServerSummary
	for _, name := range sortedKeys(h.state.Servers) {
		srv := h.state.Servers[name]
		out = append(out, ServerSummary{Name: name, Kind: kind(srv), Endpoint: endpoint(srv), Description: srv.Description,
			Tools: len(srv.Tools), Sandboxes: h.sandboxNamesWith(name)})
	}
	return out
}

// SecretStatus says whether one secret a server names is usable.
type SecretStatus struct {
	Name   string `json:"name"`   // mcp:<server>:<key>
	Status string `json:"status"` // "set", "not set", "set for another endpoint"
}

// ServerInfo is `server inspect`: the registration with its templates as
// written and the state of each secret, never a value.
type ServerInfo struct {
	*registry.Server
	Kind      string         `json:"kind"`
	Secrets   []SecretStatus `json:"secrets,omitempty"`
	Sandboxes []string       `json:"sandboxes,omitempty"`
}

// InspectServer describes one registration.
func (h *Host) InspectServer(name string) (*ServerInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	srv := h.state.Servers[name]
	if srv == nil {
		return nil, h.unknownServer(name)
	}
	info := &ServerInfo{Server: srv, Kind: kind(srv), Sandboxes: h.sandboxNamesWith(name)}
	for _, key := range placeholders(srv) {
		st := SecretStatus{Name: secretName(name, key), Status: "set"}
		if _, err := h.secrets.Get(st.Name, srv.Binding()); errors.Is(err, secrets.ErrNotSet) {
			st.Status = "not set"
		} else if errors.Is(err, secrets.ErrBindingChanged) {
			st.Status = "set for another endpoint"
		} else if err != nil {
			st.Status = "unreadable: " + err.Error()
		}
		info.Secrets = append(info.Secrets, st)
	}
	if st, ok := h.clientSecretStatus(srv); ok {
		info.Secrets = append(info.Secrets, st)
	}
	return info, nil
}

// clientSecretStatus is the state of a pre-registered OAuth client's
// secret (either name), for a server registered with --client-id.
func (h *Host) clientSecretStatus(srv *registry.Server) (SecretStatus, bool) {
	if srv.OAuth == nil || srv.OAuth.ClientID == "" {
		return SecretStatus{}, false
	}
	for _, key := range []string{ClientSecretKey, LegacyClientSecretKey} {
		name := secretName(srv.Name, key)
		_, err := h.secrets.Get(name, srv.Binding())
		switch {
		case err == nil:
			return SecretStatus{Name: name, Status: "set (the OAuth client's secret)"}, true
		case errors.Is(err, secrets.ErrBindingChanged):
			return SecretStatus{Name: name, Status: "set for another endpoint (not sent: set it again)"}, true
		}
	}
	return SecretStatus{Name: secretName(srv.Name, ClientSecretKey), Status: "not set (a public client: no secret is sent)"}, true
}

// RemoveResult answers `server rm`.
type RemoveResult struct {
	DetachedFrom []string `json:"detachedFrom,omitempty"`
	Secrets      []string `json:"secrets,omitempty"` // left in the store
	// OAuthTokens are the grants removed with it: server, or
	// server@sandbox (oauth.GrantKey).
	OAuthTokens []string `json:"oauthTokens,omitempty"`
}

// RemoveServer unregisters a server, detaching it from every sandbox. Its
// secrets stay in the store (RemoveResult.Secrets) until removed.
func (h *Host) RemoveServer(name string) (*RemoveResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	srv := h.state.Servers[name]
	if srv == nil {
		return nil, h.unknownServer(name)
	}
	res := &RemoveResult{}
	for _, n := range h.secrets.ForServer(name) {
		if _, key, _ := secrets.ParseName(n); key != oauth.SecretKey && !strings.HasPrefix(key, oauth.SecretKey+".") {
			res.Secrets = append(res.Secrets, n)
		}
	}
	attached := h.attachedTo(name)
	delete(h.state.Servers, name)
	for _, sb := range attached {
		rec := h.state.Sandboxes[sb.name]
		rec.Servers = slices.DeleteFunc(rec.Servers, func(s string) bool { return s == name })
		delete(rec.Config, name)
		res.DetachedFrom = append(res.DetachedFrom, sb.name)
	}
	if err := h.save(); err != nil {
		return nil, err
	}
	// Its OAuth tokens go with it, as with sbx: the shared grant and each
	// sandbox's own.
	for _, e := range h.secrets.List() {
		if e.Server != name || (e.Key != oauth.SecretKey && !strings.HasPrefix(e.Key, oauth.SecretKey+".")) {
			continue
		}
		sandbox := strings.TrimPrefix(strings.TrimPrefix(e.Key, oauth.SecretKey), ".")
		if err := h.grantStore(sandbox).Remove(name); err != nil {
			h.log.Warn(fmt.Sprintf("mcp server %q: its OAuth token could not be removed with it", name), "sandbox", sandbox, "err", err)
			continue
		}
		res.OAuthTokens = append(res.OAuthTokens, oauth.GrantKey(name, sandbox))
	}
	for _, sb := range attached {
		if sb.clearUnattached(name) {
			continue
		}
		if err := sb.gw.Router.Remove(name); err != nil {
			h.log.Warn("stopping a removed server", "sandbox", sb.name, "server", name, "err", err)
		}
	}
	// Its files in every sandbox go with it.
	dirs := []string{h.instanceDir("", name)}
	for sandbox := range h.state.Sandboxes {
		dirs = append(dirs, h.instanceDir(sandbox, name))
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			h.log.Warn("removing a removed server's directory", "dir", d, "err", err)
		}
	}
	return res, nil
}

// unregisteredBinding binds a secret stored before its server is
// registered, until `server add` binds it to the server's endpoint
// (bindPending).
const unregisteredBinding = "mcp-gateway:not-registered-yet"

// bindPending binds the secrets of a server stored before it was
// registered to its endpoint. Called with h.mu held.
func (h *Host) bindPending(srv *registry.Server) []string {
	var warnings []string
	for _, name := range h.secrets.ForServer(srv.Name) {
		v, err := h.secrets.Get(name, unregisteredBinding)
		if err != nil {
			continue // bound already
		}
		if err := h.secrets.Set(name, srv.Binding(), v); err != nil {
			warnings = append(warnings, fmt.Sprintf("secret %s, stored before the server was registered, could not be bound to it: %v; set it again with `mcp-gateway secret set %s`", name, err, name))
		}
	}
	return warnings
}

// SetSecret stores a secret of a server, bound to its current endpoint
// (a server not registered yet: to the one it is registered with); the
// server's instances that use it restart with it.
func (h *Host) SetSecret(ctx context.Context, name, value string) ([]string, error) {
	server, key, err := secrets.ParseName(name)
	if err != nil {
		return nil, err
	}
	if key == placeholderSandbox || key == placeholderSandboxDir || key == placeholderClientDir {
		return nil, fmt.Errorf("secret %s: ${%s} is reserved for the %s; choose another name", name, key, map[string]string{placeholderSandbox: "sandbox's name", placeholderSandboxDir: "sandbox's directory", placeholderClientDir: "client's directory"}[key])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	srv := h.state.Servers[server]
	if srv == nil && isClientSecretKey(key) {
		// sbx's order: a confidential client's secret first, then
		// `server add --client-id`, which binds it to the endpoint it
		// registers. (Other secrets of an unknown server are refused: a
		// typo in the name would otherwise go unnoticed.)
		if err := h.secrets.Set(name, unregisteredBinding, value); err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("mcp server %q is not registered yet: %s is kept, and bound to the server's endpoint when `mcp-gateway server add %s --client-id ID` registers it", server, name, server)}, nil
	}
	if srv == nil {
		return nil, fmt.Errorf("secret %s: %w", name, h.unknownServer(server))
	}
	if err := h.secrets.Set(name, srv.Binding(), value); err != nil {
		return nil, err
	}
	var warnings []string
	if len(srv.Tools) == 0 {
		h.probe(server) // it may be listable now
	}
	if isClientSecretKey(key) && srv.OAuth != nil {
		if srv.OAuth.ClientID == "" {
			warnings = append(warnings, fmt.Sprintf("mcp server %q registers its OAuth client dynamically (no --client-id), so a client secret is not used; "+
				"register it again with `mcp-gateway server add %s --client-id ID --replace ...`", server, server))
		}
		return warnings, nil // used by the next authorization (mcp-gateway auth)
	}
	if !slices.Contains(placeholders(srv), key) {
		warnings = append(warnings, fmt.Sprintf("mcp server %q names no ${%s} in its headers, env or args, so this secret is not used", server, key))
		return warnings, nil
	}
	// A new or rotated value takes effect at once: the server's instances
	// restart with it.
	for _, sb := range h.attachedTo(server) {
		if err := h.restartInstance(ctx, sb, server); err != nil {
			warnings = append(warnings, fmt.Sprintf("sandbox %q: %v", sb.name, err))
		}
	}
	return warnings, nil
}

// Secrets lists the stored secrets, names only.
func (h *Host) Secrets() []secrets.Entry { return h.secrets.List() }

// RemoveSecret deletes a stored secret.
func (h *Host) RemoveSecret(name string) error {
	if _, _, err := secrets.ParseName(name); err != nil {
		return err
	}
	return h.secrets.Remove(name)
}

// SandboxRequest creates a sandbox: static with Static's servers, else dynamic.
type SandboxRequest struct {
	Name   string   `json:"name"`
	Static []string `json:"static,omitempty"`
}

// SandboxCreated answers sandbox create; the token is shown this once.
type SandboxCreated struct {
	Name     string   `json:"name"`
	Mode     string   `json:"mode"`
	URL      string   `json:"url"`
	Token    string   `json:"token"`
	Servers  []string `json:"servers,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// CreateSandbox makes a sandbox with a fresh token and starts its servers.
func (h *Host) CreateSandbox(ctx context.Context, req SandboxRequest) (*SandboxCreated, error) {
	if err := registry.ValidName("sandbox", req.Name); err != nil {
		return nil, err
	}
	if req.Name == gateway.BuiltinServer {
		// It names the gateway's own tools in logs, metrics and the audit
		// log: a sandbox of that name would read as the gateway.
		return nil, fmt.Errorf("sandbox name %q is reserved for the gateway itself; choose another name", req.Name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state.Sandboxes[req.Name] != nil {
		return nil, fmt.Errorf("sandbox %q already exists; remove it first with `mcp-gateway sandbox rm %s`", req.Name, req.Name)
	}
	mode := registry.ModeDynamic
	var servers []string
	if len(req.Static) > 0 {
		mode = registry.ModeStatic
		for _, s := range req.Static {
			s = strings.TrimSpace(s)
			if s == "" || slices.Contains(servers, s) {
				continue
			}
			srv := h.state.Servers[s]
			if srv == nil {
				return nil, fmt.Errorf("sandbox %q: %w", req.Name, h.unknownServer(s))
			}
			if _, err := h.instanceSpec(srv, req.Name, nil); err != nil {
				return nil, fmt.Errorf("sandbox %q: %w", req.Name, err)
			}
			servers = append(servers, s)
		}
		if len(servers) == 0 {
			// --static ",": a static sandbox that would serve nothing
			return nil, fmt.Errorf("sandbox %q: the static list %q names no server", req.Name, strings.Join(req.Static, ","))
		}
	}
	token := newToken()
	rec := &registry.Sandbox{Name: req.Name, Mode: mode, TokenHash: hashToken(token), Servers: servers, Created: time.Now().UTC().Truncate(time.Second)}
	h.state.Sandboxes[req.Name] = rec
	if err := h.save(); err != nil {
		delete(h.state.Sandboxes, req.Name)
		return nil, err
	}
	sb := h.newSandbox(rec)
	h.sandboxes[req.Name] = sb
	startCtx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	sb.gw.Router.StartAll(startCtx)
	cancel()
	h.publishTokens()
	out := &SandboxCreated{Name: req.Name, Mode: mode, URL: h.opts.URL, Token: token, Servers: servers}
	for name, st := range sb.gw.Router.Status() {
		if st.State != "ready" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("mcp server %q did not start (%s); it is retried in the background", name, st.LastError))
		}
	}
	slices.Sort(out.Warnings)
	return out, nil
}

// SandboxSummary is one line of `sandbox ls`.
type SandboxSummary struct {
	Name    string                          `json:"name"`
	Mode    string                          `json:"mode"`
	Servers []string                        `json:"servers,omitempty"`
	Status  map[string]gateway.ServerStatus `json:"status,omitempty"`
	Created time.Time                       `json:"created"`
	// URL is the endpoint its clients reach (sandbox connect prints
	// agents' configurations for it).
	URL string `json:"url,omitempty"`
}

// Sandboxes lists the sandboxes, sorted by name.
func (h *Host) Sandboxes() []SandboxSummary {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []SandboxSummary
	for _, name := range sortedKeys(h.state.Sandboxes) {
		rec, sb := h.state.Sandboxes[name], h.sandboxes[name]
		status := sb.gw.Router.Status()
		for server, why := range sb.unattachedNow() {
			status[server] = gateway.ServerStatus{State: "failed", LastError: why}
		}
		out = append(out, SandboxSummary{Name: name, Mode: rec.Mode, Servers: rec.Servers, Status: status, Created: rec.Created, URL: h.opts.URL})
	}
	return out
}

// RemoveSandbox revokes a sandbox's token at once, ends its sessions and
// stops its servers.
func (h *Host) RemoveSandbox(name string) error {
	_, err := h.RemoveSandboxReport(name)
	return err
}

// SandboxRemoval says what went with a removed sandbox.
type SandboxRemoval struct {
	Name string `json:"name"`
	// Policies are the names of the policy documents stored for it alone,
	// removed with it (a new sandbox of the same name starts with the
	// global policies only).
	Policies []string `json:"policies,omitempty"`
}

// RemoveSandboxReport removes a sandbox, and its own stored policies with
// it, and says which policies went.
func (h *Host) RemoveSandboxReport(name string) (*SandboxRemoval, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.state.Sandboxes[name]
	if rec == nil {
		return nil, h.unknownSandbox(name)
	}
	delete(h.state.Sandboxes, name)
	if err := h.save(); err != nil {
		h.state.Sandboxes[name] = rec
		return nil, err
	}
	sb := h.sandboxes[name]
	delete(h.sandboxes, name)
	h.publishTokens()
	h.front.Forget(sb.gw)
	sb.gw.Close()
	sb.forgetMetrics()
	err := sb.gw.Router.Close()
	// Its own OAuth grants go with it (oauth.go): a sandbox of the same
	// name is not authorized by them.
	h.forgetSandboxGrants(name)
	// Its servers' files go with it: a sandbox of the same name starts afresh.
	if rmErr := os.RemoveAll(filepath.Join(h.opts.Dir, SandboxesDir, name)); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("removing the sandbox's directory: %w", rmErr))
	}
	// So do its policies.
	policies, polErr := h.removeSandboxPolicies(name)
	return &SandboxRemoval{Name: name, Policies: policies}, errors.Join(err, polErr)
}

// LoadResult answers a load: the tools the server brought, as exposed.
type LoadResult struct {
	Server string            `json:"server"`
	Tools  []json.RawMessage `json:"tools"`
}

// Load attaches a registered server to a running sandbox: its instance
// starts, its tools join the sandbox's view (connected clients hear
// list_changed), and the attachment is saved. A server that fails to start
// is not attached.
func (h *Host) Load(ctx context.Context, server, sandbox string) (*LoadResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.load(ctx, server, sandbox)
}

func (h *Host) load(ctx context.Context, server, sandboxName string) (*LoadResult, error) {
	sb, rec := h.sandboxes[sandboxName], h.state.Sandboxes[sandboxName]
	if sb == nil {
		return nil, h.unknownSandbox(sandboxName)
	}
	if h.state.Servers[server] == nil {
		return nil, h.unknownServer(server)
	}
	if slices.Contains(rec.Servers, server) {
		return nil, fmt.Errorf("mcp server %q is already loaded in sandbox %q", server, sandboxName)
	}
	if err := h.checkRegister(sandboxName, server); err != nil {
		return nil, err
	}
	if err := h.attachServer(sb, server); err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	needsAuth := false
	if err := sb.gw.Router.StartServer(startCtx, server); err != nil {
		if h.state.Servers[server].OAuth == nil || !errors.Is(err, oauth.ErrNotAuthorized) {
			_ = sb.gw.Router.Remove(server)
			return nil, fmt.Errorf("mcp server %q did not start, so it is not loaded: %w", server, err)
		}
		needsAuth = true // attached; its <server>-authorize tool stands for it
	}
	rec.Servers = append(rec.Servers, server)
	if err := h.save(); err != nil {
		rec.Servers = rec.Servers[:len(rec.Servers)-1]
		_ = sb.gw.Router.Remove(server)
		return nil, err
	}
	if h.state.Servers[server].OAuth != nil {
		h.refreshBuiltins(sb, rec.Servers)
	}
	res := &LoadResult{Server: server, Tools: sb.gw.Router.Tools(server)}
	if needsAuth {
		res.Tools = []json.RawMessage{authorizeTool(server)}
	}
	return res, nil
}

// Unload detaches a server from a sandbox: its tools leave the view
// (list_changed), its instance stops, and the change is saved.
func (h *Host) Unload(server, sandboxName string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	sb, rec := h.sandboxes[sandboxName], h.state.Sandboxes[sandboxName]
	if sb == nil {
		return h.unknownSandbox(sandboxName)
	}
	if !slices.Contains(rec.Servers, server) {
		return fmt.Errorf("mcp server %q is not loaded in sandbox %q (it has: %s)", server, sandboxName, orNone(rec.Servers))
	}
	prev := rec.Servers
	rec.Servers = slices.DeleteFunc(slices.Clone(rec.Servers), func(s string) bool { return s == server })
	if err := h.save(); err != nil {
		rec.Servers = prev
		return err
	}
	if sb.clearUnattached(server) {
		return nil
	}
	return sb.gw.Router.Remove(server)
}

// restartInstance replaces a sandbox's instance of a server by a new one
// (new configuration, new secret) and starts it.
func (h *Host) restartInstance(ctx context.Context, sb *sandbox, server string) error {
	if !sb.clearUnattached(server) {
		if err := sb.gw.Router.Remove(server); err != nil {
			return err
		}
	}
	if err := h.attachServer(sb, server); err != nil {
		sb.setUnattached(server, err.Error())
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	return sb.gw.Router.StartServer(startCtx, server)
}

// attachedTo lists the running sandboxes a server is attached to.
func (h *Host) attachedTo(server string) []*sandbox {
	var out []*sandbox
	for _, name := range h.sandboxNamesWith(server) {
		if sb := h.sandboxes[name]; sb != nil {
			out = append(out, sb)
		}
	}
	return out
}

func (h *Host) sandboxNamesWith(server string) []string {
	var names []string
	for _, name := range sortedKeys(h.state.Sandboxes) {
		if slices.Contains(h.state.Sandboxes[name].Servers, server) {
			names = append(names, name)
		}
	}
	return names
}

func (h *Host) unknownServer(name string) error {
	return fmt.Errorf("mcp server %q is not registered (registered: %s)", name, orNone(sortedKeys(h.state.Servers)))
}

func (h *Host) unknownSandbox(name string) error {
	return fmt.Errorf("sandbox %q does not exist (sandboxes: %s)", name, orNone(sortedKeys(h.state.Sandboxes)))
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func kind(srv *registry.Server) string {
	if srv.Remote() {
		return "remote"
	}
	return "local"
}

// endpoint is a registration's URL or command line, for listings.
func endpoint(srv *registry.Server) string {
	if srv.Remote() {
		return srv.URL
	}
	return strings.Join(append([]string{srv.Command}, srv.Args...), " ")
}

// credentialName reports a header or variable name that carries a credential.
func credentialName(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	for _, w := range []string{"token", "key", "secret", "password", "passwd", "credential", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// redactHeader shows a header argument without its value.
func redactHeader(hv string) string {
	if name, _, ok := strings.Cut(hv, ":"); ok {
		return name + ": …"
	}
	if len(hv) > 20 {
		return hv[:8] + "…"
	}
	return hv
}
