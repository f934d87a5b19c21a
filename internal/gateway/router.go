package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Upstream is one MCP server as the router sees it. internal/upstream's
// stdio and HTTP upstreams implement it.
type Upstream interface {
	Name() string
	// Start connects (spawns, initializes) the server.
	Start(ctx context.Context) error
	// Call sends one request and returns the server's response unchanged.
	// An error is a transport failure, never a JSON-RPC error response.
	Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error)
	// Notify sends a notification to a running server.
	Notify(ctx context.Context, method string, params json.RawMessage) error
	// InitializeResult is the raw result of the server's initialize.
	InitializeResult() json.RawMessage
	// Generation changes each time the server is restarted.
	Generation() uint64
	Close() error
}

// DefaultPageSize is the number of items per page of a merged list unless
// RouterOptions say otherwise: more than any agent is given in practice, so
// that a client that reads the first page only — many do; the TypeScript
// and Python SDKs' servers never paginate their tools — still sees every
// tool of all its servers (64 servers of 100 tools each fit in one page),
// while a list of unbounded size is still cut into answers of a few MiB.
const DefaultPageSize = 10000

// RouterOptions configure a Router. The zero value works.
type RouterOptions struct {
	Logger *slog.Logger
	// Prefix decides when exposed names carry their server's name; the zero
	// value is the sandbox contract's collision rule.
	Prefix PrefixMode
	// PageSize is the number of items per page of a merged list; 0 means
	// DefaultPageSize.
	PageSize int
	// MaxListPages bounds how many pages of one server's list are read; 0 means 100.
	MaxListPages int
	// CallTimeout bounds one forwarded call; 0 means none. A call that
	// outlives it is cancelled at its server and answered with an error.
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts to start a
	// server that failed (StartAll); 0 means 1 s and 1 min.
	RetryMin, RetryMax time.Duration
}

// Router holds the merged view of every upstream and forwards calls.
type Router struct {
	opts RouterOptions
	log  *slog.Logger
	// servers is the current set, sorted (built-in tools first, then by
	// name); replaced whole (copy on write) when a server is added or
	// removed, so readers take it without a lock.
	servers   atomic.Pointer[[]*server]
	serversMu sync.Mutex // serializes changes of the set
	builtinMu sync.Mutex // serializes changes of the built-in tools (builtin.go)
	// clients is where the router's own changes reach the clients (set by
	// New); nil: nobody is told. The router holds no pointer to the gateway.
	clients clientSink

	rebuildMu sync.Mutex
	views     [4]atomic.Pointer[view] // by listKind.index
	claims    [4]nameClaims           // of named kinds; under rebuildMu
	// claiming is set once the servers present at start have started (or
	// the first server was started alone): before it, names follow the
	// sorted-order rule only, so a listing during start claims nothing.
	claiming     atomic.Bool
	slowestStart time.Duration
	apps         atomic.Pointer[appURIs] // who owns each ui:// URI (apps.go); set by rebuild

	closed   chan struct{} // closed by Close: background retries stop
	closeMu  sync.Once
	retrying sync.WaitGroup
}

type server struct {
	name string
	up   Upstream

	builtin map[string]Builtin // the gateway's own tools, by name; nil for a real server
	gone    chan struct{}      // closed when the server is removed: its retries stop

	mu        sync.Mutex // serializes listings of this server
	items     [4][]json.RawMessage
	listedGen atomic.Uint64 // the generation listed last; read on every call without s.mu
	relisting atomic.Bool   // a re-listing goroutine runs
	dirty     atomic.Uint32 // kinds (bit listKind.index) changed since their last re-listing began

	stateMu   sync.Mutex
	state     string // "starting", "ready", "failed"
	lastErr   string
	failures  int
	withdrawn []string // exposed names of its tools and prompts while it is lost

	activeMu   sync.Mutex
	active     map[*call]struct{} // client calls in flight on this server
	rootsOwner *Session           // the client that last said its roots changed
	rootsAt    time.Time

	// A remote server gets an upstream session per session-era client,
	// offered exactly that client's capabilities (see AddPerClient).
	newPerClient func(capabilities json.RawMessage, hooks Hooks) Upstream
	// extSessions: its sessions for 2026-07-28 clients' declared
	// extensions (extensions.go).
	extSessions extensionSessions

	callTimeout time.Duration // this server's own; 0: RouterOptions.CallTimeout
}

// clientSink is what the router tells the gateway's clients, through their
// queues: a merged list changed, a server was removed (their own sessions
// of it close). The gateway's client set implements it.
type clientSink interface {
	listChanged(k *listKind)
	serverRemoved(s *server) []error
}

// NewRouter returns a router with no servers.
func NewRouter(opts RouterOptions) *Router {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.MaxListPages <= 0 {
		opts.MaxListPages = 100
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = time.Minute
	}
	r := &Router{opts: opts, log: opts.Logger, closed: make(chan struct{})}
	r.servers.Store(&[]*server{})
	for _, k := range kinds {
		if k.rename {
			r.claims[k.index] = nameClaims{}
		}
		r.views[k.index].Store(buildView(nil, k, opts, nil))
	}
	return r
}

// Add registers an upstream under its name. Servers added before Start or
// StartAll are started by it; one added later is started by StartServer.
// Until it has started and listed, it offers nothing. Add binds no Hooks:
// an upstream built with UpstreamHooks is added with AddShared or
// AddPerClient, or what its server sends unprompted is dropped.
func (r *Router) Add(up Upstream) { r.add(newServer(up)) }

func newServer(up Upstream) *server {
	return &server{name: up.Name(), up: up, active: map[*call]struct{}{}, state: "starting", gone: make(chan struct{})}
}

func (r *Router) add(s *server) {
	r.serversMu.Lock()
	defer r.serversMu.Unlock()
	next := append(slices.Clone(r.all()), s)
	slices.SortFunc(next, func(a, b *server) int {
		// The gateway's own tools come first, so they keep their names.
		if (a.builtin != nil) != (b.builtin != nil) {
			if a.builtin != nil {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	r.servers.Store(&next)
}

// all is the current set of servers; the slice is never modified.
func (r *Router) all() []*server { return *r.servers.Load() }

// StartServer starts and lists one added server, then merges what it
// offers into the view (clients hear list_changed). On error the server
// stays added, offering nothing: Remove it, or leave it failed.
func (r *Router) StartServer(ctx context.Context, name string) error {
	s := r.server(name)
	if s == nil {
		return fmt.Errorf("mcp server %q is not added", name)
	}
	err := r.startOne(ctx, s)
	r.claiming.Store(true)
	r.rebuild(kinds...)
	return err
}

// Remove takes a server out: its tools, prompts and resources leave the
// view (clients hear list_changed), its retries stop, and its upstreams,
// including every client's own session of it, are closed.
func (r *Router) Remove(name string) error {
	r.serversMu.Lock()
	cur := r.all()
	i := slices.IndexFunc(cur, func(s *server) bool { return s.name == name })
	if i < 0 {
		r.serversMu.Unlock()
		return fmt.Errorf("mcp server %q is not added", name)
	}
	s := cur[i]
	next := slices.Delete(slices.Clone(cur), i, i+1)
	r.servers.Store(&next)
	r.serversMu.Unlock()

	close(s.gone)
	r.rebuildMu.Lock()
	for _, c := range r.claims {
		c.release(s)
	}
	r.rebuildMu.Unlock()
	r.rebuild(kinds...)
	var errs []error
	if r.clients != nil {
		errs = append(errs, r.clients.serverRemoved(s)...)
	}
	errs = append(errs, s.close()...)
	return errors.Join(errs...)
}

// close closes a server's upstream, and its sessions for 2026-07-28
// clients' extensions.
func (s *server) close() []error {
	var errs []error
	for _, err := range s.extSessions.close() {
		errs = append(errs, fmt.Errorf("mcp server %q (a session for a client's extensions): %w", s.name, err))
	}
	if err := s.up.Close(); err != nil {
		errs = append(errs, fmt.Errorf("mcp server %q: %w", s.name, err))
	}
	return errs
}

// AddShared registers an upstream like Add, as the one upstream of its
// server for every client of either era (a stdio server's one process: one
// state, one tool list). A client of another era than the server's is
// bridged. hooks are the ones up was built with: from now on they route to
// this server.
func (r *Router) AddShared(up Upstream, hooks Hooks) {
	s := newServer(up)
	hooks.bind(s)
	r.add(s)
}

// AddPerClient registers a server whose upstream sessions are cheap (a
// remote one): up is the gateway's own session, for listing and for
// 2026-07-28 clients; each session-era client gets its own from newPerClient,
// on its first call, offered that client's capabilities, its server-to-client
// requests and messages going to that client alone. hooks are the ones up
// was built with: from now on they route to this server.
func (r *Router) AddPerClient(up Upstream, hooks Hooks, newPerClient func(capabilities json.RawMessage, hooks Hooks) Upstream) {
	s := newServer(up)
	s.newPerClient = newPerClient
	hooks.bind(s)
	r.add(s)
}

// SetCallTimeout gives one server its own bound on a call.
func (r *Router) SetCallTimeout(name string, d time.Duration) {
	if s := r.server(name); s != nil {
		s.callTimeout = d
	}
}

// Servers returns the server names, sorted.
func (r *Router) Servers() []string {
	var names []string
	for _, s := range r.all() {
		if s.builtin == nil {
			names = append(names, s.name)
		}
	}
	return names
}

func (r *Router) server(name string) *server {
	for _, s := range r.all() {
		if s.name == name {
			return s
		}
	}
	return nil
}

// StartError reports the servers that failed to start.
type StartError struct {
	Failed map[string]error // by server name
}

func (e *StartError) Error() string {
	names := make([]string, 0, len(e.Failed))
	for n := range e.Failed {
		names = append(names, n)
	}
	slices.Sort(names)
	msgs := make([]string, len(names))
	for i, n := range names {
		msgs[i] = e.Failed[n].Error()
	}
	return strings.Join(msgs, "; ")
}

// Start starts every server in parallel and lists what it offers. It returns
// a *StartError naming every server that failed; the others are ready. This
// is the sandbox launcher's fail-fast start.
func (r *Router) Start(ctx context.Context) error {
	failed := r.startAll(ctx)
	r.claiming.Store(true)
	r.rebuild(kinds...)
	if len(failed) > 0 {
		return &StartError{Failed: failed}
	}
	return nil
}

// StartAll starts every server like Start, but a server that fails does not
// stop the others: it is retried in the background with exponential backoff
// and jitter until it comes up (its tools then appear, with list_changed) or
// the router is closed. If ctx is cancelled (the gateway stops before it
// is ready), the servers that did not start are neither blamed nor retried.
func (r *Router) StartAll(ctx context.Context) {
	failed := r.startAll(ctx)
	r.claiming.Store(true)
	r.rebuild(kinds...)
	if errors.Is(ctx.Err(), context.Canceled) {
		return // the start was called off (the gateway stops): no server is to blame
	}
	for name, err := range failed {
		r.log.Warn("mcp server failed to start; retrying in the background", "server", name, "err", err)
		r.retry(r.server(name))
	}
}

func (r *Router) startAll(ctx context.Context) map[string]error {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = map[string]error{}
	)
	for _, s := range r.all() {
		wg.Go(func() {
			began := time.Now()
			err := r.startOne(ctx, s)
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[s.name] = err
				return
			}
			r.slowestStart = max(r.slowestStart, took)
			r.log.Debug("server started", "server", s.name, "took", took)
		})
	}
	wg.Wait()
	return failed
}

// startOne starts and lists one server, recording its state.
func (r *Router) startOne(ctx context.Context, s *server) error {
	err := s.up.Start(ctx)
	if err == nil {
		err = r.list(ctx, s, kinds...)
	}
	s.setState(err)
	return err
}

func (s *server) setState(err error) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if err != nil {
		s.state, s.lastErr = "failed", err.Error()
		s.failures++
		return
	}
	s.state = "ready"
}

// retry starts a failed server again and again, backing off, in the background.
func (r *Router) retry(s *server) {
	r.retrying.Go(func() {
		delay := r.opts.RetryMin
		for attempt := 1; ; attempt++ {
			jittered := delay/2 + time.Duration(rand.Int64N(int64(delay)))
			select {
			case <-r.closed:
				return
			case <-s.gone:
				return
			case <-time.After(jittered):
			}
			ctx, cancel := context.WithTimeout(context.Background(), relistTimeout)
			err := r.startOne(ctx, s)
			cancel()
			if err == nil {
				r.log.Info("mcp server is up after retrying", "server", s.name, "attempts", attempt)
				r.recovered(s)
				return
			}
			r.log.Warn("mcp server still fails to start", "server", s.name, "attempt", attempt, "err", err)
			delay = min(delay*2, r.opts.RetryMax)
		}
	})
}

// recovered puts a server that started again after failing back into the
// merged view, under the names it had.
func (r *Router) recovered(s *server) {
	s.stateMu.Lock()
	s.withdrawn = nil
	s.stateMu.Unlock()
	r.rebuild(kinds...)
}

// lost takes a server that can no longer be started out of the merged view
// (its tools disappear, with list_changed) and retries it in the background.
func (r *Router) lost(s *server, err error) {
	s.stateMu.Lock()
	if s.state != "ready" {
		s.stateMu.Unlock()
		return
	}
	s.stateMu.Unlock()
	var names []string
	for _, k := range []*listKind{kindTools, kindPrompts} {
		for name, it := range r.view(k).byKey {
			if it.server == s {
				names = append(names, name)
			}
		}
	}
	s.setState(err)
	s.stateMu.Lock()
	s.withdrawn = names
	s.stateMu.Unlock()
	s.mu.Lock()
	s.items = [4][]json.RawMessage{}
	s.mu.Unlock()
	r.log.Warn("mcp server lost; its tools are withdrawn until it is back", "server", s.name, "err", err)
	r.rebuild(kinds...)
	r.retry(s)
}

// ServerStatus is what /health tells of one server.
type ServerStatus struct {
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	Restarts  uint64 `json:"restarts"`
	LastError string `json:"lastError,omitempty"`
	// Started is when its current process or session started (zero when
	// none is up or the upstream does not say), for metrics.
	Started time.Time `json:"-"`
}

// Status reports every server's state, by name.
func (r *Router) Status() map[string]ServerStatus {
	tools := map[*server]int{}
	for _, it := range r.view(kindTools).items {
		tools[it.server]++
	}
	out := map[string]ServerStatus{}
	for _, s := range r.all() {
		if s.builtin != nil {
			continue
		}
		s.stateMu.Lock()
		st := ServerStatus{State: s.state, Tools: tools[s], LastError: s.lastErr}
		s.stateMu.Unlock()
		if g := s.up.Generation(); g > 1 {
			st.Restarts = g - 1
		}
		if up, ok := s.up.(interface{ StartedAt() time.Time }); ok {
			st.Started = up.StartedAt()
		}
		out[s.name] = st
	}
	return out
}

// Close stops the background retries and every server.
func (r *Router) Close() error {
	r.closeMu.Do(func() { close(r.closed) })
	r.retrying.Wait()
	var errs []error
	for _, s := range r.all() {
		errs = append(errs, s.close()...)
	}
	return errors.Join(errs...)
}

// SlowestStart is how long the slowest server took to start and list, the
// floor of the gateway's start-up time.
func (r *Router) SlowestStart() time.Duration { return r.slowestStart }

// ToolCount is the number of exposed tools.
func (r *Router) ToolCount() int { return len(r.views[kindTools.index].Load().items) }

func (r *Router) view(k *listKind) *view { return r.views[k.index].Load() }

// list reads all pages of the given kinds of a server's lists, those its
// capabilities offer.
func (r *Router) list(ctx context.Context, s *server, ks ...*listKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.up.Generation()
	if err := r.listInto(ctx, s, s.up, &s.items, ks); err != nil {
		return err
	}
	s.listedGen.Store(gen)
	return nil
}

func (r *Router) listInto(ctx context.Context, s *server, up Upstream, dst *[4][]json.RawMessage, ks []*listKind) error {
	init := up.InitializeResult()
	for _, k := range ks {
		if !hasCapability(init, k.capability) {
			dst[k.index] = nil
			continue
		}
		items, err := r.listKind(ctx, s, up, k)
		if err != nil {
			return err
		}
		dst[k.index] = items
	}
	return nil
}

func (r *Router) listKind(ctx context.Context, s *server, up Upstream, k *listKind) ([]json.RawMessage, error) {
	var all []json.RawMessage
	var cursor string
	for page := 0; ; page++ {
		if page == r.opts.MaxListPages {
			r.log.Warn(k.method+" has too many pages; the rest is ignored", "server", s.name, "pages", page)
			return all, nil
		}
		var params json.RawMessage
		if cursor != "" {
			params = wire.AppendString([]byte(`{"cursor":`), cursor)
			params = append(params, '}')
		}
		resp, err := up.Call(ctx, k.method, params)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: %s: %w", s.name, k.method, err)
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("mcp server %q: %s: %w", s.name, k.method, wire.DecodeError(resp.Error))
		}
		var items []json.RawMessage
		if raw := wire.Get(resp.Result, k.field); raw != nil {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("mcp server %q: %s: malformed %q: %w", s.name, k.method, k.field, err)
			}
		}
		all = append(all, items...)
		next, _ := wire.GetString(resp.Result, "nextCursor")
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
}

// hasCapability reports whether an initialize result declares a server capability.
func hasCapability(initResult json.RawMessage, name string) bool {
	caps := wire.Get(initResult, "capabilities")
	v := wire.Get(caps, name)
	return v != nil && string(v) != "null"
}

// rebuild recomputes the merged views of the given kinds from every
// server's last listing, and tells the clients about each that changed.
func (r *Router) rebuild(ks ...*listKind) {
	r.rebuildMu.Lock()
	var changed []*listKind
	// A ui:// URI renamed or no longer renamed changes the tools naming it.
	apps, appsChanged := r.refreshApps()
	if appsChanged {
		ks = appendMissing(ks, kindTools, kindResources, kindTemplates)
	}
	for _, k := range ks {
		servers := r.all()
		lists := make([]serverItems, len(servers))
		for i, s := range servers {
			s.mu.Lock()
			lists[i] = serverItems{server: s, items: s.items[k.index]}
			s.mu.Unlock()
			lists[i].items = apps.rewriteItems(k, s, lists[i].items)
		}
		var claims nameClaims
		if r.claiming.Load() {
			claims = r.claims[k.index]
		}
		v := buildView(lists, k, r.opts, claims)
		if k == kindResources || k == kindTemplates {
			apps.restoreOriginals(v)
		}
		for _, w := range v.warnings {
			r.log.Warn(w)
		}
		if old := r.views[k.index].Swap(v); !v.sameAs(old) && !slices.Contains(changed, k) {
			changed = append(changed, k)
		}
	}
	r.rebuildMu.Unlock()
	if r.clients != nil {
		for _, k := range changed {
			if k == kindTemplates && slices.Contains(changed, kindResources) {
				continue // one resources/list_changed covers both
			}
			r.clients.listChanged(k)
		}
	}
}

// capabilities merges what the servers offer into the gateway's own.
func (r *Router) capabilities() map[string]any {
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	subscribe := false
	for _, s := range r.all() {
		init := s.up.InitializeResult()
		for _, c := range []string{"prompts", "logging", "completions"} {
			if hasCapability(init, c) {
				switch c {
				case "prompts":
					caps[c] = map[string]any{"listChanged": true}
				default:
					caps[c] = map[string]any{}
				}
			}
		}
		if hasCapability(init, "resources") {
			res := wire.Get(wire.Get(init, "capabilities"), "resources")
			if v := wire.Get(res, "subscribe"); string(v) == "true" {
				subscribe = true
			}
			caps["resources"] = map[string]any{"listChanged": true, "subscribe": subscribe}
		}
		if isStateless(s.up) && offersTasks2(init) {
			mergeTasks(caps, bridgedTasks)
		} else {
			mergeTasks(caps, init)
		}
		mergeExtensions(caps, init)
	}
	return caps
}

// instructions joins the servers' instructions, each under its server's name.
func (r *Router) instructions() string {
	var b strings.Builder
	for _, s := range r.all() {
		text, _ := wire.GetString(s.up.InitializeResult(), "instructions")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s\n%s", s.name, strings.TrimSpace(text))
	}
	return b.String()
}

// resourceServer finds the server that serves a URI: the one listing it,
// else the first whose template matches it, else the first listing it in
// canonical form or whose template could match it under a loose reading
// (see resourceuri.go), else the only server offering resources at all.
func (r *Router) resourceServer(uri string) *server {
	resources, templates := r.view(kindResources), r.view(kindTemplates)
	if it := resources.byKey[uri]; it != nil {
		return it.server
	}
	for _, it := range templates.items {
		if it.match.matches(uri) {
			return it.server
		}
	}
	readings := uriReadings(uri)
	for _, it := range resources.items {
		if containsString(readings, it.canon) {
			return it.server
		}
	}
	for _, it := range templates.items {
		if it.match.mayMatch(readings) {
			return it.server
		}
	}
	var only *server
	for _, s := range r.all() {
		if hasCapability(s.up.InitializeResult(), "resources") {
			if only != nil {
				return nil
			}
			only = s
		}
	}
	return only
}

// cursor encodes a page offset as an opaque string.
func encodeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(offset)))
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || b[0] != 'o' {
		return 0, false
	}
	n, err := strconv.Atoi(string(b[1:]))
	return n, err == nil && n >= 0
}

// unavailable explains an unknown name that belongs to a server taken out of
// service, or returns "".
func (r *Router) unavailable(name string) string {
	for _, s := range r.all() {
		s.stateMu.Lock()
		down := s.state == "failed" && slices.Contains(s.withdrawn, name)
		lastErr := s.lastErr
		s.stateMu.Unlock()
		if down {
			return fmt.Sprintf("mcp server %q, which offers it, is unavailable and being restarted (%s)", s.name, lastErr)
		}
	}
	return ""
}
