package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// runStdio is `mcp-gateway stdio`: the same aggregated view served over
// stdin and stdout, for agents that start MCP servers as processes.
func runStdio(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("stdio", "mcp-gateway stdio (--config '<json>' | --config-file FILE) [flags]",
		`Serve the servers' merged view as one MCP server over standard input and output
(newline-delimited JSON-RPC), for agents that start MCP servers as processes.
Logs and every server's stderr go to standard error. No token: whoever starts
the process talks to it.`, stderr)
	var g gatewayFlags
	g.register(fs)
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	logOut := &syncWriter{w: stderr}
	logger, err := newLogger(logOut, g.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitUsage
	}
	specs, err := stdioConfig(&g, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitUsage
	}
	os.Unsetenv(tokenEnv)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return serveStdio(ctx, &g, specs, logger, logOut, stdout, stderr)
}

// stdioConfig reads the mcp object of --config or --config-file, validates
// and resolves it and logs its warnings.
func stdioConfig(g *gatewayFlags, logger *slog.Logger) ([]mcpconfig.Server, error) {
	cfg, err := g.readConfig()
	if err != nil {
		return nil, err
	}
	g.host = "127.0.0.1" // no listener; keeps the loopback-only rules satisfied
	specs, warnings, err := loadConfig(g, cfg)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	for _, w := range warnings {
		logger.Warn(w.String())
	}
	return specs, nil
}

// serveStdio checks the remote servers, builds the gateway over specs,
// starts its servers and serves it on stdin and stdout until ctx ends or
// stdin does.
func serveStdio(ctx context.Context, g *gatewayFlags, specs []mcpconfig.Server, logger *slog.Logger, logOut io.Writer, stdout, stderr io.Writer) int {
	if err := checkRemotes(ctx, specs, &netguard.Policy{AllowAll: g.allowAnyAddress, Logger: logger}, false); err != nil {
		// A refused address is the configuration's fault: exit 2, as in serve.
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitUsage
	}
	gw, err := newGateway(g, specs, false, logger, logOut)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitError
	}
	defer gw.Router.Close()
	defer gw.Close()
	if err := g.telemetry.check(); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitUsage
	}
	tel, stopTelemetry, err := g.telemetry.build(ctx, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitError
	}
	defer stopTelemetry()
	gw.Observer = tel.Observer()
	countDecisions(gw, tel)
	if err := g.codeMode.check(); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitUsage
	}
	if err := installCodeMode(&g.codeMode, gw.Router, logger, tel); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitError
	}
	if tel.Metrics != nil {
		tel.Metrics.WatchServers(gw.Router.Status) // served by --metrics-listen only
		tel.Metrics.WatchQuotas(gw.QuotaStatus)
	}
	if err := startServers(ctx, g, gw.Router, false); err != nil {
		fmt.Fprintf(stderr, "mcp-gateway stdio: %v\n", err)
		return exitError
	}
	if err := front.ServeStdioWith(ctx, gw, os.Stdin, stdout, front.StdioOptions{Telemetry: tel}); err != nil {
		logger.Error("stdio", "err", err)
		return exitError
	}
	return exitOK
}
