package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Defaults of the sandbox contract.
const (
	defaultPort           = 50005
	defaultTokenFile      = "/etc/mcp-gateway/.token"
	defaultCatalogFile    = "/etc/mcp-gateway/catalog.json"
	defaultPIDFile        = "/run/mcp-gateway.pid"
	defaultLogFile        = "/var/log/mcp-gateway.log"
	defaultGitHubDir      = "/opt/mcp-gateway/servers/github"
	defaultStartupTimeout = 55 * time.Second
	tokenEnv              = "GATEWAY_ACCESS_TOKEN"
)

// newFlagSet returns a flag set whose -h/--help prints synopsis, text and flags.
func newFlagSet(name, synopsis, text string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: %s\n\n%s\n", synopsis, text)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintf(out, "\nFlags:\n")
			printFlags(out, fs)
		}
	}
	return fs
}

// printFlags is flag.PrintDefaults with two dashes, as the docs write the
// flags: "  --name value" and the usage indented below, with the default
// unless it is the type's zero value.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !isZeroDefault(f) {
			if isStringFlag(f) {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	})
}

// isZeroDefault reports whether f's default is its type's zero value, which
// help does not print (as flag.PrintDefaults).
func isZeroDefault(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	v, ok := z.Interface().(flag.Value)
	if !ok {
		return f.DefValue == ""
	}
	return f.DefValue == v.String()
}

// isStringFlag reports whether f is a plain string flag, whose default
// help quotes.
func isStringFlag(f *flag.Flag) bool {
	return reflect.TypeOf(f.Value).String() == "*flag.stringValue"
}

// parse parses args; done is true when the caller should return code (help or an error).
// The usage is printed once: on stdout for -h/--help, on the flag set's
// output (stderr) after the message of a bad flag.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	usage := fs.Usage
	fs.Usage = func() {} // flag.Parse calls it before returning; printed below instead
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		out := fs.Output()
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(out)
		return exitOK, true
	}
	if err != nil {
		fs.Usage()
		return exitUsage, true
	}
	return 0, false
}

// gatewayFlags are the flags shared by the launcher, serve and stdio; http
// are registered only where the gateway serves HTTP (registerHTTP).
type gatewayFlags struct {
	http               httpFlags
	telemetry          telemetryFlags
	config, configFile string
	host               string
	port               int
	tokenFile          string
	catalogFile        string
	githubDir          string
	githubURL          string
	startupTimeout     time.Duration
	maxBodyBytes       int64
	maxResponseBytes   int
	callTimeout        time.Duration
	toolPrefix         string
	logLevel           string
	noAuth             bool
	allowAnyAddress    bool
	secretsFile        string
	tasks              taskFlags
	governance         governanceFlags
	quota              quotaFlags
	codeMode           codeModeFlags
}

func (g *gatewayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", "", "the `json` mcp object: servers to start, keyed by name")
	fs.StringVar(&g.configFile, "config-file", "", "read the mcp object from `file` instead")
	fs.StringVar(&g.host, "host", "0.0.0.0", "`address` to listen on")
	fs.IntVar(&g.port, "port", defaultPort, "`port` to listen on (0 picks a free one)")
	fs.StringVar(&g.tokenFile, "token-file", defaultTokenFile, "write the bearer token to `file` (mode 0600, no newline); empty: none")
	fs.StringVar(&g.catalogFile, "catalog-file", defaultCatalogFile, "catalog override `file` (a missing file is fine)")
	fs.StringVar(&g.githubDir, "github-dir", defaultGitHubDir, "`directory` for clones of github/<owner>/<repo> servers")
	fs.StringVar(&g.githubURL, "github-url", "https://github.com", "base `url` GitHub servers are cloned from (a mirror)")
	fs.DurationVar(&g.startupTimeout, "startup-timeout", defaultStartupTimeout, "how long servers may take to start")
	fs.Int64Var(&g.maxBodyBytes, "max-body-bytes", 8<<20, "largest request body accepted (413 beyond)")
	fs.IntVar(&g.maxResponseBytes, "max-response-bytes", 16<<20, "largest message accepted from a server; a larger one fails that call")
	fs.DurationVar(&g.callTimeout, "call-timeout", 5*time.Minute, "how long a server may take to answer one call before it is cancelled (0: no limit)")
	fs.StringVar(&g.toolPrefix, "tool-prefix", "", "when tool names carry their server's name: '' (only on a collision), always, never")
	fs.StringVar(&g.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.BoolVar(&g.allowAnyAddress, "allow-any-address", false, "let remote servers resolve to any address, cloud-metadata and link-local ones included (default: those are refused, private and loopback ones allowed with a warning)")
	fs.StringVar(&g.secretsFile, "secrets-file", "", "serve mode: a `file` (mode 0600) of NAME=value lines for ${NAME} placeholders in remote servers' headers, after the server's envs and the environment")
	fs.BoolVar(&g.noAuth, "insecure-no-auth", false, "serve /mcp without a token (tests only; refused unless --host is a loopback address)")
	g.tasks.register(fs)
	fs.IntVar(&g.tasks.maxTotal, "max-tasks", gateway.DefaultMaxTasks, "tasks all clients together may hold (a 2026-07-28 client's are counted per clientInfo name, which a client chooses); at the limit a client's own oldest finished task is forgotten, else a new one is refused (negative: no limit)")
	g.governance.register(fs)
	g.telemetry.register(fs)
	g.quota.register(fs, "the gateway")
	g.codeMode.register(fs, false)
}

// registerHTTP registers the flags of the HTTP front (see httpFlags).
func (g *gatewayFlags) registerHTTP(fs *flag.FlagSet) { g.http.register(fs) }

// readConfig returns the raw mcp object from --config or --config-file.
func (g *gatewayFlags) readConfig() ([]byte, error) {
	switch {
	case g.config != "" && g.configFile != "":
		return nil, errors.New("give --config or --config-file, not both")
	case g.config != "":
		return []byte(g.config), nil
	case g.configFile != "":
		b, err := os.ReadFile(g.configFile)
		if err != nil {
			return nil, fmt.Errorf("reading the config file: %w", err)
		}
		return b, nil
	}
	return nil, errors.New("no configuration: give --config '<json>' or --config-file FILE")
}

// args renders the flags for the serving process (no config, no token: those
// travel on its stdin).
func (g *gatewayFlags) args() []string {
	a := []string{
		"--host=" + g.host,
		fmt.Sprintf("--port=%d", g.port),
		"--token-file=" + g.tokenFile,
		"--catalog-file=" + g.catalogFile,
		"--github-dir=" + g.githubDir,
		"--github-url=" + g.githubURL,
		"--startup-timeout=" + g.startupTimeout.String(),
		fmt.Sprintf("--max-body-bytes=%d", g.maxBodyBytes),
		fmt.Sprintf("--max-response-bytes=%d", g.maxResponseBytes),
		"--call-timeout=" + g.callTimeout.String(),
		"--tool-prefix=" + g.toolPrefix,
		"--log-level=" + g.logLevel,
	}
	a = append(a, g.http.args()...)
	a = append(a, g.tasks.args()...)
	a = append(a, g.governance.args()...)
	a = append(a, g.telemetry.args()...)
	a = append(a, g.quota.args()...)
	a = append(a, g.codeMode.args()...)
	if g.noAuth {
		a = append(a, "--insecure-no-auth")
	}
	if g.allowAnyAddress {
		a = append(a, "--allow-any-address")
	}
	return a
}

// httpFlags are the limits of the HTTP front, shared by serve, the launcher
// and host: net/http's server timeouts, the connection limit, and what the
// front does about slow clients and idle sessions.
type httpFlags struct {
	readHeaderTimeout  time.Duration
	bodyReadTimeout    time.Duration
	idleTimeout        time.Duration
	maxHeaderBytes     int
	maxConnections     int
	slowClientTimeout  time.Duration
	streamKeepalive    time.Duration
	sessionIdleTimeout time.Duration
	maxSessions        int
	// The per-tenant quotas of sessions and of the bytes kept to replay
	// streams (front.Handler's fields of the same names).
	maxSessionsPerTenant  int
	replayBytesPerStream  int64
	replayBytesPerSession int64
	replayBytes           int64
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.readHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's head, from connecting or from the request's first byte (0: no limit)")
	fs.DurationVar(&f.bodyReadTimeout, "body-read-timeout", front.DefaultBodyReadTimeout, "how long a request's body may take to arrive after its head (408 and the connection closed beyond; a streamed response is not bounded by it; 0: no limit)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 120*time.Second, "how long an idle keep-alive connection is kept open (0: the read header timeout)")
	fs.IntVar(&f.maxHeaderBytes, "max-header-bytes", 1<<20, "largest request head accepted (431 beyond)")
	fs.IntVar(&f.maxConnections, "max-connections", 1024, "open client connections at most; one more closes the oldest that never authenticated, else the longest idle one, or is answered 503 if all are serving authenticated requests (0: no limit)")
	fs.DurationVar(&f.slowClientTimeout, "slow-client-timeout", front.DefaultSlowClientTimeout, "how long a client's stream may stay unwritable before the gateway closes it")
	fs.DurationVar(&f.streamKeepalive, "stream-keepalive", front.DefaultStreamKeepalive, "how long an SSE stream may go without a write before it gets a comment line, so that a proxy's read timeout does not close an idle stream (0: never)")
	fs.DurationVar(&f.sessionIdleTimeout, "session-idle-timeout", 30*time.Minute, "end a client session after this long without a request (0: never)")
	fs.IntVar(&f.maxSessions, "max-sessions", 10000, "open client sessions at most; an initialize beyond ends the idlest session of the tenant holding the most, or is answered 503 (0: no limit)")
	fs.IntVar(&f.maxSessionsPerTenant, "max-sessions-per-tenant", 100, "open sessions of one tenant at most (host: a sandbox; serve: a client identity, its initialize's clientInfo.name); an initialize beyond ends the tenant's session idle for longest (0: no limit)")
	fs.Int64Var(&f.replayBytesPerStream, "replay-bytes-per-stream", 1<<20, "bytes kept per SSE stream for a client resuming it with Last-Event-ID; beyond, its oldest events are dropped (0: no limit)")
	fs.Int64Var(&f.replayBytesPerSession, "replay-bytes-per-session", 4<<20, "bytes kept for replay per client session, its streams together; beyond, its oldest stream's oldest events are dropped (0: no limit)")
	fs.Int64Var(&f.replayBytes, "replay-bytes", 64<<20, "bytes kept for replay by the whole gateway; beyond, the oldest events of the tenant holding the most are dropped (0: no limit)")
}

// args renders the flags for the serving process.
func (f *httpFlags) args() []string {
	return []string{
		"--read-header-timeout=" + f.readHeaderTimeout.String(),
		"--body-read-timeout=" + f.bodyReadTimeout.String(),
		"--idle-timeout=" + f.idleTimeout.String(),
		fmt.Sprintf("--max-header-bytes=%d", f.maxHeaderBytes),
		fmt.Sprintf("--max-connections=%d", f.maxConnections),
		"--slow-client-timeout=" + f.slowClientTimeout.String(),
		"--stream-keepalive=" + f.streamKeepalive.String(),
		"--session-idle-timeout=" + f.sessionIdleTimeout.String(),
		fmt.Sprintf("--max-sessions=%d", f.maxSessions),
		fmt.Sprintf("--max-sessions-per-tenant=%d", f.maxSessionsPerTenant),
		fmt.Sprintf("--replay-bytes-per-stream=%d", f.replayBytesPerStream),
		fmt.Sprintf("--replay-bytes-per-session=%d", f.replayBytesPerSession),
		fmt.Sprintf("--replay-bytes=%d", f.replayBytes),
	}
}

// check refuses negative limits.
func (f *httpFlags) check() error {
	switch {
	case f.readHeaderTimeout < 0, f.bodyReadTimeout < 0, f.idleTimeout < 0, f.slowClientTimeout < 0, f.sessionIdleTimeout < 0, f.streamKeepalive < 0:
		return errors.New("--read-header-timeout, --body-read-timeout, --idle-timeout, --slow-client-timeout, --stream-keepalive and --session-idle-timeout must not be negative")
	case f.maxHeaderBytes < 0, f.maxConnections < 0, f.maxSessions < 0:
		return errors.New("--max-header-bytes, --max-connections and --max-sessions must not be negative")
	case f.maxSessionsPerTenant < 0, f.replayBytesPerStream < 0, f.replayBytesPerSession < 0, f.replayBytes < 0:
		return errors.New("--max-sessions-per-tenant, --replay-bytes-per-stream, --replay-bytes-per-session and --replay-bytes must not be negative")
	}
	return nil
}

// configure gives the front its limits and logger.
func (f *httpFlags) configure(h *front.Handler, logger *slog.Logger) {
	h.SlowClientTimeout = f.slowClientTimeout
	h.StreamKeepalive = f.streamKeepalive
	if f.streamKeepalive == 0 {
		h.StreamKeepalive = -1 // the flag's 0 is never; the front's, its default
	}
	h.BodyReadTimeout = f.bodyReadTimeout
	if f.bodyReadTimeout == 0 {
		h.BodyReadTimeout = -1 // the flag's 0 is no limit; the front's, its default
	}
	h.SessionIdleTimeout = f.sessionIdleTimeout
	h.MaxSessions = f.maxSessions
	h.MaxSessionsPerTenant = f.maxSessionsPerTenant
	h.ReplayBytesPerStream = f.replayBytesPerStream
	h.ReplayBytesPerSession = f.replayBytesPerSession
	h.ReplayBytes = f.replayBytes
	h.Logger = logger
}

// server returns net/http's server for handler with the flags' timeouts,
// and ln under the connection limit: serve the one on the other (the
// limit's ConnState hook, installed on the server, tells it which
// connections are serving a request). It sets no WriteTimeout: a response
// may be a stream that lasts as long as its session (the front bounds a
// stalled write itself, with http.ResponseController's write deadline).
func (f *httpFlags) server(handler http.Handler, ln net.Listener, logger *slog.Logger) (*http.Server, net.Listener) {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: f.readHeaderTimeout,
		IdleTimeout:       f.idleTimeout,
		MaxHeaderBytes:    f.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if f.maxConnections <= 0 {
		return srv, ln
	}
	limit := newConnLimit(f.maxConnections, logger)
	srv.ConnState = limit.ConnState
	srv.ConnContext = limit.ConnContext
	return srv, limit.Listen(ln)
}

// taskFlags bound the tasks (2025-11-25) the gateway keeps per client.
type taskFlags struct {
	maxPerClient int
	maxTotal     int // serve mode's --max-tasks (host mode: per sandbox, maxPerClient)
	maxTTL       time.Duration
}

func (t *taskFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&t.maxPerClient, "max-tasks-per-client", gateway.DefaultMaxTasksPerClient, "tasks one client (a session; in host mode a sandbox) may hold; at the limit its oldest finished task is forgotten, else a new one is refused")
	fs.DurationVar(&t.maxTTL, "task-ttl-max", gateway.DefaultMaxTaskTTL, "longest a task is kept after its creation; a longer ttl asked or granted is cut to it")
}

func (t *taskFlags) args() []string {
	return []string{fmt.Sprintf("--max-tasks-per-client=%d", t.maxPerClient), fmt.Sprintf("--max-tasks=%d", t.maxTotal), "--task-ttl-max=" + t.maxTTL.String()}
}

func (t *taskFlags) options() gateway.TaskOptions {
	return gateway.TaskOptions{MaxPerClient: t.maxPerClient, MaxTotal: t.maxTotal, MaxTTL: t.maxTTL}
}
