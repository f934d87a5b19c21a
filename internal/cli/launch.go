package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/launch"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
)

// runLaunch is `mcp-gateway --config '<json>'`: the sandbox contract's launcher.
func runLaunch(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp-gateway", "mcp-gateway (--config '<json>' | --config-file FILE) [flags]",
		`Start the gateway in the background and exit 0 once it is ready: every server
started and its tools listed, /mcp served behind the bearer token from
`+tokenEnv+` (generated when unset) and written to --token-file.
On failure the whole process group is stopped, the token file removed, and the
reason with the tail of the log is printed; the exit code is non-zero.

`+commandList()+`Run 'mcp-gateway <command> --help' for a command's flags.`, stderr)
	var g gatewayFlags
	g.register(fs)
	g.registerHTTP(fs)
	pidFile := fs.String("pid-file", defaultPIDFile, "pid `file` of the running gateway")
	logFile := fs.String("log-file", defaultLogFile, "log `file`: the gateway's lines and every server's stderr, prefixed [<server>]")
	agent := fs.String("agent", "", "once ready, also print the configuration `agent` needs to use the gateway ("+strings.Join(agentNames, ", ")+"; see docs/agents.md)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-gateway: unexpected argument %q; run mcp-gateway --help\n", fs.Arg(0))
		return exitUsage
	}

	cfg, err := launcherConfig(fs, &g, *logFile)
	if err == nil && *agent != "" {
		_, err = agentFor(*agent, agentEndpoint{})
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway: %v\n", err)
		return exitUsage
	}
	token := os.Getenv(tokenEnv)
	if token == "" && !g.noAuth {
		token = newToken()
	}
	os.Unsetenv(tokenEnv)
	var ready func(port int)
	if *agent != "" {
		ready = func(port int) { launcherAgent(*agent, &g, port, stdout, stderr) }
	}
	return launchServing(&g, cfg, token, *pidFile, *logFile, stdout, stderr, ready)
}

// launcherConfig checks the launcher's flags, sets its governance
// defaults and reads the mcp object of --config or --config-file; an
// error is a usage error.
func launcherConfig(fs *flag.FlagSet, g *gatewayFlags, logFile string) ([]byte, error) {
	if err := g.http.check(); err != nil {
		return nil, err
	}
	g.governance.launcherDefaults(fs, logFile)
	if err := g.telemetry.check(); err != nil {
		return nil, err
	}
	return g.readConfig()
}

// launchServing binds the gateway's port, starts the serving process,
// checks the configuration meanwhile, hands it over and waits until the
// gateway is ready; then ready, if any, is called with the port it serves
// on. A SIGINT or SIGTERM meanwhile (Ctrl-C) stops the whole start as a
// failure does.
func launchServing(g *gatewayFlags, cfg []byte, token, pidFile, logFile string, stdout, stderr io.Writer, ready func(port int)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if pid, ok := launch.Running(pidFile); pidFile != "" && ok {
		// said before the port, which the running gateway holds
		fmt.Fprintf(stderr, "mcp-gateway: %v\n", &launch.AlreadyRunningError{PID: pid})
		return exitError
	}
	// Bind first: a port taken fails the launch before anything starts or
	// is written. The serving process inherits the socket.
	listener, err := bindGateway(g)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway: %v\n", err)
		return exitError
	}
	// The serving process starts up while the configuration is checked: it
	// waits for its handoff, and nothing is handed over or written unless
	// the whole configuration is valid.
	serveArgs := append([]string{"serve", "--handoff-stdin", fmt.Sprintf("--ready-fd=%d", launch.ReadyFD), fmt.Sprintf("--listen-fd=%d", launch.ListenFD), "--pid-file=" + pidFile}, g.args()...)
	pending, err := launch.Start(launch.Options{
		Args:      serveArgs,
		Env:       environWithout(tokenEnv),
		Listener:  listener,
		LogFile:   logFile,
		PIDFile:   pidFile,
		TokenFile: g.tokenFile,
		Token:     token,
		Timeout:   g.startupTimeout + launchSlack,
	})
	listener.Close() // the serving process holds its own copy
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway: %v\n", err)
		return exitError
	}
	h, err := checkLaunchConfig(ctx, g, cfg, token, stderr)
	if ctx.Err() != nil {
		pending.Abort()
		return launchInterrupted(stderr)
	}
	if err != nil {
		pending.Abort()
		fmt.Fprintf(stderr, "mcp-gateway: invalid configuration: %v\n", err)
		return exitUsage
	}
	res, err := pending.Complete(ctx, h)
	if err != nil {
		if ctx.Err() != nil {
			return launchInterrupted(stderr)
		}
		fmt.Fprintf(stderr, "mcp-gateway: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "MCP gateway is ready on port %d (pid %d)\n", res.Port, res.PID)
	if ready != nil {
		ready(res.Port)
	}
	return exitOK
}

// launchInterrupted says that a signal stopped the launch, by the time
// the serving process's whole group is stopped and its files removed.
func launchInterrupted(stderr io.Writer) int {
	fmt.Fprintln(stderr, "mcp-gateway: interrupted: the start-up was stopped, the gateway and its servers with it, and its token and pid files removed; nothing keeps running")
	return exitInterrupted
}

// bindGateway listens on the gateway's --host and --port and returns the
// socket as a file for the serving process to inherit.
func bindGateway(g *gatewayFlags) (*os.File, error) {
	ln, err := listenTCP(g.host, g.port)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, fmt.Errorf("handing the socket of port %d to the serving process: %w", g.port, err)
	}
	return f, nil
}

// launchSlack is the launcher's wait beyond the servers' start-up timeout, so
// the serving process reports which servers were late before the launcher gives up.
const launchSlack = 2 * time.Second

// checkLaunchConfig validates the mcp object completely, shows its warnings
// on stderr, checks the remote servers (their addresses, and that their
// headers' secrets are in their envs) and returns the serving process's
// handoff.
func checkLaunchConfig(ctx context.Context, g *gatewayFlags, cfg []byte, token string, stderr io.Writer) ([]byte, error) {
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	specs, warnings, err := loadConfig(g, cfg)
	if err != nil {
		return nil, err
	}
	h := handoff{Servers: specs, Token: token}
	for _, w := range warnings {
		quiet.Warn(w.String())
		h.Warnings = append(h.Warnings, w.String())
	}
	if err := checkRemotes(ctx, specs, &netguard.Policy{AllowAll: g.allowAnyAddress, Logger: quiet}, true); err != nil {
		return nil, err
	}
	return json.Marshal(h)
}
