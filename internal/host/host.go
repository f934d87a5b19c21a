package host

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/codemode"
	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/host/secrets"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// Options configure a Host. Dir is required.
type Options struct {
	// Dir is the state directory: the state file, the secret store and its
	// key, the control socket.
	Dir string
	// URL is the MCP endpoint as sandboxes reach it, printed by
	// sandbox create ("http://127.0.0.1:8811/mcp").
	URL string
	// Attach is what every server instance shares (environment, logs,
	// address checks); its Guard also checks addresses at registration.
	Attach attach.Options
	// Gateway configures each sandbox's router (naming, call timeout).
	Router gateway.RouterOptions
	// Info is the gateway's name and version as clients see it.
	Info gateway.Info
	// Tasks bound each sandbox's tasks; they belong to the sandbox (PerGateway is set).
	Tasks gateway.TaskOptions
	// StartTimeout bounds the first start of a sandbox's servers and a
	// live load; 0 means 60 s.
	StartTimeout time.Duration
	// MaxBodyBytes bounds an MCP request body; 0 is the front's default.
	MaxBodyBytes int64
	// Store is the state directory's store, already opened (and so
	// locked) by the caller, who takes the lock before binding its port;
	// nil: Open opens Dir's. The Host closes it.
	Store *registry.Store
	// Governance configures policies, approvals and the audit log.
	Governance GovernanceOptions
	// Limits bound what each sandbox's clients hold (gateway.Limits).
	Limits gateway.Limits
	// Fetch reads a metadata URL (a registry entry, server.json or
	// server.yaml); nil means an HTTP GET with a 30 s timeout, through the
	// address checks of the server's URL.
	Fetch func(ctx context.Context, url string) ([]byte, error)
	// OAuthCallback is the loopback address the OAuth callback of `auth`
	// listens on; "" means 127.0.0.1 on any free port.
	OAuthCallback string
	// Telemetry, when set, records each sandbox's calls (its metrics
	// labelled with the sandbox's name) and traces its requests.
	Telemetry *telemetry.Telemetry
	// CodeMode, when set, gives every sandbox the code-mode tool
	// (docs/code-mode.md); its Metrics are each sandbox's telemetry.
	CodeMode *codemode.Options
}

// Host is the daemon's core: the registry, the secrets, and a running
// gateway per sandbox.
type Host struct {
	opts    Options
	log     *slog.Logger
	store   *registry.Store
	secrets *secrets.Store
	front   *front.Handler
	// gov holds the policies, the approval queue and the audit log.
	gov *governance
	// privateGuard is the address policy of the servers registered with
	// --allow-private-address.
	privateGuard *netguard.Policy

	// mu serializes every change (the control socket's commands and the
	// built-in tools that change state), so two commands at once lose
	// nothing; state is only read or written under it.
	mu        sync.Mutex
	state     *registry.State
	sandboxes map[string]*sandbox

	// tokens maps a token's hash to its sandbox; replaced whole on every
	// change, read without a lock on every request.
	tokens atomic.Pointer[map[string]*sandbox]

	probes    sync.WaitGroup
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	oauth hostOAuth // OAuth tokens and authorizations in progress (oauth.go)
}

// sandbox is one running sandbox: its gateway over its own server instances.
type sandbox struct {
	name string
	mode string
	gw   *gateway.Gateway
	// unattachedMu guards unattached, which /health reads without h.mu.
	unattachedMu sync.Mutex
	// unattached holds why an attached server has no instance (its
	// secret or a required property is missing), by server.
	unattached map[string]string
	// forgetMetrics removes the sandbox's metrics when it is removed.
	forgetMetrics func()
	tel           *telemetry.Telemetry // the sandbox's; nil without telemetry
}

// Open reads the state directory and starts every sandbox's servers (a
// server that fails is retried in the background). A state file or secret
// store that cannot be read is an error, and nothing is written.
func Open(ctx context.Context, opts Options) (*Host, error) {
	if opts.Attach.Logger == nil {
		opts.Attach.Logger = slog.Default()
	}
	if opts.Attach.Guard == nil {
		opts.Attach.Guard = &netguard.Policy{Logger: opts.Attach.Logger}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	opts.Router.Logger = opts.Attach.Logger
	store := opts.Store
	if store == nil {
		var err error
		if store, err = registry.Open(opts.Dir); err != nil {
			return nil, err
		}
	}
	st, err := store.Load()
	if err != nil {
		store.Close()
		return nil, err
	}
	sec, err := secrets.Open(opts.Dir)
	if err != nil {
		store.Close()
		return nil, err
	}
	gov, err := openGovernance(opts.Dir, opts.Governance, opts.Attach.Logger)
	if err != nil {
		store.Close()
		return nil, err
	}
	h := &Host{opts: opts, log: opts.Attach.Logger, store: store, secrets: sec, state: st, gov: gov,
		sandboxes: map[string]*sandbox{}, closed: make(chan struct{}),
		privateGuard: &netguard.Policy{AllowAll: opts.Attach.Guard.AllowAll, AllowPrivate: true, Logger: opts.Attach.Logger}}
	h.snapshotServers()
	h.front = &front.Handler{Tenants: h.tenant, Health: h.health, MaxBodyBytes: opts.MaxBodyBytes,
		Telemetry: opts.Telemetry} // the metrics are the operator's: served by --metrics-listen, never to a sandbox's token
	if opts.Telemetry != nil && opts.Telemetry.Metrics != nil {
		opts.Telemetry.Metrics.WatchSessions(h.front.SessionCounts)
		opts.Telemetry.Metrics.WatchApprovals(gov.queue.Pending)
	}

	var wg sync.WaitGroup
	for _, name := range sortedKeys(st.Sandboxes) {
		sb := h.newSandbox(st.Sandboxes[name])
		h.sandboxes[name] = sb
		wg.Go(func() {
			startCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
			defer cancel()
			sb.gw.Router.StartAll(startCtx)
		})
	}
	wg.Wait()
	h.publishTokens()
	for _, name := range sortedKeys(st.Servers) {
		if len(st.Servers[name].Tools) == 0 {
			h.probe(name)
		}
	}
	return h, nil
}

// Handler serves /mcp for every sandbox, and /health.
func (h *Host) Handler() http.Handler { return h.front }

// Close ends every sandbox's sessions and stops every server. Calling it
// again returns the first call's error.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		close(h.closed)
		h.probes.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		h.front.Close()
		var errs []error
		for _, sb := range h.sandboxes {
			sb.gw.Close()
			errs = append(errs, sb.gw.Router.Close())
		}
		h.tokens.Store(&map[string]*sandbox{})
		errs = append(errs, h.store.Close(), h.gov.close())
		h.closeErr = errors.Join(errs...)
	})
	return h.closeErr
}

// Drain ends every sandbox's long-lived streams, the first step of a shutdown.
func (h *Host) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sb := range h.sandboxes {
		sb.gw.Drain()
	}
}

// tenant returns the gateway of the sandbox whose token this is.
func (h *Host) tenant(token string) *gateway.Gateway {
	if sb := (*h.tokens.Load())[hashToken(token)]; sb != nil {
		return sb.gw
	}
	return nil
}

// publishTokens makes the current sandboxes' tokens the valid ones. Called
// with h.mu held (or before serving).
func (h *Host) publishTokens() {
	m := make(map[string]*sandbox, len(h.sandboxes))
	for name, sb := range h.sandboxes {
		m[h.state.Sandboxes[name].TokenHash] = sb
	}
	h.tokens.Store(&m)
}

func (sb *sandbox) setUnattached(server, why string) {
	sb.unattachedMu.Lock()
	defer sb.unattachedMu.Unlock()
	sb.unattached[server] = why
}

// clearUnattached forgets why a server had no instance; had says it had none.
func (sb *sandbox) clearUnattached(server string) (had bool) {
	sb.unattachedMu.Lock()
	defer sb.unattachedMu.Unlock()
	_, had = sb.unattached[server]
	delete(sb.unattached, server)
	return had
}

func (sb *sandbox) unattachedNow() map[string]string {
	sb.unattachedMu.Lock()
	defer sb.unattachedMu.Unlock()
	return maps.Clone(sb.unattached)
}

// SandboxHealth is one sandbox in the host's /health: its mode, its tool
// count (built-in tools included) and each server's state and counts, as
// the sandbox gateway's /health gives them but without error text (which
// may name a path or a placeholder; `sandbox ls` shows it).
type SandboxHealth struct {
	Mode      string                  `json:"mode"`
	Servers   []string                `json:"servers"`
	Tools     int                     `json:"tools"`
	Upstreams map[string]ServerHealth `json:"upstreams"`
}

// ServerHealth is one server of a sandbox in /health.
type ServerHealth struct {
	State    string `json:"state"` // ready, starting, failed
	Tools    int    `json:"tools"`
	Restarts uint64 `json:"restarts"`
}

// HealthSandboxes is the per-sandbox part of the host's /health, by
// sandbox name. It takes no lock a command holds, so /health answers while
// a sandbox's servers start.
func (h *Host) HealthSandboxes() map[string]SandboxHealth {
	out := map[string]SandboxHealth{}
	for _, sb := range *h.tokens.Load() {
		sh := SandboxHealth{Mode: sb.mode, Servers: []string{}, Upstreams: map[string]ServerHealth{}}
		for name, st := range sb.gw.Router.Status() {
			sh.Upstreams[name] = ServerHealth{State: st.State, Tools: st.Tools, Restarts: st.Restarts}
		}
		for name := range sb.unattachedNow() {
			sh.Upstreams[name] = ServerHealth{State: "failed"}
		}
		for name := range sh.Upstreams {
			sh.Servers = append(sh.Servers, name)
		}
		sh.Tools = sb.gw.Router.ToolCount()
		slices.Sort(sh.Servers)
		out[sb.name] = sh
	}
	return out
}

// health is the /health document. Without a sandbox's token (detail
// false) it says only that the host is up: the sandboxes' names and their
// servers are not for anyone who can reach the port. With one, every
// sandbox with its servers' states.
func (h *Host) health(detail bool) any {
	if !detail {
		return map[string]string{"status": "ok"}
	}
	sandboxes := h.HealthSandboxes()
	return map[string]any{"status": "ok", "sandboxes": sandboxes}
}

// newSandbox builds a sandbox's gateway with its attached servers (not started).
func (h *Host) newSandbox(rec *registry.Sandbox) *sandbox {
	router := gateway.NewRouter(h.opts.Router)
	sb := &sandbox{name: rec.Name, mode: rec.Mode, gw: gateway.New(router, h.opts.Info), unattached: map[string]string{}}
	sb.gw.Guard = h.guardFor(sb)
	sb.gw.Tasks, sb.gw.Tasks.PerGateway = h.opts.Tasks, true
	sb.gw.Limits = h.opts.Limits
	tel, forget := h.opts.Telemetry.ForSandbox(rec.Name)
	sb.gw.Observer, sb.forgetMetrics = tel.Observer(), forget
	sb.tel = tel
	if tel != nil && tel.Metrics != nil {
		tel.Metrics.WatchServers(router.Status)
		tel.Metrics.WatchQuotas(sb.gw.QuotaStatus)
	}
	if err := router.SetBuiltins(append(h.builtins(sb), h.authorizeTools(rec.Name, rec.Servers)...)); err != nil {
		h.log.Error("built-in tools", "err", err) // a programming error: their definitions are constants
	}
	for _, name := range rec.Servers {
		if err := h.attachServer(sb, name); err != nil {
			h.log.Warn("a server attached to this sandbox cannot start", "sandbox", sb.name, "server", name, "err", err)
			sb.setUnattached(name, err.Error())
		}
	}
	return sb
}

// attachServer adds a registered server's instance to a sandbox's router,
// configured for that sandbox; it is not started.
func (h *Host) attachServer(sb *sandbox, name string) error {
	srv := h.state.Servers[name]
	if srv == nil {
		return fmt.Errorf("mcp server %q is not registered", name)
	}
	spec, err := h.instanceSpec(srv, sb.name, h.state.Sandboxes[sb.name].Config[name])
	if err != nil {
		return err
	}
	return h.addInstance(sb.gw, srv, spec, h.instanceDir(sb.name, name), sb.name)
}

// addInstance adds a server's instance to a gateway's router, creating a
// local instance's directory (dir, its ${sandbox_dir}) first. sandbox is
// the sandbox it runs for ("": none), whose own OAuth grant a server
// registered --per-sandbox uses.
func (h *Host) addInstance(gw *gateway.Gateway, srv *registry.Server, spec mcpconfig.Server, dir, sandbox string) error {
	var lookup func(string) (string, bool)
	if srv.Remote() {
		lookup = h.secretLookup(srv)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mcp server %q: its directory: %w", srv.Name, err)
	}
	o := h.opts.Attach
	o.Guard = h.guard(srv)
	grant := ""
	if srv.PerSandbox {
		// "" too when listing the tools in no sandbox: the shared grant,
		// which such a server has none of
		grant = sandbox
	}
	o.TokenStore = h.grantStore(grant)
	o.OnUnauthorized = func(server string, err error) { h.grantLost(server, grant, err) }
	o.OnStepUp = func(ctx context.Context, server string, scopes []string) error {
		return h.stepUp(ctx, server, grant, scopes)
	}
	attach.Add(gw, spec, lookup, o)
	return nil
}

// Reserved placeholders of a local server's env and arguments: the
// sandbox's name and its own directory for this server, so that servers
// keeping files (a memory server's graph) keep one set per sandbox.
const (
	placeholderSandbox    = "sandbox"
	placeholderSandboxDir = "sandbox_dir"
	// placeholderClientDir is a per-client server's (--per-client) own
	// directory per client session.
	placeholderClientDir = "client_dir"
)

// SandboxesDir holds, in the state directory, each sandbox's directory per
// local server: the server's working directory unless it was registered
// with --dir, and ${sandbox_dir}.
const SandboxesDir = "sandboxes"

// instanceDir is the directory of one sandbox's instance of a server;
// sandbox "" is the throwaway instance that lists a server's tools.
func (h *Host) instanceDir(sandbox, server string) string {
	if sandbox == "" {
		return filepath.Join(h.opts.Dir, "probe", server)
	}
	return filepath.Join(h.opts.Dir, SandboxesDir, sandbox, server)
}

// instanceSpec is a registered server as one sandbox runs it: a local
// server's placeholders resolved from the secret store (and the reserved
// ${sandbox} and ${sandbox_dir}), its declared properties from the
// sandbox's configuration or their defaults, its working directory its own.
func (h *Host) instanceSpec(srv *registry.Server, sandbox string, config map[string]string) (mcpconfig.Server, error) {
	if srv.Remote() {
		if err := h.checkSecrets(srv); err != nil {
			return mcpconfig.Server{}, err
		}
		return mcpconfig.Server{Name: srv.Name, Kind: mcpconfig.KindRemote, URL: srv.URL, Transport: srv.Transport, Headers: srv.Headers, OAuth: srv.OAuth,
			InitializeFirst: srv.InitializeFirst}, nil
	}
	dir := h.instanceDir(sandbox, srv.Name)
	secret := h.secretLookup(srv)
	lookup := func(key string) (string, bool) {
		switch key {
		case placeholderSandbox:
			// empty in the instance that lists the tools (sandbox ""),
			// which is no sandbox's
			return sandbox, true
		case placeholderSandboxDir:
			return dir, true
		case placeholderClientDir:
			// filled in by attach for each client's process
			return "${" + attach.ClientDirEnv + "}", srv.Share == mcpconfig.SharePerClient
		}
		return secret(key)
	}
	env := map[string]string{}
	for k, v := range srv.Env {
		expanded, err := mcpconfig.Expand(v, lookup)
		if err != nil {
			return mcpconfig.Server{}, fmt.Errorf("mcp server %q: env %s: %w%s", srv.Name, k, err, h.secretHint(srv, v))
		}
		env[k] = expanded
	}
	for _, p := range srv.Config {
		v, ok := config[p.Name]
		if !ok {
			v, ok = p.Default, p.Default != ""
		}
		if !ok {
			if p.Required {
				return mcpconfig.Server{}, fmt.Errorf("mcp server %q needs its property %q: set it with mcp-config-set {\"server\":%q,\"config\":{%q:...}}", srv.Name, p.Name, srv.Name, p.Name)
			}
			continue
		}
		env[p.Env] = v
	}
	args := make([]string, len(srv.Args))
	for i, a := range srv.Args {
		expanded, err := mcpconfig.Expand(a, lookup)
		if err != nil {
			return mcpconfig.Server{}, fmt.Errorf("mcp server %q: argument %d: %w%s", srv.Name, i+1, err, h.secretHint(srv, a))
		}
		args[i] = expanded
	}
	workDir := srv.Dir
	if workDir == "" {
		workDir = dir
	}
	return mcpconfig.Server{Name: srv.Name, Kind: mcpconfig.KindLocal, Command: append([]string{srv.Command}, args...), Dir: workDir, Env: env, Share: srv.Share}, nil
}

// secretLookup resolves a server's ${name} placeholders from the secret
// store, only secrets set for the server's current endpoint.
func (h *Host) secretLookup(srv *registry.Server) func(string) (string, bool) {
	binding := srv.Binding()
	return func(key string) (string, bool) {
		v, err := h.secrets.Get(secretName(srv.Name, key), binding)
		if err != nil && isClientSecretKey(key) {
			// A confidential client's secret under either of its names.
			other := map[string]string{ClientSecretKey: LegacyClientSecretKey, LegacyClientSecretKey: ClientSecretKey}[key]
			v, err = h.secrets.Get(secretName(srv.Name, other), binding)
		}
		return v, err == nil
	}
}

// checkSecrets reports the first placeholder of a remote server's headers
// without a usable secret, saying why (never set, or set for another URL).
func (h *Host) checkSecrets(srv *registry.Server) error {
	for _, key := range placeholders(srv) {
		if _, err := h.secrets.Get(secretName(srv.Name, key), srv.Binding()); err != nil {
			return fmt.Errorf("mcp server %q: placeholder ${%s}: %w", srv.Name, key, err)
		}
	}
	return nil
}

func (h *Host) secretHint(srv *registry.Server, template string) string {
	names, _ := mcpconfig.PlaceholderNames(template)
	for _, key := range names {
		if _, err := h.secrets.Get(secretName(srv.Name, key), srv.Binding()); err != nil {
			return fmt.Sprintf(" (%v)", err)
		}
	}
	return ""
}

// secretName is the store's name of a server's secret.
func secretName(server, key string) string { return "mcp:" + server + ":" + key }

// placeholders are the secret keys a server's templates name, sorted.
func placeholders(srv *registry.Server) []string {
	var keys []string
	add := func(v string) {
		names, _ := mcpconfig.PlaceholderNames(v)
		for _, n := range names {
			if !srv.Remote() && (n == placeholderSandbox || n == placeholderSandboxDir || n == placeholderClientDir && srv.Share == mcpconfig.SharePerClient) {
				continue // not secrets
			}
			if !slices.Contains(keys, n) {
				keys = append(keys, n)
			}
		}
	}
	for _, v := range srv.Headers {
		add(v)
	}
	for _, v := range srv.Env {
		add(v)
	}
	for _, v := range srv.Args {
		add(v)
	}
	slices.Sort(keys)
	return keys
}

// save writes the state; called with h.mu held after every change.
func (h *Host) save() error {
	if err := h.store.Save(h.state); err != nil {
		return fmt.Errorf("saving the state: %w", err)
	}
	return nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// toolsOf reads name and description of tool definitions, for mcp-find.
func toolsOf(defs []json.RawMessage) []registry.Tool {
	tools := make([]registry.Tool, 0, len(defs))
	for _, d := range defs {
		var t registry.Tool
		if json.Unmarshal(d, &t) == nil && t.Name != "" {
			tools = append(tools, t)
		}
	}
	return tools
}

// listTools lists a server's tools once in a throwaway instance and keeps
// them in its registration, for mcp-find.
func (h *Host) listTools(ctx context.Context, name string) error {
	return h.listToolsAs(ctx, name, "")
}

// listToolsAs lists a server's tools with the OAuth grant of sandbox (a
// server registered --per-sandbox has no shared grant).
func (h *Host) listToolsAs(ctx context.Context, name, sandbox string) error {
	h.mu.Lock()
	srv := h.state.Servers[name]
	if srv == nil {
		h.mu.Unlock()
		return h.unknownServer(name)
	}
	spec, err := h.instanceSpec(srv, "", nil)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	gw := gateway.New(gateway.NewRouter(h.opts.Router), h.opts.Info)
	defer gw.Router.Close()
	if err := h.addInstance(gw, srv, spec, h.instanceDir("", name), sandbox); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	if err := gw.Router.StartServer(ctx, name); err != nil {
		return err
	}
	tools := toolsOf(gw.Router.Tools(name))
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.state.Servers[name]; cur == srv {
		srv.Tools = tools
		return h.save()
	}
	return nil
}

// probe lists a server's tools in the background (servers registered before
// their tools could be listed, at start-up).
func (h *Host) probe(name string) {
	h.probes.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-h.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := h.listTools(ctx, name); err != nil {
			h.log.Info("the server's tools are not known yet; mcp-find uses its name and description", "server", name, "err", err)
		}
	})
}
