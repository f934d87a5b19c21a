package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/launch"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/policy"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// handoff is what the launcher gives the serving process on its stdin: the
// servers as the launcher checked and resolved them (the serving process
// does not read the configuration again), the warnings found on the way,
// and the token.
type handoff struct {
	Servers  []mcpconfig.Server `json:"servers"`
	Warnings []string           `json:"warnings,omitempty"`
	Token    string             `json:"token"`
}

// shutdownGrace bounds how long in-flight requests may finish on SIGTERM.
const shutdownGrace = 10 * time.Second

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "mcp-gateway serve (--config '<json>' | --config-file FILE) [flags]",
		`Run the gateway in the foreground: start the servers, serve them on /mcp behind the
bearer token from `+tokenEnv+` (generated and written to --token-file when unset),
log to standard error, stop everything on SIGTERM or SIGINT.`, stderr)
	var g gatewayFlags
	g.register(fs)
	g.registerHTTP(fs)
	readyFD := fs.Int("ready-fd", -1, "report readiness on this file descriptor (used by the launcher)")
	listenFD := fs.Int("listen-fd", -1, "serve on the listening socket inherited as this file descriptor instead of binding --host and --port (used by the launcher, which binds first)")
	fromLauncher := fs.Bool("handoff-stdin", false, "read the config and token from standard input (used by the launcher)")
	pidFile := fs.String("pid-file", "", "on exit, remove `file` if it holds this process's pid (used by the launcher)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	// From here a SIGINT or SIGTERM stops the start-up, too: nothing is
	// reported ready, nothing is blamed, and the token file is removed.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logOut := &syncWriter{w: stderr}
	logger, err := newServingLogger(logOut, g.logLevel, &g.http, &g.telemetry)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway serve: %v\n", err)
		return exitUsage
	}
	notifier, err := launch.OpenNotifier(*readyFD)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway serve: %v\n", err)
		return exitUsage
	}
	s := &serveStart{logger: logger, notifier: notifier, stderr: stderr}
	var specs []mcpconfig.Server
	if *fromLauncher {
		specs, err = s.fromHandoff()
	} else {
		specs, err = checkedConfig(&g, logger)
	}
	if err != nil {
		return s.fail(exitUsage, err)
	}
	// Bind first: a port that is taken fails the start before any server
	// starts or the token file is written.
	ln, err := listenGateway(&g, *listenFD)
	if err != nil {
		return s.fail(exitError, err)
	}
	defer ln.Close()
	if !*fromLauncher {
		if err := s.writeToken(&g); err != nil {
			return s.fail(exitError, err)
		}
	}
	os.Unsetenv(tokenEnv)
	if *pidFile != "" {
		defer launch.RemovePIDFile(*pidFile, os.Getpid())
	}

	// From the launcher, any server failing fails the launch (the sandbox
	// contract); otherwise a failing server is retried in the background.
	err = serve(ctx, &g, specs, ln, s.token, *fromLauncher, notifier, logger, logOut)
	switch {
	case errors.Is(err, errInterrupted):
		return s.interrupted()
	case err != nil:
		code := exitError
		var ce *configError
		if errors.As(err, &ce) {
			code = exitUsage
		}
		return s.fail(code, err)
	}
	return exitOK
}

// exitInterrupted is the exit code of a start-up stopped by SIGINT or
// SIGTERM (128 + SIGINT, as shells report a Ctrl-C).
const exitInterrupted = 130

// errInterrupted is serve's error when a signal stopped it before it was
// ready.
var errInterrupted = errors.New("interrupted during start-up")

// listenGateway is the gateway's listener: the socket the launcher bound
// (listenFD), else --host and --port; a port taken says by whom and
// suggests --port.
func listenGateway(g *gatewayFlags, listenFD int) (net.Listener, error) {
	if listenFD < 0 {
		return listenTCP(g.host, g.port)
	}
	f := os.NewFile(uintptr(listenFD), "listener")
	if f == nil {
		return nil, fmt.Errorf("--listen-fd=%d is not an open file descriptor", listenFD)
	}
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("--listen-fd=%d: %w", listenFD, err)
	}
	return ln, nil
}

// newServingLogger is the log of a command that serves (serve, host),
// once the flags of its HTTP front and its telemetry are checked: the
// first error is a usage error.
func newServingLogger(w io.Writer, level string, hf *httpFlags, tf *telemetryFlags) (*slog.Logger, error) {
	logger, err := newLogger(w, level)
	if err == nil {
		err = hf.check()
	}
	if err == nil {
		err = tf.check()
	}
	return logger, err
}

// serveStart is serve's start-up: the servers and the token, from the
// launcher's handoff or from the flags, and what a failure must undo.
type serveStart struct {
	logger       *slog.Logger
	notifier     *launch.Notifier
	stderr       io.Writer
	token        string
	tokenWritten string // the token file this process wrote, removed if it fails
}

// fail says on stderr why serve stops, in plain lines (a reason may span
// several: a server's stderr), removes the token file it wrote and tells
// the launcher; it returns code.
func (s *serveStart) fail(code int, err error) int {
	fmt.Fprintf(s.stderr, "mcp-gateway serve: %v\n", err)
	s.removeToken()
	if s.notifier != nil {
		_ = s.notifier.Fail(err)
	}
	return code
}

// interrupted ends a start-up stopped by a signal: no diagnosis (the
// servers were stopped, not broken), no token file left.
func (s *serveStart) interrupted() int {
	s.logger.Info("start-up interrupted by a signal; the servers were stopped")
	s.removeToken()
	if s.notifier != nil {
		_ = s.notifier.Fail(errInterrupted)
	}
	return exitInterrupted
}

func (s *serveStart) removeToken() {
	if s.tokenWritten != "" {
		removeOwnTokenFile(s.tokenWritten, s.token)
	}
}

// fromHandoff takes the servers and the token from the launcher's handoff.
func (s *serveStart) fromHandoff() ([]mcpconfig.Server, error) {
	h, err := acceptHandoff()
	if err != nil {
		return nil, err
	}
	for _, w := range h.Warnings {
		s.logger.Warn(w)
	}
	s.token = h.Token
	return h.Servers, nil
}

// writeToken takes the token from the environment (or makes one, unless
// --insecure-no-auth) and writes it to --token-file.
func (s *serveStart) writeToken(g *gatewayFlags) error {
	s.token = os.Getenv(tokenEnv)
	if s.token == "" && !g.noAuth {
		s.token = newToken()
	}
	if s.token != "" && g.tokenFile != "" {
		if err := launch.WriteTokenFile(g.tokenFile, s.token); err != nil {
			return fmt.Errorf("writing the token file (set --token-file to another path, or to '' to skip it): %w", err)
		}
		s.tokenWritten = g.tokenFile
		s.logger.Info("bearer token written", "file", g.tokenFile)
	}
	return nil
}

// removeOwnTokenFile removes the token file at path if it still holds
// token: a serve that fails leaves no token behind for a gateway that is
// not there (and does not remove another gateway's).
func removeOwnTokenFile(path, token string) {
	if b, err := os.ReadFile(path); err == nil && string(b) == token {
		os.Remove(path)
	}
}

// acceptHandoff takes the launcher's handoff from stdin; from then on this
// process's output goes to the launch's log file.
func acceptHandoff() (handoff, error) {
	var h handoff
	b, err := launch.AcceptHandoff(os.Stdin)
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("reading the launcher's handoff: %w", err)
	}
	return h, nil
}

// configError marks an error in the configuration (exit code 2).
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// loadConfig validates the mcp object completely and resolves it; the
// warnings are for the caller to show.
func loadConfig(g *gatewayFlags, cfg []byte) ([]mcpconfig.Server, []mcpconfig.Warning, error) {
	cat, err := mcpconfig.LoadCatalog(g.catalogFile)
	if err != nil {
		return nil, nil, &configError{err}
	}
	servers, warnings, err := mcpconfig.Parse(cfg, cat)
	if err != nil {
		return nil, nil, &configError{err}
	}
	if g.noAuth && !isLoopbackHost(g.host) {
		return nil, nil, &configError{fmt.Errorf("--insecure-no-auth is only allowed with a loopback --host, not %q", g.host)}
	}
	if _, err := prefixMode(g.toolPrefix); err != nil {
		return nil, nil, &configError{err}
	}
	if _, err := g.governance.load(); err != nil {
		return nil, nil, &configError{err}
	}
	return servers, warnings, nil
}

// checkedConfig reads the mcp object of --config or --config-file, validates
// and resolves it, logs its warnings and checks the remote servers'
// addresses: serve's and stdio's configuration (the launcher's is checked
// by the launcher).
func checkedConfig(g *gatewayFlags, logger *slog.Logger) ([]mcpconfig.Server, error) {
	cfg, err := g.readConfig()
	if err != nil {
		return nil, err
	}
	specs, warnings, err := loadConfig(g, cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		logger.Warn(w.String())
	}
	guard := &netguard.Policy{AllowAll: g.allowAnyAddress, Logger: logger}
	if err := checkRemotes(context.Background(), specs, guard, false); err != nil {
		return nil, &configError{err}
	}
	return specs, nil
}

func prefixMode(s string) (gateway.PrefixMode, error) {
	switch m := gateway.PrefixMode(s); m {
	case gateway.PrefixCollisions, gateway.PrefixAlways, gateway.PrefixNever:
		return m, nil
	}
	return "", fmt.Errorf("--tool-prefix must be '', always or never, not %q", s)
}

// newGateway builds the gateway over specs, every server attached and none
// started. fromLauncher says the servers are the sandbox's: a remote
// server's secrets come from its envs only.
func newGateway(g *gatewayFlags, specs []mcpconfig.Server, fromLauncher bool, logger *slog.Logger, serverLog io.Writer) (*gateway.Gateway, error) {
	secrets, err := readSecrets(g.secretsFile)
	if err != nil {
		return nil, &configError{err}
	}
	mode, _ := prefixMode(g.toolPrefix)
	router := gateway.NewRouter(gateway.RouterOptions{Logger: logger, Prefix: mode, CallTimeout: g.callTimeout})
	gw := gateway.New(router, gateway.Info{Name: "mcp-gateway", Version: version()})
	gw.Tasks = g.tasks.options()
	if gw.Limits, err = g.quota.limits(); err != nil {
		return nil, &configError{err}
	}
	if gw.Guard, err = g.governance.guard(specs, logger); err != nil {
		return nil, &configError{err}
	}
	if pg, ok := gw.Guard.(*policy.Guard); ok {
		pg.Engine.OnChange(gw.GuardChanged)
	}
	guard := &netguard.Policy{AllowAll: g.allowAnyAddress, Logger: logger}
	opts := g.attachOptions(environWithout(tokenEnv), guard, logger, serverLog)
	for _, s := range specs {
		var lookup func(string) (string, bool)
		if !fromLauncher {
			lookup = secretLookup(s, secrets)
		}
		attach.Add(gw, s, lookup, opts)
	}
	return gw, nil
}

// startServers starts every server of router within the start-up timeout.
// With failFast the first server that fails fails the start (the sandbox
// contract); otherwise a failing server is retried in the background.
func startServers(ctx context.Context, g *gatewayFlags, router *gateway.Router, failFast bool) error {
	startCtx, cancel := context.WithTimeout(ctx, g.startupTimeout)
	defer cancel()
	if !failFast {
		router.StartAll(startCtx)
		return nil
	}
	if err := router.Start(startCtx); err != nil {
		if startCtx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("servers did not start within %s (pre-install them in the template with `mcp-gateway pull <server>`): %w", g.startupTimeout, err)
		}
		return err
	}
	return nil
}

// serve runs the gateway on HTTP on ln until ctx ends. If ctx ends
// before every server has started, it stops them and returns
// errInterrupted.
func serve(ctx context.Context, g *gatewayFlags, specs []mcpconfig.Server, ln net.Listener, token string, fromLauncher bool, notifier *launch.Notifier, logger *slog.Logger, serverLog io.Writer) error {
	began := time.Now()
	gw, err := newGateway(g, specs, fromLauncher, logger, serverLog)
	if err != nil {
		return err
	}
	router := gw.Router
	defer router.Close()
	tel, stopTelemetry, err := g.telemetry.build(ctx, logger)
	if err != nil {
		return &configError{err}
	}
	defer stopTelemetry()
	gw.Observer = tel.Observer()
	countDecisions(gw, tel)
	if err := g.codeMode.check(); err != nil {
		return &configError{err}
	}
	if err := installCodeMode(&g.codeMode, router, logger, tel); err != nil {
		return err
	}
	err = startServers(ctx, g, router, fromLauncher)
	if ctx.Err() != nil {
		return errInterrupted // a server's error is only the signal's doing
	}
	if err != nil {
		return err
	}

	handler := newFrontHandler(g, gw, token, tel, logger)
	srv, sl := g.http.server(handler, ln, logger)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sl) }()
	reportReady(ln, began, len(specs), router, notifier, logger)

	select {
	case err := <-served:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	// Stop accepting, end the long-lived streams, let calls in flight finish
	// within the grace period, then end the sessions; the deferred
	// router.Close stops every server's whole process group.
	shutdownHTTP(logger, gw.Drain, srv)
	handler.Close()
	gw.Close()
	return nil
}

// newFrontHandler is the gateway's HTTP front: gw behind token, its health
// and its metrics.
func newFrontHandler(g *gatewayFlags, gw *gateway.Gateway, token string, tel *telemetry.Telemetry, logger *slog.Logger) *front.Handler {
	router := gw.Router
	handler := &front.Handler{
		Gateway:      gw,
		Token:        token,
		MaxBodyBytes: g.maxBodyBytes,
		Health:       routerHealth(router),
		Logger:       logger,
		Telemetry:    tel,
	}
	if tel.Metrics != nil {
		handler.Metrics = tel.Metrics.Handler()
		tel.Metrics.WatchServers(router.Status)
		tel.Metrics.WatchSessions(handler.SessionCounts)
		tel.Metrics.WatchQuotas(gw.QuotaStatus)
	}
	g.http.configure(handler, logger)
	return handler
}

// routerHealth is the health document of router's servers; detail keeps
// their last errors.
func routerHealth(router *gateway.Router) func(detail bool) any {
	return func(detail bool) any {
		status := router.Status()
		if !detail { // an error text may quote a server's stderr, secrets included
			for name, st := range status {
				st.LastError = ""
				status[name] = st
			}
		}
		return map[string]any{"servers": router.Servers(), "status": "ok", "tools": router.ToolCount(), "upstreams": status}
	}
}

// reportReady logs that the gateway serves (and how long its start took)
// and tells the launcher, if it started this process, on which port.
func reportReady(ln net.Listener, began time.Time, servers int, router *gateway.Router, notifier *launch.Notifier, logger *slog.Logger) {
	port := ln.Addr().(*net.TCPAddr).Port
	took := time.Since(began)
	slowest := router.SlowestStart()
	logger.Info("MCP gateway is ready", "port", port, "servers", servers, "tools", router.ToolCount())
	logger.Debug("start-up time", "total", took, "slowest_server", slowest, "gateway_share", took-slowest)
	if notifier != nil {
		if err := notifier.Ready(port); err != nil {
			logger.Warn("reporting readiness to the launcher failed", "err", err)
		}
	}
}

// shutdownHTTP stops a serving command: drain ends the long-lived streams,
// then the servers stop accepting and the calls in flight on mcp get the
// grace period to finish (others, the host's control API, are shut down
// first).
func shutdownHTTP(logger *slog.Logger, drain func(), mcp *http.Server, others ...*http.Server) {
	logger.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	drain()
	for _, srv := range others {
		_ = srv.Shutdown(ctx)
	}
	if err := mcp.Shutdown(ctx); err != nil {
		logger.Warn("calls in flight did not finish in time; cancelling them", "err", err)
	}
}

// attachOptions are what every server this gateway attaches shares.
func (g *gatewayFlags) attachOptions(env []string, guard *netguard.Policy, logger *slog.Logger, serverLog io.Writer) attach.Options {
	return attach.Options{
		Env: env, Guard: guard, Logger: logger, ServerLog: serverLog,
		MaxMessageBytes: g.maxResponseBytes,
		GitHubDir:       g.githubDir, GitHubURL: g.githubURL,
		ClientInfo: clientInfo(),
	}
}

// environWithout returns the process environment less the named variables.
func environWithout(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			env = append(env, kv)
		}
	}
	return env
}

func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// syncWriter serializes writes of the gateway's log lines and its servers' stderr lines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
