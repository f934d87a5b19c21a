package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
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

func runHost(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("host", "mcp-gateway host [flags]",
		`Run the host daemon: one MCP endpoint for many sandboxes, each with its own token
and its own servers, administered with 'mcp-gateway server|secret|sandbox|load|unload'
over a Unix socket in the state directory (owner only). Registrations, secrets
(encrypted) and attachments live in the state directory and survive restarts.
Stops on SIGTERM or SIGINT.`, stderr)
	stateDir := fs.String("state-dir", defaultStateDir(), "`directory` of the registry, the secrets and the control socket (env "+stateDirEnv+")")
	addr := fs.String("host", "127.0.0.1", "`address` of the MCP endpoint (0.0.0.0 to let sandboxes on other machines in)")
	port := fs.Int("port", defaultHostPort, "`port` of the MCP endpoint (0 picks a free one)")
	publicURL := fs.String("public-url", "", "the endpoint's `url` as sandboxes reach it, printed by sandbox create (default: http://<host>:<port>/mcp)")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn, error")
	logFile := fs.String("log-file", "", "append the daemon's log and its servers' stderr to `file` (mode 0600) instead of standard error, e.g. when started in the background")
	allowAny := fs.Bool("allow-any-address", false, "let remote servers resolve to any address, cloud-metadata and link-local ones included")
	callTimeout := fs.Duration("call-timeout", 5*time.Minute, "how long a server may take to answer one call (0: no limit)")
	startTimeout := fs.Duration("startup-timeout", 60*time.Second, "how long a server may take to start")
	toolPrefix := fs.String("tool-prefix", "", "when tool names carry their server's name: '' (only on a collision), always, never")
	maxBody := fs.Int64("max-body-bytes", 8<<20, "largest request body accepted (413 beyond)")
	maxResponse := fs.Int("max-response-bytes", 16<<20, "largest message accepted from a server")
	var hf httpFlags
	hf.register(fs)
	var gf governanceFlags
	gf.registerHost(fs)
	var tf telemetryFlags
	tf.registerHost(fs)
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-gateway host: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	logW := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "mcp-gateway host: --log-file: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		logW = f
	}
	logOut := &syncWriter{w: logW}
	logger, err := newLogger(logOut, *logLevel)
	if err == nil {
		err = hf.check()
	}
	if err == nil {
		err = tf.check()
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway host: %v\n", err)
		return exitUsage
	}
	mode, err := prefixMode(*toolPrefix)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway host: %v\n", err)
		return exitUsage
	}
	govOpts, err := gf.hostOptions()
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway host: %v\n", err)
		return exitUsage
	}
	fail := func(err error) int {
		logger.Error("mcp-gateway host failed", "err", err)
		if *logFile != "" { // a failure to start is said where it was started too
			fmt.Fprintf(stderr, "mcp-gateway host: %v\n", err)
		}
		return exitError
	}

	// The state directory's lock comes before the port, so a second daemon
	// on the same directory is told which one runs (not that the port is taken).
	store, err := registry.Open(*stateDir)
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)))
	if err != nil {
		store.Close()
		err = fmt.Errorf("listening on port %d: %w", *port, err)
		if errors.Is(err, unix.EADDRINUSE) {
			err = portTaken(*port, err)
		}
		return fail(err)
	}
	defer ln.Close()
	url := *publicURL
	if url == "" {
		url = fmt.Sprintf("http://%s/mcp", net.JoinHostPort(displayHost(*addr), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	defer stop()

	tel, stopTelemetry, err := tf.build(ctx, logger)
	if err != nil {
		store.Close()
		return fail(err)
	}
	defer stopTelemetry()
	guard := &netguard.Policy{AllowAll: *allowAny, Logger: logger}
	flags := gatewayFlags{maxResponseBytes: *maxResponse}
	h, err := host.Open(ctx, host.Options{
		Dir:          *stateDir,
		Store:        store,
		URL:          url,
		Attach:       flags.attachOptions(environWithout(tokenEnv), guard, logger, logOut),
		Router:       gateway.RouterOptions{Prefix: mode, CallTimeout: *callTimeout},
		Info:         gateway.Info{Name: "mcp-gateway", Version: version()},
		StartTimeout: *startTimeout,
		MaxBodyBytes: *maxBody,
		Governance:   govOpts,
		Telemetry:    tel,
	})
	if err != nil {
		return fail(err)
	}
	defer h.Close()
	control, err := host.ListenControl(*stateDir)
	if err != nil {
		return fail(err)
	}
	defer control.Close()

	if fh, ok := h.Handler().(*front.Handler); ok {
		hf.configure(fh, logger)
	}
	mcpSrv, mcpLn := hf.server(h.Handler(), ln, logger)
	ctlSrv := &http.Server{Handler: h.ControlHandler(), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 2)
	go func() { served <- mcpSrv.Serve(mcpLn) }()
	go func() { served <- ctlSrv.Serve(control) }()
	logger.Info("mcp-gateway host is ready", "url", url, "state_dir", *stateDir, "control", filepath.Join(*stateDir, host.SocketFile))

	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fail(fmt.Errorf("serving: %w", err))
		}
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	h.Drain()
	_ = ctlSrv.Shutdown(shutdownCtx)
	if err := mcpSrv.Shutdown(shutdownCtx); err != nil {
		logger.Warn("calls in flight did not finish in time; cancelling them", "err", err)
	}
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
		return err
	}
	what := fmt.Sprintf("another process (pid %d: %s)", pid, cmdline)
	if f := strings.Fields(cmdline); len(f) > 1 && filepath.Base(f[0]) == "mcp-gateway" && f[1] == "host" {
		what = fmt.Sprintf("another mcp-gateway host (pid %d)", pid)
	}
	return fmt.Errorf("%s listens on port %d: stop it, or pass another --port: %w", what, port, err)
}
