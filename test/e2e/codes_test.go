package e2e

// Issue 22, "codes": a refusal reads as a refusal to every SDK's client, a
// policy id names one tool, names no reserved server, a denial names no
// host path, and a host-mode server's environment is not the daemon's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeDenied is the JSON-RPC code of a refusal (docs/policy.md, "Refusals").
const codeDenied = -32010

const codesPolicies = `@id("no-test-echo")
forbid(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"tests/echo");
forbid(principal, action == MCP::Action::"getPrompt", resource == MCP::Prompt::"everything/simple-prompt");
`

// A Go SDK client whose call is refused gets a tool result it can read
// (isError, the reason as text, the refusal's code in _meta), never the
// SDK's ErrConnectionClosed, and its session goes on; a refused
// prompts/get is a JSON-RPC error with the refusal's code. Neither names
// the policy file's path on the host.
func TestRefusalReadsAsRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGW(t)
	dir := filepath.Join(t.TempDir(), "corp-policies")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(dir, "codes.cedar")
	if err := os.WriteFile(policyFile, []byte(codesPolicies), 0o600); err != nil {
		t.Fatal(err)
	}
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}, "tests": {"runCmd": %q}}`,
		filepath.Join(npmBin, "mcp-server-everything"), testServerCmd()), "--policy-file", policyFile)

	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			cs := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "e2e-codes", Version: "1"}, nil), era)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tests_echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Fatalf("a refused tools/call: got the error %v (connection closed: %v), want an isError result", err, errors.Is(err, mcp.ErrConnectionClosed))
			}
			want := `mcp-gateway policy: tools/call of tests/echo is denied: forbidden by policy "no-test-echo" (codes.cedar:1:1)`
			if !res.IsError || text(res) != want {
				t.Fatalf("a refused tools/call: isError %v, text %q; want %q", res.IsError, text(res), want)
			}
			var refusal struct {
				Code    int64
				Message string
				Data    struct{ Policies, Where []string }
			}
			b, _ := json.Marshal(res.Meta[deniedMeta])
			if err := json.Unmarshal(b, &refusal); err != nil || refusal.Code != codeDenied || refusal.Message != want ||
				!slices.Equal(refusal.Data.Policies, []string{"no-test-echo"}) || !slices.Equal(refusal.Data.Where, []string{"codes.cedar:1:1"}) {
				t.Errorf("the refusal in _meta: %s (%v)", b, err)
			}
			// The session is usable: the next call runs.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "PATH"}}); err != nil || res.IsError || !strings.HasPrefix(text(res), "true:") {
				t.Fatalf("the call after a refusal: %v %v", err, res)
			}
			_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"})
			var je *jsonrpc.Error
			wantPrompt := `mcp-gateway policy: prompts/get of everything/simple-prompt is denied: forbidden by policy "codes.cedar:3"`
			if !errors.As(err, &je) || je.Code != codeDenied || je.Message != wantPrompt || errors.Is(err, mcp.ErrConnectionClosed) {
				t.Fatalf("a refused prompts/get: %v (connection closed: %v), want JSON-RPC error %d %q", err, errors.Is(err, mcp.ErrConnectionClosed), codeDenied, wantPrompt)
			}
			if strings.Contains(string(je.Data), dir) || strings.Contains(string(je.Data), "corp-policies") {
				t.Errorf("the refusal names the policy file's path: %s", je.Data)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "PATH"}}); err != nil || res.IsError {
				t.Fatalf("the call after a refused prompt: %v %v", err, res)
			}
		})
	}

	// The TypeScript SDK's client reads both the same way.
	script := filepath.Join(t.TempDir(), "client.mjs")
	sdk := filepath.Join(npmBin, "..", "@modelcontextprotocol", "sdk", "dist", "esm")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(tsRefusalClient, filepath.Join(sdk, "client", "index.js"), filepath.Join(sdk, "client", "streamableHttp.js"))), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(npmBin, "node"), script, g.url, g.token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
	want := `tool: isError=true code=-32010 text=mcp-gateway policy: tools/call of tests/echo is denied: forbidden by policy "no-test-echo" (codes.cedar:1:1)
next: ok
prompt: McpError code=-32010
next: ok
`
	if string(out) != want {
		t.Errorf("the TypeScript client printed:\n%s\nwant:\n%s", out, want)
	}
}

// tsRefusalClient is a TypeScript SDK client: a refused call, a call after
// it, a refused prompt, a call after it.
const tsRefusalClient = `import { Client } from %q;
import { StreamableHTTPClientTransport } from %q;
const [url, token] = process.argv.slice(2);
const client = new Client({ name: "e2e-codes-ts", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer " + token } } }));
const res = await client.callTool({ name: "tests_echo", arguments: { text: "hi" } });
console.log("tool: isError=" + res.isError + " code=" + res._meta?.["io.github.mcp-gateway/denied"]?.code + " text=" + res.content[0].text);
const env = await client.callTool({ name: "env", arguments: { name: "PATH" } });
console.log("next: " + (env.isError ? "error" : "ok"));
try {
  await client.getPrompt({ name: "simple-prompt" });
  console.log("prompt: allowed");
} catch (e) {
  console.log("prompt: " + e.constructor.name + " code=" + e.code);
}
const again = await client.callTool({ name: "env", arguments: { name: "PATH" } });
console.log("next: " + (again.isError ? "error" : "ok"));
await client.close();
`

// serve refuses, before starting anything, server names by which two tools
// could share a policy id: "corp"'s "tools/echo" and "corp/tools"'s "echo"
// would both be MCP::Tool::"corp/tools/echo".
func TestServeRefusesNamesSharingPolicyIDs(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{fmt.Sprintf(`{"corp": {"runCmd": %q}, "corp/tools": {"runCmd": %q}}`, testServerCmd(), testServerCmd()),
			`mcp server "corp/tools": the gateway takes server names made of letters, digits, ".", "-" and "_" (at most 64, not "." or ".."), or github/<owner>/<repo>; rename the server`},
		{fmt.Sprintf(`{"github": {"runCmd": %q}, "github/o/r": {"runCmd": %q}}`, testServerCmd(), testServerCmd()),
			`mcp server "github": a server named "github" cannot be given with "github/o/r"`},
	} {
		g := newGW(t)
		exited, out := serveOutcome(t, g, c.config)
		// the log line quotes the message: read it unquoted
		if !exited || !strings.Contains(strings.ReplaceAll(out, `\"`, `"`), c.want) {
			t.Errorf("serve --config %s: exited %v\n%s\nwant a refusal saying %q", c.config, exited, out, c.want)
		}
		// The launcher (the sandbox contract's command) refuses it the same way.
		g.launch(c.config)
		if g.exit == 0 || !strings.Contains(g.stderr, c.want) {
			t.Errorf("launch with %s: exit %d, stderr %q; want %q", c.config, g.exit, g.stderr, c.want)
		}
	}
}

// serveOutcome runs `serve` with config until it exits (exited, with its
// output) or says it is ready (then it is stopped).
func serveOutcome(t *testing.T, g *gw, config string) (exited bool, output string) {
	t.Helper()
	logf := filepath.Join(g.dir, "serve.log")
	f, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(gatewayBin, "serve", "--config", config, "--host", "127.0.0.1", "--port", "0",
		"--token-file", "", "--catalog-file", filepath.Join(g.dir, "none.json"), "--github-dir", filepath.Join(g.dir, "github"))
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+g.token)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logf)
			return true, string(b)
		default:
		}
		b, _ := os.ReadFile(logf)
		if readyLog.Match(b) || time.Now().After(deadline) {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			<-done
			return false, string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A host sandbox cannot take the name the gateway's own tools go by.
func TestHostRefusesReservedSandboxName(t *testing.T) {
	h := startHost(t, filepath.Join(t.TempDir(), "state"))
	h.failCLI(`sandbox name "mcp-gateway" is reserved for the gateway itself; choose another name`, "", "sandbox", "create", "mcp-gateway")
	h.createSandbox("mcp-gateway2")
}

// A host-mode local server gets the documented variables of the daemon's
// environment (docs/host.md) and its own, nothing else of the daemon's.
func TestHostServerEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("MCP_GATEWAY_STATE_DIR", state)
	t.Setenv("E2E_DAEMON_SECRET", "the-daemon's-own")
	t.Setenv("LC_E2E", "kept")
	h := startHost(t, state)
	dump := filepath.Join(t.TempDir(), "env.txt")
	exe, _ := os.Executable()
	h.mustCLI("", "server", "add", "envdump", "--command", "/bin/sh", "--env", "DUMP="+dump, "--env", "EXE="+exe,
		"--", "-c", `env > "$DUMP"; `+testServerEnv+`=1 exec "$EXE"`)
	sb := h.createSandbox("env", "--static", "envdump")
	cs := sb.connect(ctx)
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": "E2E_DAEMON_SECRET"}}); err != nil || text(res) != "false:" {
		t.Fatalf("the server sees the daemon's E2E_DAEMON_SECRET: %v %v", err, res)
	}
	got := map[string]string{}
	for _, line := range readLines(t, dump) {
		name, value, _ := strings.Cut(line, "=")
		got[name] = value
	}
	allowed := map[string]bool{"DUMP": true, "EXE": true, "PWD": true, "OLDPWD": true, "SHLVL": true, "_": true} // its own, and the shell's
	for _, n := range []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE",
		"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "DOCKER_HOST"} {
		allowed[n] = true
	}
	for name := range got {
		if !allowed[name] && !strings.HasPrefix(name, "LC_") {
			t.Errorf("the server's environment has %s=%q, which is neither documented nor its own", name, got[name])
		}
	}
	if got["PATH"] != os.Getenv("PATH") || got["DUMP"] != dump || got["LC_E2E"] != "kept" {
		t.Errorf("the server's environment lacks PATH, its own DUMP or LC_*: %v", got)
	}
}
