package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The acceptance run: the README's quick start and docs/host.md's first
// run, executed as written. A Markdown shell block marked with the comment
// `<!-- run: NAME -->` on the line before its fence is run by bash (set
// -euo pipefail) from the repository's root, with only these substitutions:
// a fresh HOME (where the docs put their files, and the host its state)
// and an `npx` first on PATH that runs the pinned
// packages installed in test/npm instead of downloading them (so a pinned
// version in the docs must be the installed one). Every shell block of
// docs/host.md must be marked, so none escapes the run.
//
// The documented ports are used as they are: 50005 (make run), 8811 (the
// host), 3001 (the example remote server). The test is skipped when one is
// taken before it starts.
func TestDocsAcceptance(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := markedBlocks(t, filepath.Join(root, "README.md"))
	host := markedBlocks(t, filepath.Join(root, "docs", "host.md"))
	for _, b := range host.unmarked {
		t.Errorf("docs/host.md has a shell block not marked <!-- run: NAME -->, so the acceptance run does not run it:\n%s", b)
	}
	for _, port := range []int{50005, 8811, 3001} {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("port %d, which the docs use, is taken: %v; CI must run the documented commands as written", port, err)
			}
			t.Skipf("port %d, which the docs use, is taken on this machine: %v", port, err)
		} else {
			ln.Close()
		}
	}
	env := docsEnv(t, root)

	t.Run("README quick start", func(t *testing.T) {
		quick := readme.block(t, "readme-quick-start")
		if !slices.Contains(strings.Split(quick, "\n"), "make run    # a gateway on http://127.0.0.1:50005/mcp with the memory and filesystem servers") {
			t.Fatalf("the quick start no longer starts with `make run`; change this test with it:\n%s", quick)
		}
		// `make run` serves in the foreground: it runs in the background
		// here (make test is what runs this test).
		run := startDocsCommand(t, env, root, "make run")
		waitForFile(t, run.errPath, "MCP gateway is ready", 3*time.Minute)
		if _, err := os.Stat(filepath.Join(root, "bin", "mcp-gateway")); err != nil {
			t.Errorf("make run left no bin/mcp-gateway: %v", err)
		}
		out, errOut, code := runDocsBlock(t, env, root, readme.block(t, "readme-try-it"))
		if code != 0 {
			t.Fatalf("the README's try-it command exited %d\nstdout:\n%s\nstderr:\n%s\nmake run:\n%s", code, out, errOut, run.output())
		}
		names := toolNamesJSON(t, out)
		for _, want := range []string{"create_entities", "read_graph", "read_text_file", "list_directory"} {
			if !slices.Contains(names, want) {
				t.Errorf("the try-it tools/list lacks %q: %v", want, names)
			}
		}
		run.stop()
		// The filesystem server asks for roots before any client is
		// connected; the refusal is expected and stays out of the log.
		if log := run.output(); strings.Contains(log, "Failed to request initial roots") {
			t.Errorf("make run logged the expected start-up refusal of roots/list:\n%s", log)
		}
	})

	t.Run("docs/host.md first run", func(t *testing.T) {
		script := host.block(t, "host-binary") + "\n" + host.block(t, "host-first-run") + "\n" + host.block(t, "host-agent-view")
		run := startDocsCommand(t, env, root, script)
		code := run.wait(5 * time.Minute)
		out := run.stdout()
		defer run.stop()
		if code != 0 {
			out = run.output()
			hostLog, _ := os.ReadFile(filepath.Join(env.home, "mcp-gateway-host.log"))
			t.Fatalf("docs/host.md's first run exited %d:\n%s\nhost log:\n%s", code, out, hostLog)
		}
		for _, want := range []string{
			`registered mcp server "memory" (9 tools)`,
			`registered mcp server "everything"`,
			"secret mcp:everything:api-key stored",
			`sandbox "agent-1" created (dynamic)`,
			`sandbox "ci" created (static: memory, everything)`,
			`loaded "memory" into sandbox "agent-1" (9 tools)`,
			"agent-1  dynamic  memory",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the first run's output lacks %q:\n%s", want, out)
			}
		}
		// The agent's view is the inspector's JSON, the last thing printed.
		names := toolNamesJSON(t, out[strings.LastIndex(out, "\n{\n")+1:])
		if !slices.Contains(names, "create_entities") || !slices.Contains(names, "mcp-exec") || slices.Contains(names, "mcp-find") {
			t.Errorf("agent-2's tools/list: %v, want the memory server's tools and mcp-exec (static: no mcp-find)", names)
		}
		if all := run.output(); strings.Contains(all, "level=") || strings.Contains(all, "[memory]") {
			t.Errorf("the daemon's log mixed with the commands' output:\n%s", all)
		}
		hostLog, _ := os.ReadFile(filepath.Join(env.home, "mcp-gateway-host.log"))
		if !strings.Contains(string(hostLog), "mcp-gateway host is ready") {
			t.Errorf("~/mcp-gateway-host.log lacks the daemon's log:\n%s", hostLog)
		}
		if _, err := os.Stat(filepath.Join(env.home, ".local", "state", "mcp-gateway", "state.json")); err != nil {
			t.Errorf("the host's state is not in the default state directory: %v", err)
		}
	})
}

// docBlocks are the shell blocks of one Markdown file.
type docBlocks struct {
	path     string
	named    map[string]string
	unmarked []string
}

var runMarker = regexp.MustCompile(`^<!-- run: ([a-z0-9-]+) -->$`)

// markedBlocks reads the ```sh blocks of a Markdown file.
func markedBlocks(t *testing.T, path string) docBlocks {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := docBlocks{path: path, named: map[string]string{}}
	var prev, name string
	var block []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```sh":
			in, block, name = true, nil, ""
			if m := runMarker.FindStringSubmatch(prev); m != nil {
				name = m[1]
			}
		case in && line == "```":
			in = false
			text := strings.Join(block, "\n")
			if name == "" {
				d.unmarked = append(d.unmarked, text)
			} else {
				d.named[name] = text
			}
		case in:
			block = append(block, line)
		}
		prev = line
	}
	return d
}

func (d docBlocks) block(t *testing.T, name string) string {
	t.Helper()
	b, ok := d.named[name]
	if !ok {
		t.Fatalf("%s has no shell block marked <!-- run: %s -->", d.path, name)
	}
	return b
}

// docsEnvironment is what the documented commands run with.
type docsEnvironment struct {
	home string
	vars []string
}

// docsEnv is a fresh HOME, the Go caches of this build (a fresh HOME must
// not mean a download, nor a toolchain's), PATH with the stand-in npx first and the system's
// Node (the docs name Node 20+). Nothing else: the docs' commands must run
// as pasted in a shell with no extra environment (API_KEY, say, is removed).
func docsEnv(t *testing.T, root string) docsEnvironment {
	home := t.TempDir()
	goenv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	g := strings.Split(strings.TrimSpace(string(goenv)), "\n")
	if len(g) != 3 {
		t.Fatalf("go env: %q", goenv)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeDocsNpx(t, bin)
	// The system's PATH without the harness's stand-ins and test/npm (whose node is 22).
	var path []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir != standIns && dir != npmBin {
			path = append(path, dir)
		}
	}
	if _, err := lookPathIn("node", path); err != nil {
		path = append(path, npmBin) // no system Node: test/npm's
	}
	vars := []string{
		"HOME=" + home,
		"PATH=" + strings.Join(append([]string{bin}, path...), string(os.PathListSeparator)),
		"GOCACHE=" + g[0], "GOMODCACHE=" + g[1], "GOPATH=" + g[2], "GOTOOLCHAIN=local",
		"LANG=C.UTF-8",
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "PATH", "GOCACHE", "GOMODCACHE", "GOPATH", "GOTOOLCHAIN", "API_KEY", "LANG",
			"XDG_STATE_HOME", "MCP_GATEWAY_STATE_DIR", "GATEWAY_ACCESS_TOKEN", "MAKEFLAGS", "MAKELEVEL", "MFLAGS":
		default:
			vars = append(vars, kv)
		}
	}
	return docsEnvironment{home: home, vars: vars}
}

func lookPathIn(file string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found")
}

// writeDocsNpx writes the npx the documented commands find: it runs an
// installed package of test/npm, and refuses a pinned version other than
// the installed one (the docs must name what CI tests).
func writeDocsNpx(t *testing.T, dir string) {
	t.Helper()
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(npmBin, "..", "@modelcontextprotocol", "inspector", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Version == "" {
		t.Fatalf("the installed inspector's version: %v", err)
	}
	script := `#!/bin/sh
# npx for the docs test: runs test/npm's installed packages, never downloads.
[ "$1" = "-y" ] && shift
spec="$1"; shift
case "$spec" in
@*/*@*) name="${spec%@*}"; version="${spec##*@}";;
*) name="$spec"; version="";;
esac
case "$name" in
@modelcontextprotocol/inspector)
	if [ "$version" != "` + pkg.Version + `" ]; then
		echo "npx (docs test): $spec is not the installed inspector ` + pkg.Version + ` (unpinned, npx on Node 20 picks an old release)" >&2; exit 127
	fi
	exec "` + npmBin + `/mcp-inspector" "$@";;
@modelcontextprotocol/server-*)
	exec "` + npmBin + `/mcp-server-${name#@modelcontextprotocol/server-}" "$@";;
esac
echo "npx (docs test): $spec is not installed in test/npm" >&2
exit 127
`
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// docsCommand is a documented command line running in its own process
// group, its output in a file (a background job keeps a pipe open).
type docsCommand struct {
	t                *testing.T
	cmd              *exec.Cmd
	outPath, errPath string
	done             chan struct{}
	code             int
}

func startDocsCommand(t *testing.T, env docsEnvironment, dir, script string) *docsCommand {
	t.Helper()
	dirOut := t.TempDir()
	outPath, errPath := filepath.Join(dirOut, "stdout"), filepath.Join(dirOut, "stderr")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir, cmd.Env = dir, env.vars
	cmd.Stdout, cmd.Stderr = out, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &docsCommand{t: t, cmd: cmd, outPath: outPath, errPath: errPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		c.code = cmd.ProcessState.ExitCode()
		close(c.done)
	}()
	t.Cleanup(c.stop)
	return c
}

// stdout is what the commands printed on standard output.
func (c *docsCommand) stdout() string {
	b, _ := os.ReadFile(c.outPath)
	return string(b)
}

// output is everything they printed, standard error after standard output.
func (c *docsCommand) output() string {
	b, _ := os.ReadFile(c.errPath)
	return c.stdout() + string(b)
}

// wait returns the shell's exit code (the group's background jobs may run on).
func (c *docsCommand) wait(limit time.Duration) int {
	select {
	case <-c.done:
		return c.code
	case <-time.After(limit):
		c.t.Fatalf("still running after %s:\n%s", limit, c.output())
		return -1
	}
}

// stop ends the whole process group (background jobs included) with
// SIGTERM, as a user's kill would, and waits until it is gone.
func (c *docsCommand) stop() {
	pgid := c.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		return // gone already
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); err != nil {
			<-c.done
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-c.done
	c.t.Errorf("the documented commands' processes did not stop on SIGTERM within 30 s")
}

// runDocsBlock runs a block to its end and returns its output and exit code.
func runDocsBlock(t *testing.T, env docsEnvironment, dir, script string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir, cmd.Env = dir, env.vars
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func waitForFile(t *testing.T, path, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%q did not appear within %s:\n%s", want, limit, b)
}

// toolNamesJSON reads the tool names of a tools/list result printed as JSON.
func toolNamesJSON(t *testing.T, out string) []string {
	t.Helper()
	var res struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not a tools/list result (%v):\n%s", err, out)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}
