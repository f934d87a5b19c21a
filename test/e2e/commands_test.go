package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runGateway runs the binary with args and returns its stdout, stderr and exit code.
func runGateway(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// catalog, pull, version and --help, as a template build and a user run them.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	override := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(override, []byte(`{"custom": {"description": "A server of our own", "command": [["custom-mcp"]], "install": [["uv", "tool", "install", "custom-mcp"]]}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _, code := runGateway(t, nil, "catalog", "--catalog-file", override)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		names = append(names, strings.Fields(line)[0])
	}
	want := []string{"arxiv", "custom", "duckduckgo", "fetch", "filesystem", "memory", "sequentialthinking", "time"}
	if code != 0 || !slices.Equal(names, want) || !strings.Contains(out, "A server of our own") {
		t.Errorf("catalog: exit %d, names %v, want %v\n%s", code, names, want, out)
	}

	// pull runs each entry's install commands: stand-in uv and npm record them.
	bin := filepath.Join(dir, "bin")
	log := filepath.Join(dir, "installs.log")
	os.MkdirAll(bin, 0o755)
	for _, tool := range []string{"uv", "npm"} {
		script := "#!/bin/sh\necho \"" + tool + " $*\" >> " + log + "\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := "PATH=" + bin + ":" + os.Getenv("PATH")
	_, stderr, code := runGateway(t, []string{path}, "pull", "--catalog-file", override, "time", "memory", "custom")
	if code != 0 {
		t.Fatalf("pull: exit %d: %s", code, stderr)
	}
	got := readLines(t, log)
	// and, for a server run with npx, fills npx's cache with its whole package tree.
	wantInstalls := []string{"uv tool install mcp-server-time", "npm cache add @modelcontextprotocol/server-memory",
		"npm exec --yes --package=@modelcontextprotocol/server-memory -- true", "uv tool install custom-mcp"}
	if !slices.Equal(got, wantInstalls) {
		t.Errorf("pull ran %v, want %v", got, wantInstalls)
	}
	_, stderr, code = runGateway(t, []string{path}, "pull", "--catalog-file", override, "nosuch")
	if code == 0 || !strings.Contains(stderr, `unknown server "nosuch"`) || !strings.Contains(stderr, "arxiv, custom, duckduckgo") {
		t.Errorf("pull of an unknown server: exit %d, %q", code, stderr)
	}

	out, _, code = runGateway(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "mcp-gateway ") {
		t.Errorf("version: exit %d %q", code, out)
	}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"stdio", "--help"}, {"catalog", "--help"}, {"pull", "--help"}, {"version", "--help"}} {
		out, _, code := runGateway(t, nil, args...)
		if code != 0 || !strings.Contains(out, "Usage: mcp-gateway") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
	if _, stderr, code := runGateway(t, nil, "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d %q", code, stderr)
	}
}
