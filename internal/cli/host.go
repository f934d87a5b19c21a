package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"golang.org/x/sys/unix"
)

// defaultHostPort is the host daemon's MCP port.
const defaultHostPort = 8811

// stateDirEnv overrides the default state directory of host mode.
const stateDirEnv = "MCP_GATEWAY_STATE_DIR"

// defaultStateDir is $MCP_GATEWAY_STATE_DIR, else $XDG_STATE_HOME/mcp-gateway,
// else ~/.local/state/mcp-gateway.
func defaultStateDir() string {
	if d := os.Getenv(stateDirEnv); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mcp-gateway")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "mcp-gateway")
	}
	return ".mcp-gateway"
}

// hostFlags are the host daemon's flags.
type hostFlags struct {
	stateDir, addr, publicURL     string
	port                          int
	logLevel, logFile, toolPrefix string
	allowAny                      bool
	callTimeout, startTimeout     time.Duration
	maxBody                       int64
	maxResponse                   int
	tasks                         taskFlags
	serverEnv                     commaListFlag // more of the daemon's variables its servers get
	http                          httpFlags
	governance                    governanceFlags
	telemetry                     telemetryFlags
	quota                         quotaFlags
	codeMode                      codeModeFlags
}

func (f *hostFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "`directory` of the registry, the secrets and the control socket (env "+stateDirEnv+")")
	fs.StringVar(&f.addr, "host", "127.0.0.1", "`address` of the MCP endpoint (0.0.0.0 to let sandboxes on other machines in)")
	fs.IntVar(&f.port, "port", defaultHostPort, "`port` of the MCP endpoint (0 picks a free one)")
	fs.StringVar(&f.publicURL, "public-url", "", "the endpoint's `url` as sandboxes reach it, printed by sandbox create (default: http://<host>:<port>/mcp)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&f.logFile, "log-file", "", "append the daemon's log and its servers' stderr to `file` (mode 0600) instead of standard error, e.g. when started in the background")
	fs.BoolVar(&f.allowAny, "allow-any-address", false, "let remote servers resolve to any address, cloud-metadata and link-local ones included")
	fs.DurationVar(&f.callTimeout, "call-timeout", 5*time.Minute, "how long a server may take to answer one call (0: no limit)")
	fs.DurationVar(&f.startTimeout, "startup-timeout", 60*time.Second, "how long a server may take to start")
	fs.StringVar(&f.toolPrefix, "tool-prefix", "", "when tool names carry their server's name: '' (only on a collision), always, never")
	fs.Int64Var(&f.maxBody, "max-body-bytes", 8<<20, "largest request body accepted (413 beyond)")
	fs.IntVar(&f.maxResponse, "max-response-bytes", 16<<20, "largest message accepted from a server")
	fs.Var(&f.serverEnv, "server-env", "`names` of more of the daemon's environment variables its local servers get, beside the documented ones (docs/host.md), comma-separated or repeated; NAME_* takes a prefix")
	f.http.register(fs)
	f.tasks.register(fs)
	f.governance.registerHost(fs)
	f.telemetry.registerHost(fs)
	f.quota.registerHost(fs)
	f.codeMode.register(fs, true)
}

func runHost(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host", "mcp-gateway host [flags]",
		`Run the host daemon: one MCP endpoint for many sandboxes, each with its own token
and its own servers, administered with 'mcp-gateway server|secret|sandbox|load|unload'
over a Unix socket in the state directory (owner only). Registrations, secrets
(encrypted) and attachments live in the state directory and survive restarts.
Stops on SIGTERM or SIGINT.`, stderr)
	var f hostFlags
	f.register(fs)
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-gateway host: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	logW := stderr
	if f.logFile != "" {
		file, err := os.OpenFile(f.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "mcp-gateway host: --log-file: %v\n", err)
			return exitUsage
		}
		defer file.Close()
		logW = file
	}
	d, err := newHostDaemon(&f, logW, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway host: %v\n", err)
		return exitUsage
	}
	return d.run()
}

// hostDaemon is a host daemon whose flags are checked: it opens the state
// directory and serves until SIGTERM or SIGINT.
type hostDaemon struct {
	flags      *hostFlags
	logger     *slog.Logger
	logOut     io.Writer // the daemon's log and its servers' stderr
	stderr     io.Writer
	prefix     gateway.PrefixMode
	governance host.GovernanceOptions
	limits     gateway.Limits
}

// newHostDaemon checks the flags the parser could not; an error is a
// usage error.
func newHostDaemon(f *hostFlags, logW, stderr io.Writer) (*hostDaemon, error) {
	logOut := &syncWriter{w: logW}
	logger, err := newServingLogger(logOut, f.logLevel, &f.http, &f.telemetry)
	if err != nil {
		return nil, err
	}
	prefix, err := prefixMode(f.toolPrefix)
	if err != nil {
		return nil, err
	}
	governance, err := f.governance.hostOptions()
	if err != nil {
		return nil, err
	}
	governance.MaxPendingApprovals = f.quota.maxPendingApprovals
	limits, err := f.quota.limits()
	if err != nil {
		return nil, err
	}
	if err := f.codeMode.check(); err != nil {
		return nil, err
	}
	return &hostDaemon{flags: f, logger: logger, logOut: logOut, stderr: stderr, prefix: prefix, governance: governance, limits: limits}, nil
}

// fail logs why the daemon stops, and says it on standard error too when
// the log goes to a file (a failure to start is said where it was started).
func (d *hostDaemon) fail(err error) int {
	d.logger.Error("mcp-gateway host failed", "err", err)
	if d.flags.logFile != "" {
		fmt.Fprintf(d.stderr, "mcp-gateway host: %v\n", err)
	}
	return exitError
}

// run opens the state directory, listens, opens the host and its control
// socket, and serves.
func (d *hostDaemon) run() int {
	// The state directory's lock comes before the port, so a second daemon
	// on the same directory is told which one runs (not that the port is taken).
	store, err := registry.Open(d.flags.stateDir)
	if err != nil {
		return d.fail(err)
	}
	ln, err := listenTCP(d.flags.addr, d.flags.port)
	if err != nil {
		store.Close()
		return d.fail(err)
	}
	defer ln.Close()
	url := d.flags.endpointURL(ln)
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	defer stop()

	tel, stopTelemetry, err := d.flags.telemetry.build(ctx, d.logger)
	if err != nil {
		store.Close()
		return d.fail(err)
	}
	defer stopTelemetry()
	h, err := host.Open(ctx, d.options(store, url, tel))
	if err != nil {
		return d.fail(err)
	}
	defer h.Close()
	control, err := host.ListenControl(d.flags.stateDir)
	if err != nil {
		return d.fail(err)
	}
	defer control.Close()
	return d.serve(ctx, h, ln, control, url)
}

// listenTCP listens on addr and port (the host's MCP endpoint, serve's
// and the launcher's); a port taken says by whom.
func listenTCP(addr string, port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		err = fmt.Errorf("listening on port %d: %w", port, err)
		if errors.Is(err, unix.EADDRINUSE) {
			err = portTaken(port, err)
		}
		return nil, err
	}
	return ln, nil
}

// endpointURL is the MCP endpoint's URL as sandboxes reach it: --public-url,
// else the address listened on.
func (f *hostFlags) endpointURL(ln net.Listener) string {
	if f.publicURL != "" {
		return f.publicURL
	}
	return fmt.Sprintf("http://%s/mcp", net.JoinHostPort(displayHost(f.addr), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
}

// options are the host's options: the flags, over store, with the
// telemetry tel.
func (d *hostDaemon) options(store *registry.Store, url string, tel *telemetry.Telemetry) host.Options {
	f := d.flags
	guard := &netguard.Policy{AllowAll: f.allowAny, Logger: d.logger}
	flags := gatewayFlags{maxResponseBytes: f.maxResponse}
	return host.Options{
		Dir:          f.stateDir,
		Store:        store,
		URL:          url,
		Attach:       flags.attachOptions(attach.HostEnv(os.Environ(), f.serverEnv...), guard, d.logger, d.logOut), // never the daemon's whole environment
		Router:       gateway.RouterOptions{Prefix: d.prefix, CallTimeout: f.callTimeout},
		Info:         gateway.Info{Name: "mcp-gateway", Version: version()},
		Tasks:        f.tasks.options(),
		StartTimeout: f.startTimeout,
		MaxBodyBytes: f.maxBody,
		Governance:   d.governance,
		Telemetry:    tel,
		Limits:       d.limits,
		CodeMode:     f.codeMode.options(d.logger, nil),
	}
}

// serve serves the MCP endpoint on ln and the control API on control until
// ctx ends, then shuts both down.
func (d *hostDaemon) serve(ctx context.Context, h *host.Host, ln, control net.Listener, url string) int {
	if fh, ok := h.Handler().(*front.Handler); ok {
		d.flags.http.configure(fh, d.logger)
	}
	mcpSrv, mcpLn := d.flags.http.server(h.Handler(), ln, d.logger)
	ctlSrv := &http.Server{Handler: h.ControlHandler(), ConnContext: host.ControlConnContext, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 2)
	go func() { served <- mcpSrv.Serve(mcpLn) }()
	go func() { served <- ctlSrv.Serve(control) }()
	d.logger.Info("mcp-gateway host is ready", "url", url, "state_dir", d.flags.stateDir, "control", filepath.Join(d.flags.stateDir, host.SocketFile))

	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return d.fail(fmt.Errorf("serving: %w", err))
		}
	case <-ctx.Done():
	}
	shutdownHTTP(d.logger, h.Drain, mcpSrv, ctlSrv)
	return exitOK
}

// displayHost is the host part of the printed URL: a wildcard address
// becomes 127.0.0.1, which at least works on the host itself.
func displayHost(addr string) string {
	if ip := net.ParseIP(addr); ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return addr
}

// portTaken says who holds port when listening on it failed with
// EADDRINUSE (from /proc, when it can be told), and what to do.
func portTaken(port int, err error) error {
	pid, cmdline, ok := host.PortOwner(port)
	if !ok {
		return fmt.Errorf("port %d is taken by another process: stop it, or pass another --port: %w", port, err)
	}
	what := fmt.Sprintf("another process (pid %d: %s)", pid, cmdline)
	if f := strings.Fields(cmdline); len(f) > 1 && filepath.Base(f[0]) == "mcp-gateway" && f[1] == "host" {
		what = fmt.Sprintf("another mcp-gateway host (pid %d)", pid)
	}
	return fmt.Errorf("%s listens on port %d: stop it, or pass another --port: %w", what, port, err)
}
