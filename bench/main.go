// Command bench measures mcp-gateway against a direct connection to the same
// MCP server, side by side in one run, and prints the figures as Markdown
// tables (docs/benchmarks.md holds the latest).
//
//	go run ./bench -era both          the full benchmark (make bench), a few minutes
//	go run ./bench -short -era both   seconds: one round, few calls (make bench-short, CI)
//	go run ./bench -pprof ...         a gateway build with net/http/pprof: goroutines,
//	                                  live heap, -cpuprofile and -memprofile
//	go run ./bench -baseline-rev REV  also a gateway built from REV, in the same rounds
//
// It builds the gateway (./cmd/mcp-gateway) and its own echo MCP server
// (./bench/echo), then measures:
//
//   - calls: the echo tool over streamable HTTP at 1, 16 and 64 concurrent
//     calls, on one session and on 64, for three targets in alternating
//     rounds: direct (the echo server's own HTTP, the official Go SDK),
//     gateway → stdio upstream, and gateway → HTTP upstream (skipped with a
//     note while the gateway refuses url servers);
//   - isolation: echo calls of one client beside another client whose
//     stream of progress notifications is never read;
//   - start-up: the daemon launcher from exec to its exit with the ready
//     line, with 1, 8 and 32 servers, and the gateway's own share;
//   - scale: tools/list over 64 servers × 100 tools, 1 000 open sessions,
//     and a soak of 100 000 calls with 1 000 sessions opened and closed;
//   - telemetry: the gateway's CPU per call with metrics off, on, and with
//     traces exported over OTLP/HTTP.
//
// Both protocol eras: -era legacy (2025-11-25, sessions), 2026-07-28
// (sessionless; a gateway that refuses it with -32022 is reported "not
// served yet"), or both.
//
// It asserts nothing about speed: it exits 1 only when a call fails, a target
// cannot be measured, or the harness itself breaks. Timings are figures to
// compare, never pass/fail.
package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	short        bool
	rounds       int
	calls        int
	conc         []int
	era          string
	httpUpstream bool
	floor        bool
	directJSON   bool
	gatewayBin   string
	gatewayRev   string
	baselineBin  string
	baselineRev  string
	gatewayArgs  []string
	out          string

	startupServers         []int
	startupReps            int
	listServers            int
	listTools              int
	listIters              int
	sessions               int
	soakCalls              int
	soakSessions           int
	isolationNotifications int
	isolationCalls         int

	pprof          bool
	cpuProfile     string
	memProfile     string
	profileSeconds int
	profileEra     string
	profileHTTP    bool
	phases         map[string]bool
}

// phaseNames are the parts of a run, in order.
var phaseNames = []string{"calls", "isolation", "startup", "list", "sessions", "soak", "telemetry", "profile"}

func parseFlags(args []string) (*options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: go run ./bench [flags]   (make bench, make bench-short)

Measures mcp-gateway against a direct connection to the same MCP server, side
by side, and prints Markdown tables (bench/README.md, docs/benchmarks.md).

Flags:
`)
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.short, "short", false, "seconds, not minutes: 1 round, few calls, concurrency 1 and 16, 1 and 8 servers, no soak (CI)")
	rounds := fs.Int("rounds", 0, "rounds of the call matrix, targets alternated in each (default 3; -short 1)")
	calls := fs.Int("calls", 0, "calls per run at concurrency 16 and 64; a third of it at 1 (default 6000; -short 150)")
	conc := fs.String("conc", "", "concurrencies, comma-separated (default 1,16,64; -short 1,16)")
	fs.StringVar(&o.era, "era", "legacy", "protocol era of the call matrix: legacy (2025-11-25, sessions), 2026-07-28, or both")
	fs.BoolVar(&o.httpUpstream, "http-upstream", true, "measure gateway → HTTP upstream too (skipped with a note while the gateway refuses url servers)")
	fs.BoolVar(&o.floor, "floor", true, "measure the floor relay → stdio too (bench/floor: the least an HTTP-to-stdio relay does on net/http), protocol 2025-11-25, beside the gateway: what the topology itself costs")
	fs.BoolVar(&o.directJSON, "direct-json", false, "the direct echo server answers application/json instead of its default SSE stream")
	fs.StringVar(&o.gatewayBin, "gateway-bin", "", "use this mcp-gateway `binary` instead of building ./cmd/mcp-gateway")
	fs.StringVar(&o.gatewayRev, "gateway-rev", "", "build the gateway from this git `revision` (git archive) instead of the work tree")
	fs.StringVar(&o.baselineRev, "baseline-rev", "", "also measure a gateway built from this git `revision` (calls and sessions), side by side in the same rounds: before and after a change")
	fs.StringVar(&o.baselineBin, "baseline-bin", "", "also measure this mcp-gateway `binary` as the baseline (see -baseline-rev)")
	gatewayArgs := fs.String("gateway-args", "", "extra `flags` (space-separated) for the measured gateway, not the baseline: e.g. \"--policy-file=p.cedar --audit-file=a.jsonl\" with a copy of the same binary as -baseline-bin measures what policies and audit cost")
	fs.StringVar(&o.out, "o", "", "also write the Markdown report to `file`")
	startup := fs.String("startup-servers", "", "server counts for the launch-to-ready measure (default 1,8,32; -short 1,8)")
	fs.IntVar(&o.startupReps, "startup-reps", 0, "launches per server count (default 5; -short 1)")
	fs.IntVar(&o.listServers, "list-servers", 0, "servers for the tools/list measure (default 64; -short 8)")
	fs.IntVar(&o.listTools, "list-tools", 100, "tools per server for the tools/list measure")
	fs.IntVar(&o.listIters, "list-iters", 0, "full tools/list reads measured (default 200; -short 10)")
	fs.IntVar(&o.sessions, "sessions", 0, "sessions held open at once for the memory-per-session measure (default 1000; -short 100)")
	fs.IntVar(&o.soakCalls, "soak-calls", -1, "calls of the soak; 0 skips it; -1: 100000, or 0 with -short")
	fs.IntVar(&o.soakSessions, "soak-sessions", 1000, "sessions opened and closed during the soak")
	fs.IntVar(&o.isolationNotifications, "isolation-notifications", 0, "progress notifications the stalled client's call asks for (default 20000; -short 2000)")
	fs.IntVar(&o.isolationCalls, "isolation-calls", 0, "echo calls per isolation measure (default 2000; -short 200)")
	fs.BoolVar(&o.pprof, "pprof", false, "build the gateway with net/http/pprof on a side port (go build -overlay: the repository is not changed), "+
		"for goroutine counts, live heap and -cpuprofile")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the gateway under 16 concurrent calls to `file` (needs -pprof)")
	fs.StringVar(&o.memProfile, "memprofile", "", "with -cpuprofile, also write the gateway's allocation profiles from before and after the profiled load to `file`.base and file")
	fs.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of the -cpuprofile profile")
	fs.StringVar(&o.profileEra, "profile-era", "legacy", "protocol era of the -cpuprofile load: legacy or "+eraModern)
	fs.BoolVar(&o.profileHTTP, "profile-http", false, "profile gateway → HTTP upstream instead of gateway → stdio")
	phases := fs.String("phases", strings.Join(phaseNames, ","), "the parts to run, comma-separated")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.gatewayArgs = strings.Fields(*gatewayArgs)
	pick := func(v, full, short int) int {
		switch {
		case v > 0:
			return v
		case o.short:
			return short
		}
		return full
	}
	o.rounds = pick(*rounds, 3, 1)
	o.calls = pick(*calls, 6000, 150)
	o.startupReps = pick(o.startupReps, 5, 1)
	o.listServers = pick(o.listServers, 64, 8)
	o.listIters = pick(o.listIters, 200, 10)
	o.sessions = pick(o.sessions, 1000, 100)
	o.isolationNotifications = pick(o.isolationNotifications, 20000, 2000)
	o.isolationCalls = pick(o.isolationCalls, 2000, 200)
	switch {
	case o.soakCalls >= 0:
	case o.short:
		o.soakCalls = 0
	default:
		o.soakCalls = 100000
	}
	var err error
	if o.conc, err = intList(*conc, "1,16,64", "1,16", o.short); err != nil {
		return nil, fmt.Errorf("-conc: %w", err)
	}
	if o.startupServers, err = intList(*startup, "1,8,32", "1,8", o.short); err != nil {
		return nil, fmt.Errorf("-startup-servers: %w", err)
	}
	o.phases = map[string]bool{}
	for p := range strings.SplitSeq(*phases, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(phaseNames, p) {
			return nil, fmt.Errorf("-phases: unknown phase %q (known: %s)", p, strings.Join(phaseNames, ", "))
		}
		o.phases[p] = true
	}
	if o.gatewayBin != "" && o.gatewayRev != "" {
		return nil, errors.New("give -gateway-bin or -gateway-rev, not both")
	}
	if o.baselineBin != "" && o.baselineRev != "" {
		return nil, errors.New("give -baseline-bin or -baseline-rev, not both")
	}
	if o.gatewayBin != "" && o.pprof {
		return nil, errors.New("-pprof builds the gateway: it cannot use -gateway-bin")
	}
	if o.cpuProfile != "" && !o.pprof {
		return nil, errors.New("-cpuprofile needs -pprof")
	}
	if o.memProfile != "" && o.cpuProfile == "" {
		return nil, errors.New("-memprofile needs -cpuprofile")
	}
	switch o.profileEra {
	case "legacy":
		o.profileEra = eraLegacy
	case eraModern:
	default:
		return nil, fmt.Errorf("-profile-era must be legacy or %s, not %q", eraModern, o.profileEra)
	}
	switch o.era {
	case "legacy", eraModern, "both":
	default:
		return nil, fmt.Errorf("-era must be legacy, %s or both, not %q", eraModern, o.era)
	}
	return &o, nil
}

func intList(s, full, short string, isShort bool) ([]int, error) {
	if s == "" {
		s = full
		if isShort {
			s = short
		}
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// bench holds what every phase needs.
type bench struct {
	opts     *options
	dir      string // temporary directory, removed at the end
	gateway  string // mcp-gateway binary
	echo     string // echo server binary
	floor    string // the floor relay's binary (bench/floor)
	token    string
	report   *report
	rev      string // the commit -gateway-rev resolved to
	baseline string // the baseline mcp-gateway binary (-baseline-rev, -baseline-bin); "" for none
	baseRev  string // the commit -baseline-rev resolved to
	gateways int    // gateways started, for unique file names
}

// runLimit bounds a whole run, build included.
const runLimit = 30 * time.Minute

// fail records an error that makes the run exit 1, and prints it at once.
func (b *bench) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.report.failures = append(b.report.failures, msg)
	fmt.Fprintf(os.Stderr, "\n!!! ERROR: %s\n\n", msg)
}

func (b *bench) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.report.notes = append(b.report.notes, msg)
	fmt.Fprintf(os.Stderr, "note: %s\n", msg)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func run(args []string) int {
	opts, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "mcp-gateway-bench-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Ctrl-C and SIGTERM stop every process started, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "\nbench: %v: stopping every process started\n", sig)
		stopAll()
		os.RemoveAll(dir)
		os.Exit(130)
	}()
	defer stopAll()

	// The whole run is bounded too: a hang anywhere ends it.
	overall := time.AfterFunc(runLimit, func() {
		fmt.Fprintf(os.Stderr, "\n!!! ERROR: the benchmark passed its %s limit; stopping every process started\n", runLimit)
		stopAll()
		os.RemoveAll(dir)
		os.Exit(1)
	})
	defer overall.Stop()
	b := &bench{opts: opts, dir: dir, token: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		report: &report{opts: opts, args: args}}
	if err := b.build(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		return 1
	}
	b.report.machine = machineInfo()
	switch {
	case opts.gatewayBin != "":
		b.report.commit = "the binary " + opts.gatewayBin + " (-gateway-bin); work tree at commit " + gitCommit()
	case opts.gatewayRev != "":
		b.report.commit = "commit " + b.rev + " (-gateway-rev " + opts.gatewayRev + ")"
	default:
		b.report.commit = "commit " + gitCommit()
	}
	if opts.pprof {
		b.report.commit += ", built with net/http/pprof on a side port (-pprof)"
	}
	switch {
	case opts.baselineRev != "":
		b.report.baseline = "commit " + b.baseRev + " (-baseline-rev " + opts.baselineRev + ")"
	case opts.baselineBin != "":
		b.report.baseline = "the binary " + opts.baselineBin + " (-baseline-bin)"
	}

	began := time.Now()
	for _, p := range []struct {
		name string
		run  func()
	}{{"calls", b.calls}, {"isolation", b.isolation}, {"startup", b.startup}, {"list", b.listScale}, {"sessions", b.sessionScale}, {"soak", b.soak}, {"telemetry", b.telemetryCost}, {"profile", b.profile}} {
		if opts.phases[p.name] {
			p.run()
		}
	}
	stopAll()
	b.report.took = time.Since(began)

	md := b.report.markdown()
	fmt.Print(md)
	if opts.out != "" {
		if err := os.WriteFile(opts.out, []byte(md), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			return 1
		}
	}
	if len(b.report.failures) > 0 {
		fmt.Fprintf(os.Stderr, "\n!!! %d ERROR(S): the figures above are not valid:\n", len(b.report.failures))
		for _, f := range b.report.failures {
			fmt.Fprintf(os.Stderr, "  - %s\n", firstLine(f))
		}
		return 1
	}
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// build compiles the gateway (unless -gateway-bin) and the echo server.
func (b *bench) build() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	b.echo = filepath.Join(b.dir, "echo")
	b.gateway = b.opts.gatewayBin
	if err := goBuild(root, b.echo, "./bench/echo"); err != nil {
		return err
	}
	if b.opts.floor {
		b.floor = filepath.Join(b.dir, "floor")
		if err := goBuild(root, b.floor, "./bench/floor"); err != nil {
			return err
		}
	}
	if err := b.buildBaseline(root); err != nil {
		return err
	}
	switch {
	case b.gateway != "":
		b.gateway, err = filepath.Abs(b.gateway)
		return err
	case b.opts.gatewayRev != "":
		src := filepath.Join(b.dir, "gateway-src")
		if b.rev, err = exportRevision(root, b.opts.gatewayRev, src); err != nil {
			return err
		}
		root = src
	}
	b.gateway = filepath.Join(b.dir, "mcp-gateway")
	var flags []string
	if b.opts.pprof {
		overlay, err := pprofOverlay(root, b.dir)
		if err != nil {
			return err
		}
		flags = append(flags, "-overlay", overlay)
	}
	return goBuild(root, b.gateway, "./cmd/mcp-gateway", flags...)
}

// buildBaseline builds the gateway of -baseline-rev, or takes -baseline-bin.
func (b *bench) buildBaseline(root string) error {
	switch {
	case b.opts.baselineBin != "":
		var err error
		b.baseline, err = filepath.Abs(b.opts.baselineBin)
		return err
	case b.opts.baselineRev != "":
		src := filepath.Join(b.dir, "baseline-src")
		var err error
		if b.baseRev, err = exportRevision(root, b.opts.baselineRev, src); err != nil {
			return err
		}
		b.baseline = filepath.Join(b.dir, "mcp-gateway-baseline")
		return goBuild(src, b.baseline, "./cmd/mcp-gateway")
	}
	return nil
}

// gatewayBuild is one gateway binary under test and what its targets'
// names end with.
type gatewayBuild struct{ bin, suffix string }

// baselineSuffix ends the names of the baseline's targets.
const baselineSuffix = " (baseline)"

// builds are the gateways to measure: the one under test, then the baseline.
func (b *bench) builds() []gatewayBuild {
	out := []gatewayBuild{{bin: b.gateway}}
	if b.baseline != "" {
		out = append(out, gatewayBuild{bin: b.baseline, suffix: baselineSuffix})
	}
	return out
}

// pprofEnv names the file a -pprof build writes its pprof address to.
const pprofEnv = "MCP_GATEWAY_BENCH_PPROF"

// pprofSource is the file a -pprof build adds to package main of
// cmd/mcp-gateway, through go build -overlay: nothing in the repository
// changes, and the gateway's own listener and handler stay as they are.
const pprofSource = `package main

import (
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

// Added by the benchmark's -pprof build: net/http/pprof on 127.0.0.1 and a
// free port, whose address goes to the file named by $` + pprofEnv + `.
func init() {
	file := os.Getenv("` + pprofEnv + `")
	if file == "" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	if os.WriteFile(file, []byte(ln.Addr().String()), 0o600) == nil {
		go http.Serve(ln, nil)
	}
}
`

// pprofOverlay writes the overlay that adds pprofSource to cmd/mcp-gateway
// and returns the overlay file's path.
func pprofOverlay(root, dir string) (string, error) {
	src := filepath.Join(dir, "bench_pprof.go")
	if err := os.WriteFile(src, []byte(pprofSource), 0o644); err != nil {
		return "", err
	}
	target := filepath.Join(root, "cmd", "mcp-gateway", "zz_bench_pprof.go")
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {target: src}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, overlay, 0o644)
}

func goBuild(dir, out, pkg string, flags ...string) error {
	progress("building %s in %s %s", pkg, dir, strings.Join(flags, " "))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCommand(), append(append([]string{"build"}, flags...), "-o", out, pkg)...)
	cmd.Dir = dir
	// Static, as template/Dockerfile builds the gateway: a binary linked
	// with cgo spends about 1 ms more on every process start here.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

// exportRevision writes the files of a git revision to dir (git archive) and
// returns its short commit.
func exportRevision(root, rev, dir string) (string, error) {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", rev+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("-gateway-rev %s: not a commit of %s", rev, root)
	}
	commit := strings.TrimSpace(string(out))
	cmd := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	xerr := untar(stdout, dir)
	if werr := cmd.Wait(); xerr == nil && werr != nil {
		xerr = fmt.Errorf("git archive %s: %w", commit, werr)
	}
	return commit, xerr
}

// untar extracts the regular files and directories of a tar stream into dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			continue // pax headers and anything escaping dir
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			err = writeFile(name, tr, h.FileInfo().Mode().Perm())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(name string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// goCommand is $GO (as the Makefile passes it), else go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func moduleRoot() (string, error) {
	out, err := exec.Command(goCommand(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the benchmark inside the mcp-gateway module (go run ./bench from the repository)")
	}
	return filepath.Dir(mod), nil
}

// machine describes where the figures were measured.
type machine struct {
	cpus      int
	model     string
	memory    string
	goVersion string
	kernel    string
}

func machineInfo() machine {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(v)
				if kib, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					m.memory = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	return m
}

// gitCommit names the checkout measured: the commit, and whether the work
// tree had changes.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--", "cmd", "internal", "mcpconfig").Output(); err == nil && len(st) > 0 {
		c += " with uncommitted changes"
	}
	return c
}
