package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// netnsCommand is the argv prefix that runs a command in a new network
// namespace of its own (no interface but a loopback that is down: no
// network at all): unshare --net as root, with a user namespace of its own
// otherwise. ok is false when this machine cannot make one.
func netnsCommand() ([]string, bool) {
	prefix := []string{"unshare", "--net"}
	if os.Geteuid() != 0 {
		prefix = []string{"unshare", "--map-root-user", "--net"}
	}
	if exec.Command(prefix[0], append(prefix[1:], "true")...).Run() != nil {
		return nil, false
	}
	return prefix, true
}

// TestPulledServerOffline: a catalog npm server installed ahead of time
// with `mcp-gateway pull` (as a template build does, into a fresh HOME and
// npm cache) starts in a sandbox without any network: the sandbox
// contract's own command, `mcp-gateway --config '{"memory":{}}'`, run in a
// network namespace with no network, exits 0 ready (its servers started and
// their tools listed), and a client of the gateway (its stdio front, in
// such a namespace too) lists the memory server's tools and uses them. On
// main pull caches only the package (npm cache add), npx asks the registry
// for the rest, and the launch fails after 55 s.
func TestPulledServerOffline(t *testing.T) {
	netns, ok := netnsCommand()
	if !ok {
		t.Skip("cannot make a network namespace here (unshare --net, or --map-root-user --net, failed)")
	}
	dir := t.TempDir()
	home, cache := filepath.Join(dir, "home"), filepath.Join(dir, "npm-cache")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != "HOME" && name != "PATH" && name != "GATEWAY_ACCESS_TOKEN" && !strings.HasPrefix(strings.ToLower(name), "npm_config_") {
			env = append(env, kv)
		}
	}
	// The real npx, not the harness's stand-in (which runs the installed
	// servers): this test is about what npx finds in its cache.
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d != standIns {
			path = append(path, d)
		}
	}
	npx, err := lookPathIn("npx", path)
	if err != nil {
		t.Skip("npx is not on PATH")
	}
	if !slices.Contains(path, filepath.Dir(npx)) || filepath.Dir(npx) == standIns {
		t.Fatalf("npx resolves to %s, the stand-in", npx)
	}
	env = append(env, "PATH="+strings.Join(path, string(filepath.ListSeparator)), "HOME="+home, "npm_config_cache="+cache, "npm_config_update_notifier=false")

	// The template build's step, with the network.
	pull := exec.Command(gatewayBin, "pull", "memory")
	pull.Env = env
	out, err := pull.CombinedOutput()
	if err != nil {
		t.Fatalf("mcp-gateway pull memory: %v\n%s", err, out)
	}
	for _, want := range []string{"memory: npm cache add @modelcontextprotocol/server-memory\n", "memory: npm exec --yes --package=@modelcontextprotocol/server-memory -- true\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pull's output lacks %q:\n%s", want, out)
		}
	}

	// The sandbox SDK's launch, without a network.
	graph := filepath.Join(dir, "graph.jsonl")
	config := fmt.Sprintf(`{"memory": {"envs": {"MEMORY_FILE_PATH": %q}}}`, graph)
	pidFile := filepath.Join(dir, "mcp-gateway.pid")
	launch := exec.Command(netns[0], append(netns[1:], gatewayBin, "--config", config,
		"--token-file", filepath.Join(dir, "token"), "--pid-file", pidFile, "--log-file", filepath.Join(dir, "mcp-gateway.log"),
		"--catalog-file", filepath.Join(dir, "none.json"), "--github-dir", filepath.Join(dir, "github"))...)
	launch.Env = append(slices.Clone(env), "GATEWAY_ACCESS_TOKEN=offline-test-token")
	t.Cleanup(func() { stopPidFile(t, pidFile) })
	out, err = launch.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "MCP gateway is ready on port 50005") {
		log, _ := os.ReadFile(filepath.Join(dir, "mcp-gateway.log"))
		t.Errorf("mcp-gateway --config '{\"memory\":{}}' without a network: %v\n%s\nlog:\n%s", err, out, log)
	}

	// A client through the gateway's stdio front, without a network.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.Command(netns[0], append(netns[1:], gatewayBin, "stdio", "--config", config, "--catalog-file", filepath.Join(dir, "none.json"))...)
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-offline", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: sessionEra})
	if err != nil {
		t.Fatalf("connecting to the gateway without a network: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	names := toolNames(ctx, t, cs)
	for _, want := range []string{"create_entities", "read_graph", "search_nodes"} {
		if !slices.Contains(names, want) {
			t.Errorf("the pulled memory server's tools without a network: %v, want %s among them\nstderr:\n%s", names, want, stderr.String())
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
		"entities": []map[string]any{{"name": "Offline", "entityType": "test", "observations": []string{"started without a network"}}}}})
	if err != nil || res.IsError {
		t.Fatalf("create_entities: %v %v", res, err)
	}
	if got, _ := callText(ctx, t, cs, "read_graph", map[string]any{}); !strings.Contains(got, "started without a network") {
		t.Errorf("read_graph: %s", got)
	}
}

// stopPidFile stops the gateway a launch left running, by the pid its pid
// file names (its process group: the gateway and its servers), and waits
// until it is gone.
func stopPidFile(t *testing.T, pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	for range 200 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	t.Errorf("the launched gateway (pid %d) did not stop on SIGTERM", pid)
}
