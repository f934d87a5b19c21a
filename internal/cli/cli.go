// Package cli is the command line of mcp-gateway: subcommands, flags, exit
// codes and messages. It wires the packages of the call path together
// (front → session → router → upstream) and owns nothing of their logic.
//
// One file per command or group: launch.go (the launcher), serve.go,
// stdio.go, host.go (the daemon), and the administration commands that
// speak to the daemon's control socket: servercmd.go, secretcmd.go,
// sandboxcmd.go, policycmd.go (with approval), auth.go, and load/unload in
// admin.go. A group's runX only picks the subcommand; each subcommand is a
// function returning its adminCommand (flags, action, output), and
// admin.go runs it (runAdminCommand: parse, connect, report the exit code)
// and holds the shared steps (listCommand, printTable, printJSON).
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=v1.2.3".
var Version = ""

// version returns the build's version.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the gateway or a server failed
	exitUsage = 2 // bad flags or configuration
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "run the gateway in the foreground (containers, debugging)", runServe},
		{"stdio", "serve the gateway over stdin/stdout, for agents that start servers as processes", runStdio},
		{"host", "run the host daemon: many sandboxes, each with its own token and servers", runHost},
		{"server", "register, list, inspect and remove the host's servers", runServer},
		{"secret", "store, list and remove the host's secrets (encrypted)", runSecret},
		{"auth", "authorize the host's OAuth servers; auth status, auth rm", runAuth},
		{"sandbox", "create, list and remove the host's sandboxes", runSandbox},
		{"load", "attach a server to a running sandbox", runLoad(false)},
		{"unload", "detach a server from a sandbox", runLoad(true)},
		{"policy", "set, list, remove and test the host's Cedar policies", runPolicy},
		{"approval", "list, allow and deny the calls waiting for approval on the host", runApproval},
		{"audit", "verify an audit log's hash chain", runAudit},
		{"catalog", "list the catalog's servers", runCatalog},
		{"pull", "install catalog servers ahead of time (template builds)", runPull},
		{"version", "print the version", runVersion},
	}
}

// Main runs the command line and returns the exit code.
func Main(args []string) int {
	stdout, stderr := io.Writer(os.Stdout), io.Writer(os.Stderr)
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		for _, c := range commands() {
			if c.name == args[0] {
				return c.run(args[1:], stdout, stderr)
			}
		}
		if args[0] == "help" { // the same as mcp-gateway --help
			return runLaunch(append([]string{"--help"}, args[1:]...), stdout, stderr)
		}
		fmt.Fprintf(stderr, "mcp-gateway: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return runLaunch(args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `mcp-gateway puts many MCP servers behind one authenticated MCP endpoint.

Usage:
  mcp-gateway --config '<json>' [flags]   start the gateway in the background, exit 0 once ready
  mcp-gateway <command> [flags]

%s
Run 'mcp-gateway --help' for the launcher's flags, 'mcp-gateway <command> --help' for a command's.
`, commandList())
}

// commandList lists every command with its summary, under a "Commands:"
// heading: the overview of usage and of the launcher's --help.
func commandList() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	return b.String()
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "mcp-gateway version", "Print the version of mcp-gateway.", stderr)
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	fmt.Fprintf(stdout, "mcp-gateway %s\n", version())
	return exitOK
}
