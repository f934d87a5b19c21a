package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// errSetup marks failures that leave nothing to compare (exit code 2).
var errSetup = errors.New("setup failed")

func setupErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errSetup, fmt.Sprintf(format, a...))
}

// harness holds one run: what it started, where the outputs go, and what
// went wrong outside the per-scenario comparison.
type harness struct {
	root, out    string
	suiteTimeout time.Duration
	configs      []suiteConfig
	proxy        string // "" or proxyNginx: what stands between the suite and the gateway

	npmBin   string // test/npm/node_modules/.bin
	node     string // Node 22
	env      []string
	meta     meta
	problems []string // fail the run, reported beside the comparison
}

// meta is what the report says about the run itself.
type meta struct {
	Date          string
	SuiteVersions []string // "conf-stable = @modelcontextprotocol/conformance 0.1.16"
	NodeVersion   string
	SDKVersion    string // of the fixture binary
	GatewayBuild  string // commit the gateway binary was built from
	GatewayArgs   string // the gateway's command line, paths relative to the root
	Proxy         string // the proxy in front of the gateway and its version, "" for none
}

func (h *harness) runAll(ctx context.Context) error {
	h.npmBin = filepath.Join(h.root, "test", "npm", "node_modules", ".bin")
	h.node = filepath.Join(h.npmBin, "node")
	if _, err := os.Stat(h.node); err != nil {
		return setupErr("Node 22 not found at %s: install the test packages first (cd test/npm && npm ci, or make conformance)", h.node)
	}
	h.env = append(os.Environ(), "PATH="+h.npmBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	h.meta.Date = time.Now().UTC().Format("2006-01-02")
	if v, err := exec.Command(h.node, "--version").Output(); err == nil {
		h.meta.NodeVersion = strings.TrimSpace(string(v))
	}
	seen := map[string]bool{}
	for _, c := range h.configs {
		if seen[c.Package] {
			continue
		}
		seen[c.Package] = true
		v, err := packageVersion(filepath.Join(h.root, "test", "npm", "node_modules", c.Package, "package.json"))
		if err != nil {
			return setupErr("suite %s: %v (install the test packages first: cd test/npm && npm ci)", c.Package, err)
		}
		h.meta.SuiteVersions = append(h.meta.SuiteVersions, fmt.Sprintf("`%s` = %s", c.Package, v))
	}

	// A fresh output directory: the suite names result directories by time,
	// so old ones would pile up beside the new.
	if err := os.RemoveAll(h.out); err != nil {
		return setupErr("%v", err)
	}
	bin := filepath.Join(h.out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return setupErr("%v", err)
	}

	fmt.Println("building the gateway and the fixture")
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin+string(os.PathSeparator), "./cmd/mcp-gateway", fixturePkg, clientPkg, driverPkg, tasksFixturePkg)
	build.Dir = h.root
	if b, err := build.CombinedOutput(); err != nil {
		return setupErr("go build: %v\n%s", err, b)
	}
	gatewayBin := filepath.Join(bin, "mcp-gateway")
	fixtureBin := filepath.Join(bin, "everything-server")
	h.readBuildInfo(fixtureBin)

	var sdkConfigs, tasksConfigs []suiteConfig
	for _, c := range serverConfigs(h.configs) {
		if c.Fixture == tasksFixture {
			tasksConfigs = append(tasksConfigs, c)
		} else {
			sdkConfigs = append(sdkConfigs, c)
		}
	}
	if len(sdkConfigs) > 0 {
		if err := h.runServerConfigs(ctx, gatewayBin, fixtureBin, sdkConfigs); err != nil {
			return err
		}
	}
	if len(tasksConfigs) > 0 {
		if err := h.runTasksConfigs(ctx, gatewayBin, filepath.Join(bin, "tasksfixture"), tasksConfigs); err != nil {
			return err
		}
	}
	for _, c := range h.configs {
		if !c.Client {
			continue
		}
		if err := h.runClientSuite(ctx, c, "direct", filepath.Join(bin, "everything-client"), nil); err != nil {
			return err
		}
		logs := filepath.Join(h.out, c.Name, "gateway-logs")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return setupErr("%v", err)
		}
		env := []string{"CLIENTDRIVER_GATEWAY=" + gatewayBin, "CLIENTDRIVER_CLIENT=" + filepath.Join(bin, "everything-client"), "CLIENTDRIVER_LOGDIR=" + logs}
		if err := h.runClientSuite(ctx, c, "gateway", filepath.Join(bin, "clientdriver"), env); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// runServerConfigs runs the server configurations: the fixture directly
// and through one gateway.
func (h *harness) runServerConfigs(ctx context.Context, gatewayBin, fixtureBin string, configs []suiteConfig) error {

	// The fixture over HTTP, once per mode the selected configurations need.
	fixtureURL := map[string]string{}
	for _, c := range configs {
		mode := c.Fixture
		if fixtureURL[mode] != "" {
			continue
		}
		port, err := freePort()
		if err != nil {
			return setupErr("%v", err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		p, err := startProc("fixture-"+mode, h.root, filepath.Join(h.out, "fixture-"+mode+".log"), h.env,
			fixtureBin, "-http", addr, fmt.Sprintf("-stateless=%t", mode == stateless))
		if err != nil {
			return setupErr("starting the %s fixture: %v", mode, err)
		}
		defer p.stop()
		url := "http://" + addr + "/mcp"
		// Any HTTP answer means it listens (GET without a session is refused).
		if err := waitHTTP(ctx, p, url, func(*http.Response) bool { return true }); err != nil {
			return setupErr("%v", err)
		}
		fixtureURL[mode] = url
	}

	// The gateway, fronting the fixture over stdio beside a second server.
	port, err := freePort()
	if err != nil {
		return setupErr("%v", err)
	}
	config, err := json.Marshal(map[string]any{
		// "everything" sorts first, so the fixture's names stay plain; the
		// memory server's tool names do not collide with them (checked below).
		// Not named "memory": that is a catalog entry, which ignores runCmd and
		// would fetch the server with npx at test time.
		upstreamFixture: map[string]any{"runCmd": shellQuote(fixtureBin)},
		upstreamMemory: map[string]any{
			"runCmd": shellQuote(filepath.Join(h.npmBin, "mcp-server-memory")),
			"envs":   map[string]string{"MEMORY_FILE_PATH": filepath.Join(h.out, "memory.jsonl")},
		},
	})
	if err != nil {
		return setupErr("%v", err)
	}
	gatewayArgs := func(port string) []string {
		return []string{"serve", "--insecure-no-auth", "--host", "127.0.0.1", "--port", port,
			"--token-file", "", "--catalog-file", "/nonexistent", "--config", string(config)}
	}
	args := gatewayArgs(fmt.Sprint(port))
	// For the report: no port number, no absolute paths (both vary by run).
	shown := "mcp-gateway " + strings.Join(quoteAll(gatewayArgs("PORT")), " ")
	h.meta.GatewayArgs = strings.ReplaceAll(shown, h.root+string(os.PathSeparator), "")
	gw, err := startProc("gateway", h.root, filepath.Join(h.out, "gateway.log"), h.env, append([]string{gatewayBin}, args...)...)
	if err != nil {
		return setupErr("starting the gateway: %v", err)
	}
	defer gw.stop()
	gatewayURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	if err := waitHTTP(ctx, gw, fmt.Sprintf("http://127.0.0.1:%d/health", port), func(r *http.Response) bool { return r.StatusCode == http.StatusOK }); err != nil {
		return setupErr("%v", err)
	}
	if h.proxy == proxyNginx {
		stopNginx, url, err := h.startNginx(ctx, port, "nginx")
		if err != nil {
			return err
		}
		defer stopNginx()
		gatewayURL = url
	}

	// The suite calls the fixture's tools by name: the gateway must expose
	// every one of them unprefixed.
	for _, mode := range []string{stateful, stateless} {
		if url := fixtureURL[mode]; url != "" {
			if msg := checkPlainNames(ctx, url, gatewayURL); msg != "" {
				h.problem("%s", msg)
			}
			break
		}
	}

	for _, c := range configs {
		if err := h.runSuite(ctx, c, "direct", fixtureURL[c.Fixture]); err != nil {
			return err
		}
		if err := h.runSuite(ctx, c, "gateway", gatewayURL); err != nil {
			return err
		}
		if !gw.running() {
			h.problem("the gateway exited during the %s run (%v); see %s", c.Name, gw.waitErr, gw.log)
			break
		}
	}
	return ctx.Err()
}

// runTasksConfigs runs the tasks configurations: the tasks fixture over
// HTTP directly, and through a gateway of its own fronting it over stdio
// (alone: its tools keep their names; the SDK fixture's gateway and results
// are left as they are).
func (h *harness) runTasksConfigs(ctx context.Context, gatewayBin, fixtureBin string, configs []suiteConfig) error {
	port, err := freePort()
	if err != nil {
		return setupErr("%v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	fx, err := startProc("fixture-tasks", h.root, filepath.Join(h.out, "fixture-tasks.log"), h.env, fixtureBin, "-http", addr)
	if err != nil {
		return setupErr("starting the tasks fixture: %v", err)
	}
	defer fx.stop()
	fixtureURL := "http://" + addr + "/mcp"
	if err := waitHTTP(ctx, fx, fixtureURL, func(*http.Response) bool { return true }); err != nil {
		return setupErr("%v", err)
	}

	if port, err = freePort(); err != nil {
		return setupErr("%v", err)
	}
	config, err := json.Marshal(map[string]any{upstreamTasks: map[string]any{"runCmd": shellQuote(fixtureBin)}})
	if err != nil {
		return setupErr("%v", err)
	}
	gw, err := startProc("gateway-tasks", h.root, filepath.Join(h.out, "gateway-tasks.log"), h.env, gatewayBin,
		"serve", "--insecure-no-auth", "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--token-file", "", "--catalog-file", "/nonexistent", "--config", string(config))
	if err != nil {
		return setupErr("starting the tasks gateway: %v", err)
	}
	defer gw.stop()
	gatewayURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	if err := waitHTTP(ctx, gw, fmt.Sprintf("http://127.0.0.1:%d/health", port), func(r *http.Response) bool { return r.StatusCode == http.StatusOK }); err != nil {
		return setupErr("%v", err)
	}
	if h.proxy == proxyNginx {
		stopNginx, url, err := h.startNginx(ctx, port, "nginx-tasks")
		if err != nil {
			return err
		}
		defer stopNginx()
		gatewayURL = url
	}
	for _, c := range configs {
		if err := h.runSuite(ctx, c, "direct", fixtureURL); err != nil {
			return err
		}
		if err := h.runSuite(ctx, c, "gateway", gatewayURL); err != nil {
			return err
		}
		if !gw.running() {
			h.problem("the tasks gateway exited during the %s run (%v); see %s", c.Name, gw.waitErr, gw.log)
			break
		}
	}
	return ctx.Err()
}

const (
	upstreamTasks   = "tasks"
	upstreamFixture = "everything"
	upstreamMemory  = "knowledge-graph"
)

func (h *harness) problem(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Println("PROBLEM:", msg)
	h.problems = append(h.problems, msg)
}

// runSuite runs one configuration of the suite against one target; results
// land in <out>/<config>/<target>/, its output in <out>/<config>/<target>.log.
func (h *harness) runSuite(ctx context.Context, c suiteConfig, target, url string) error {
	return h.runConformance(ctx, c, target, []string{"server", "--url", url}, nil)
}

// runClientSuite runs one configuration of the client scenarios with
// command as the client (the suite appends each scenario's URL); env is
// added to the suite's environment, which the command inherits.
func (h *harness) runClientSuite(ctx context.Context, c suiteConfig, target, command string, env []string) error {
	return h.runConformance(ctx, c, target, []string{"client", "--command", command}, env)
}

// runConformance runs the suite with mode ("server --url URL" or "client
// --command CMD") and the configuration's arguments.
func (h *harness) runConformance(ctx context.Context, c suiteConfig, target string, mode, env []string) error {
	dir := filepath.Join(h.out, c.Name, target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return setupErr("%v", err)
	}
	logPath := dir + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return setupErr("%v", err)
	}
	defer logFile.Close()

	base := append(append([]string{filepath.Join(h.root, "test", "npm", "node_modules", c.Package, "dist", "index.js")}, mode...), c.Args...)
	base = append(base, "-o", dir)
	runs := [][]string{base}
	if len(c.Scenarios) > 0 {
		runs = nil
		for _, sc := range c.Scenarios {
			runs = append(runs, append(slices.Clone(base), "--scenario", sc))
		}
	}
	sctx, cancel := context.WithTimeout(ctx, h.suiteTimeout)
	defer cancel()
	began := time.Now()
	err = nil
	for _, args := range runs {
		fmt.Fprintf(logFile, "$ node %s\n\n", strings.Join(args, " "))
		if e := h.runNode(sctx, env, logFile, args); e != nil {
			var exit *exec.ExitError
			if err == nil || errors.As(err, &exit) && exit.ExitCode() == 1 {
				err = e // a failure to run outweighs a failed check
			}
		}
	}
	took := time.Since(began).Round(100 * time.Millisecond)

	entries, _ := os.ReadDir(dir)
	fmt.Printf("%-17s %-8s %2d scenarios in %s\n", c.Name, target, len(entries), took)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case sctx.Err() != nil:
		h.problem("%s %s: the suite did not finish within %s; see %s", c.Name, target, h.suiteTimeout, logPath)
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		// 1 is the suite's answer to a failed check; the comparison judges those.
	case err != nil:
		h.problem("%s %s: the suite failed to run (%v); see %s", c.Name, target, err, logPath)
	case len(entries) == 0:
		h.problem("%s %s: the suite wrote no results; see %s", c.Name, target, logPath)
	}
	return nil
}

// runNode runs the suite once with args.
func (h *harness) runNode(ctx context.Context, env []string, logFile *os.File, args []string) error {
	cmd := exec.CommandContext(ctx, h.node, args...)
	cmd.Dir = h.root
	cmd.Env = append(append([]string(nil), h.env...), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd.Run()
}

// readBuildInfo records the SDK version the fixture binary was built with
// and the commit the gateway's sources come from.
func (h *harness) readBuildInfo(fixtureBin string) {
	if bi, err := buildinfo.ReadFile(fixtureBin); err == nil {
		if bi.Main.Path == sdkModule {
			h.meta.SDKVersion = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == sdkModule {
				h.meta.SDKVersion = d.Version
			}
		}
	}
	// From git rather than the binary: builds here may run with -buildvcs=false.
	rev, err := exec.Command("git", "-C", h.root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return
	}
	h.meta.GatewayBuild = "commit " + strings.TrimSpace(string(rev))
	changed, err := exec.Command("git", "-C", h.root, "status", "--porcelain", "--", "cmd", "internal", "mcpconfig", "go.mod", "go.sum").Output()
	if err == nil && len(bytes.TrimSpace(changed)) > 0 {
		h.meta.GatewayBuild += " plus uncommitted changes to its sources"
	}
}

func packageVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var p struct{ Name, Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	return p.Name + " " + p.Version, nil
}

// shellQuote quotes s for /bin/sh (the gateway runs runCmd with sh -c) when
// it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return out
}
