// Package attach builds the upstreams of one configured server and adds
// them to a router: one supervised process for a local or GitHub server,
// whatever protocol era its clients speak (a process per client with
// "share": "per-client"), an HTTP session per client for a remote one. The sandbox gateway (serve) and the host
// daemon (host) both attach servers through it.
package attach

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/github"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// The upstreams and their wrappers report their era to the gateway.
var (
	_ gateway.StatelessReporter = (*upstream.Stdio)(nil)
	_ gateway.StatelessReporter = (*upstream.HTTP)(nil)
	_ gateway.StatelessReporter = (*remoteUpstream)(nil)
	_ gateway.StatelessReporter = (*clientStdio)(nil)
)

// Options are what every attached server shares. The zero value works for
// local servers with an empty environment.
type Options struct {
	// Env is the base environment of a local server's process (the
	// gateway's own, less its token); the server's own env overlays it.
	Env []string
	// Guard checks every address a remote server's connections dial.
	Guard *netguard.Policy
	// Logger receives the gateway's messages; nil means slog.Default().
	Logger *slog.Logger
	// ServerLog receives the servers' stderr, each line prefixed with the
	// server's name.
	ServerLog io.Writer
	// MaxMessageBytes bounds one message from a server; 0 is the upstream's default.
	MaxMessageBytes int
	// GitHubDir is where GitHub servers are cloned; GitHubURL replaces
	// https://github.com (a mirror, in tests).
	GitHubDir, GitHubURL string
	// ClientInfo is the gateway's clientInfo in its initialize requests.
	ClientInfo json.RawMessage
	// TokenStore keeps the OAuth tokens of remote servers a person
	// authorized (host mode); nil in a sandbox, where only the headless
	// client_credentials grant works.
	TokenStore oauth.Store
	// OnUnauthorized is told when a remote server's OAuth grant is lost
	// (a refused refresh, a revoked grant), in its own goroutine.
	OnUnauthorized func(server string, err error)
	// OnStepUp is asked for a wider grant by a person within a call that
	// the server refused for lack of scope (oauth.Stored.StepUp).
	OnStepUp func(ctx context.Context, server string, scopes []string) error
}

// SharedClientCapabilities are offered to a server every client shares:
// every client capability the gateway can route; a request for one the
// calling client lacks is refused by the gateway with a clear error.
var SharedClientCapabilities = json.RawMessage(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}},"tasks":{"requests":{"sampling":{"createMessage":{}},"elicitation":{"create":{}}}}}`)

// Add adds the server to the router of gw (not started). lookup resolves
// the ${NAME} placeholders of a remote server's headers when it connects;
// nil means the server's own env only.
func Add(gw *gateway.Gateway, s mcpconfig.Server, lookup func(string) (string, bool), o Options) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	router := gw.Router
	// The upstreams are built with these hooks; the router's Add below
	// binds them to the server it registers.
	hooks := gw.UpstreamHooks(s.Name)
	switch {
	case s.Kind == mcpconfig.KindRemote:
		addRemote(router, s, hooks, lookup, o)
	case s.Share == mcpconfig.SharePerClient:
		// A process per client session (and one of the gateway's own, for
		// listing and for 2026-07-28 clients), so a server's requests to
		// its client always have exactly one client to go to.
		router.AddPerClient(newClientStdio(s, o, hooks, SharedClientCapabilities), hooks, func(caps json.RawMessage, h gateway.Hooks) gateway.Upstream {
			return newClientStdio(s, o, h, caps)
		})
	default:
		// One process for every client of either era: its state and its
		// tool list are the ones all clients see. It is spoken to in the
		// session era when it speaks that era (upstream.Stdio asks for
		// initialize first), which keeps its requests to the client and its
		// notifications on one connection; 2026-07-28 clients are bridged.
		router.AddShared(newStdio(s, o, hooks), hooks)
	}
	router.SetCallTimeout(s.Name, s.Timeout)
}

// newStdio builds the process upstream of a local or GitHub server.
func newStdio(s mcpconfig.Server, o Options, hooks gateway.Hooks) gateway.Upstream {
	return newStdioCaps(s, o, hooks, SharedClientCapabilities)
}

func newStdioCaps(s mcpconfig.Server, o Options, hooks gateway.Hooks, caps json.RawMessage) gateway.Upstream {
	env := withPreferOffline(s, MergeEnv(o.Env, s.Env))
	command := s.Command
	if len(command) == 3 && command[0] == "/bin/sh" && command[1] == "-c" {
		if argv, ok := directArgv(command[2], s.Env); ok {
			command = argv
		}
	}
	opts := upstream.StdioOptions{
		Name:            s.Name,
		Command:         command,
		Dir:             s.Dir,
		Env:             env,
		Stderr:          quietExpected(o.ServerLog, o.Logger, s.Name),
		Logger:          o.Logger,
		ClientInfo:      o.ClientInfo,
		Capabilities:    caps,
		OnNotification:  hooks.OnNotification,
		OnRequest:       hooks.OnRequest,
		MaxMessageBytes: o.MaxMessageBytes,
	}
	if s.GitHub == nil {
		return upstream.NewStdio(opts)
	}
	repo := github.Repo{Server: s.Name, Owner: s.GitHub.Owner, Name: s.GitHub.Repo, InstallCmd: s.GitHub.InstallCmd}
	opts.Dir = filepath.Join(o.GitHubDir, repo.Owner, repo.Name)
	return &githubUpstream{
		Stdio: upstream.NewStdio(opts),
		repo:  repo,
		opts:  github.Options{Dir: o.GitHubDir, BaseURL: o.GitHubURL, Env: env, Output: o.ServerLog},
	}
}

// githubUpstream clones and installs its repository before its first start.
type githubUpstream struct {
	*upstream.Stdio
	repo github.Repo
	opts github.Options
}

func (u *githubUpstream) Start(ctx context.Context) error {
	if _, err := github.Prepare(ctx, u.repo, u.opts); err != nil {
		return err
	}
	return u.Stdio.Start(ctx)
}

// addRemote registers a remote server: the gateway's own session, and one
// per session-era client offered that client's capabilities.
func addRemote(router *gateway.Router, s mcpconfig.Server, hooks gateway.Hooks, lookup func(string) (string, bool), o Options) {
	client := upstream.NewHTTPClient(s.Name, o.Guard)
	base := upstream.HTTPOptions{
		Name: s.Name, URL: s.URL, Transport: s.Transport, Client: client, Guard: o.Guard, Logger: o.Logger,
		ClientInfo: o.ClientInfo, ParamHeaders: &upstream.ParamHeaders{}, DiscoverFirst: !s.InitializeFirst,
	}
	if s.OAuth != nil {
		// One OAuth client for the server, shared by its sessions; its
		// requests to the authorization server dial through the same guard.
		a := oauth.ForServer(s, lookup, o.TokenStore, &http.Client{Transport: client.Transport, Timeout: 30 * time.Second, CheckRedirect: oauth.CheckRedirect})
		a.OnUnauthorized = o.OnUnauthorized
		a.StepUp = o.OnStepUp
		base.Auth = a
	}
	mk := func(caps json.RawMessage, h gateway.Hooks) gateway.Upstream {
		opts := base
		opts.Capabilities, opts.OnNotification, opts.OnRequest = caps, h.OnNotification, h.OnRequest
		return &remoteUpstream{swappable: swappable{name: s.Name}, spec: s, lookup: lookup, opts: opts}
	}
	router.AddPerClient(mk(SharedClientCapabilities, hooks), hooks, mk)
}

// remoteUpstream is a remote server's upstream session; its headers are
// resolved when it starts, so a missing secret fails that server alone,
// naming the placeholder and never a value.
type remoteUpstream struct {
	swappable // a new session each Start
	spec      mcpconfig.Server
	lookup    func(string) (string, bool)
	opts      upstream.HTTPOptions
}

func (u *remoteUpstream) Start(ctx context.Context) error {
	headers, err := u.spec.ResolveHeaders(u.lookup)
	if err != nil {
		return err
	}
	opts := u.opts
	opts.Headers = headers
	h := upstream.NewHTTP(opts)
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return fmt.Errorf("mcp server %q: %w", u.spec.Name, upstream.ErrClosed)
	}
	prev := u.up
	u.up = h
	u.mu.Unlock()
	if prev != nil {
		_ = prev.Close()
	}
	return h.Start(ctx)
}

// Stateless reports whether the remote server speaks the 2026-07-28 era.
func (u *remoteUpstream) Stateless() bool {
	m, ok := u.current().(gateway.StatelessReporter)
	return ok && m.Stateless()
}

func (u *remoteUpstream) Close() error {
	u.mu.Lock()
	u.closed = true
	h := u.up
	u.mu.Unlock()
	if h == nil {
		return nil
	}
	return h.Close()
}

// MergeEnv overlays extra (a server's envs) on base, replacing same-named entries.
func MergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if _, overridden := extra[name]; !overridden {
			env = append(env, kv)
		}
	}
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		env = append(env, n+"="+extra[n])
	}
	return env
}
