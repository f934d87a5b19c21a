package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that crashes mid-call or writes garbage: that call gets a readable
// error naming the server, the next call restarts it, the others keep working.
func TestServerFaults(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"flaky": {"runCmd": %q}, "steady": {"runCmd": %q}}`, testServerCmd(), testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := g.connect(ctx)

	for _, tool := range []string{"steady_crash", "steady_garbage"} {
		t.Run(tool, func(t *testing.T) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
			if err == nil {
				t.Fatalf("%s: want an error", tool)
			}
			if !strings.Contains(err.Error(), `"steady"`) {
				t.Errorf("%s: error %q does not name the server", tool, err)
			}
			if tool == "steady_crash" && !strings.Contains(err.Error(), "about to crash on purpose") {
				t.Errorf("%s: error %q lacks the server's last stderr", tool, err)
			}
			if tool == "steady_garbage" && !strings.Contains(err.Error(), "this is not JSON-RPC") {
				t.Errorf("%s: error %q does not show what the server wrote", tool, err)
			}
			// The other server was not disturbed, and the broken one restarts.
			for _, name := range []string{"echo", "steady_echo"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "after " + tool}})
				if err != nil || text(res) != "after "+tool {
					t.Errorf("%s after %s: %v %v", name, tool, err, res)
				}
			}
		})
	}
}

// A GitHub server: cloned (from a local mirror standing in for github.com),
// installed, and run from its clone.
func TestGitHubServer(t *testing.T) {
	mirror := t.TempDir()
	work := t.TempDir()
	script := "#!/bin/sh\n" + testServerCmd() + "\n"
	if err := os.WriteFile(filepath.Join(work, "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "add", "."},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "server"},
		{"clone", "-q", "--bare", work, filepath.Join(mirror, "acme", "echo-server.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	g := newGW(t)
	g.mustLaunch(`{"github/acme/echo-server": {"installCmd": "echo built > built.txt", "runCmd": "./run.sh"}}`, "--github-url", "file://"+mirror)
	clone := filepath.Join(g.dir, "opt", "github", "acme", "echo-server")
	if b, err := os.ReadFile(filepath.Join(clone, "built.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("installCmd did not run in the clone: %q %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := g.connect(ctx)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "from github"}})
	if err != nil || text(res) != "from github" {
		t.Errorf("echo through the GitHub server: %v %v", res, err)
	}
}

// The inspector CLI, as an agent developer would use it.
func TestInspectorCLI(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"memory": {"envs": {"MEMORY_FILE_PATH": %q}}, "one": {"runCmd": %q}}`, filepath.Join(t.TempDir(), "m.jsonl"), testServerCmd()))
	inspector := func(token string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(npmBin, "mcp-inspector"), append([]string{"--cli", g.url, "--header", "Authorization: Bearer " + token}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := inspector(g.token, "--method", "tools/list")
	if err != nil {
		t.Fatalf("inspector tools/list: %v\n%s", err, out)
	}
	for _, want := range []string{`"read_graph"`, `"echo"`} {
		if !strings.Contains(out, want) {
			t.Errorf("inspector tools/list lacks %s:\n%s", want, out)
		}
	}
	out, err = inspector(g.token, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=via inspector")
	if err != nil || !strings.Contains(out, "via inspector") {
		t.Errorf("inspector tools/call: %v\n%s", err, out)
	}
	out, err = inspector("wrong", "--method", "tools/list")
	if err == nil {
		t.Errorf("inspector with a wrong token succeeded:\n%s", out)
	}
}
