package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Upstream is one MCP server as the router sees it. The stdio upstream
// (and later the HTTP ones) implement it.
type Upstream interface {
	Name() string
	// Start connects (spawns, initializes) the server.
	Start(ctx context.Context) error
	// Call sends one request and returns the server's response unchanged.
	// An error is a transport failure, never a JSON-RPC error response.
	Call(ctx context.Context, method string, params json.RawMessage) (*upstream.Response, error)
	// InitializeResult is the raw result of the server's initialize.
	InitializeResult() json.RawMessage
	// Generation changes each time the server is restarted.
	Generation() uint64
	Close() error
}

// RouterOptions configure a Router. The zero value works.
type RouterOptions struct {
	Logger *slog.Logger
	// Prefix decides when exposed names carry their server's name; the zero
	// value is the sandbox contract's collision rule.
	Prefix PrefixMode
	// PageSize is the number of items per page of a merged list; 0 means 500.
	PageSize int
	// MaxListPages bounds how many pages of one server's list are read; 0 means 100.
	MaxListPages int
}

// Router holds the merged view of every upstream and forwards calls.
type Router struct {
	opts    RouterOptions
	log     *slog.Logger
	servers []*server // sorted by name; fixed after the first Start

	rebuildMu     sync.Mutex
	tools         atomic.Pointer[view]
	onListChanged func(listKind)
	slowestStart  time.Duration
}

type server struct {
	name string
	up   Upstream

	mu        sync.Mutex // serializes listings of this server
	tools     []json.RawMessage
	listedGen uint64
	relisting atomic.Bool
}

// NewRouter returns a router with no servers.
func NewRouter(opts RouterOptions) *Router {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if opts.MaxListPages <= 0 {
		opts.MaxListPages = 100
	}
	r := &Router{opts: opts, log: opts.Logger}
	r.tools.Store(buildView(nil, toolsKind, opts))
	return r
}

// Add registers an upstream under its name. Call it before Start.
func (r *Router) Add(up Upstream) {
	r.servers = append(r.servers, &server{name: up.Name(), up: up})
	slices.SortFunc(r.servers, func(a, b *server) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
}

// Servers returns the server names, sorted.
func (r *Router) Servers() []string {
	names := make([]string, len(r.servers))
	for i, s := range r.servers {
		names[i] = s.name
	}
	return names
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
	msg := ""
	for i, n := range names {
		if i > 0 {
			msg += "; "
		}
		msg += e.Failed[n].Error()
	}
	return msg
}

// Start starts every server in parallel and lists its tools. It returns a
// *StartError naming every server that failed; the others are ready.
func (r *Router) Start(ctx context.Context) error {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed = map[string]error{}
	)
	for _, s := range r.servers {
		wg.Go(func() {
			began := time.Now()
			err := s.up.Start(ctx)
			if err == nil {
				err = r.list(ctx, s)
			}
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
	r.rebuild()
	if len(failed) > 0 {
		return &StartError{Failed: failed}
	}
	return nil
}

// Close stops every server.
func (r *Router) Close() error {
	var errs []error
	for _, s := range r.servers {
		if err := s.up.Close(); err != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}

// SlowestStart is how long the slowest server took to start and list, the
// floor of the gateway's start-up time.
func (r *Router) SlowestStart() time.Duration { return r.slowestStart }

// ToolCount is the number of exposed tools.
func (r *Router) ToolCount() int { return len(r.tools.Load().items) }

// list reads all pages of a server's tools/list.
func (r *Router) list(ctx context.Context, s *server) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := s.up.Generation()
	if !hasCapability(s.up.InitializeResult(), "tools") {
		s.tools, s.listedGen = nil, gen
		return nil
	}
	var all []json.RawMessage
	var cursor string
	for page := 0; ; page++ {
		if page == r.opts.MaxListPages {
			r.log.Warn("tools/list has too many pages; the rest is ignored", "server", s.name, "pages", page)
			break
		}
		var params json.RawMessage
		if cursor != "" {
			params = wire.AppendString([]byte(`{"cursor":`), cursor)
			params = append(params, '}')
		}
		resp, err := s.up.Call(ctx, "tools/list", params)
		if err != nil {
			return fmt.Errorf("mcp server %q: listing tools: %w", s.name, err)
		}
		if resp.Error != nil {
			return fmt.Errorf("mcp server %q: listing tools: %w", s.name, wire.DecodeError(resp.Error))
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return fmt.Errorf("mcp server %q: listing tools: malformed result: %w", s.name, err)
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	s.tools, s.listedGen = all, gen
	return nil
}

// hasCapability reports whether an initialize result declares a server capability.
func hasCapability(initResult json.RawMessage, name string) bool {
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	if json.Unmarshal(initResult, &res) != nil {
		return false
	}
	v, ok := res.Capabilities[name]
	return ok && string(v) != "null"
}

// rebuild recomputes the merged views from every server's last listing.
func (r *Router) rebuild() {
	r.rebuildMu.Lock()
	defer r.rebuildMu.Unlock()
	lists := make([]serverItems, len(r.servers))
	for i, s := range r.servers {
		s.mu.Lock()
		lists[i] = serverItems{server: s, items: s.tools}
		s.mu.Unlock()
	}
	v := buildView(lists, toolsKind, r.opts)
	for _, w := range v.warnings {
		r.log.Warn(w)
	}
	old := r.tools.Swap(v)
	if !v.sameAs(old) && r.onListChanged != nil {
		r.onListChanged(toolsKind)
	}
}

// relistIfRestarted re-lists a server in the background when its process was
// restarted since its tools were listed, since a new process may offer other tools.
func (r *Router) relistIfRestarted(s *server) {
	s.mu.Lock()
	stale := s.up.Generation() != s.listedGen
	s.mu.Unlock()
	if !stale || !s.relisting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.relisting.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), relistTimeout)
		defer cancel()
		if err := r.list(ctx, s); err != nil {
			r.log.Warn("re-listing tools after a restart failed", "server", s.name, "err", err)
			return
		}
		r.rebuild()
	}()
}

// ListTools answers tools/list from the merged view.
func (r *Router) ListTools(params json.RawMessage) (json.RawMessage, *wire.Error) {
	return r.tools.Load().page(params)
}

// CallTool forwards a tools/call to the server that owns the named tool.
// Params travel unchanged except for the name.
func (r *Router) CallTool(ctx context.Context, params json.RawMessage) (*upstream.Response, error) {
	name, ok := wire.GetString(params, "name")
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalidParams, "tools/call needs params.name")
	}
	it := r.tools.Load().byName[name]
	if it == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "Unknown tool: %s", name)
	}
	if it.original != name {
		var err error
		if params, err = wire.SetString(params, "name", it.original); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "tools/call params: %v", err)
		}
	}
	resp, err := it.server.up.Call(ctx, "tools/call", params)
	r.relistIfRestarted(it.server)
	if err != nil {
		return nil, err
	}
	return resp, nil
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
