// Command harness runs the official MCP conformance suite against the Go SDK's
// conformance fixture twice in one run, directly and through mcp-gateway, and
// fails when a scenario that passes directly does not pass through the gateway
// (unless test/conformance/known-gaps.txt lists it). It does the same with the
// suite's client scenarios: the SDK's everything-client directly, and through
// the gateway by test/conformance/clientdriver (the gateway as OAuth client).
// It writes the comparison to <out>/report.md and, on a full run, to
// docs/conformance.md.
//
// Run it from the repository root, after `npm ci` in test/npm (make
// conformance does both):
//
//	go run ./test/conformance/harness                            # every configuration
//	go run ./test/conformance/harness -configs alpha-2026-07-28  # just one
//
// Exit codes: 0 all good, 1 the comparison failed (a regression, a stale
// known gap, a name check), 2 the harness itself could not run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A suiteConfig is one way of running the suite; each runs against a fixture
// directly and against the gateway.
type suiteConfig struct {
	Name    string   // as used in known-gaps.txt and on the command line
	Package string   // npm alias under test/npm/node_modules
	Args    []string // what selects the scenarios
	Fixture string   // the fixture the direct run targets: stateful, stateless or tasks
	About   string   // one line for the report
	// Client: the suite's client scenarios (`conformance client`): the
	// SDK's everything-client directly at each scenario server, and
	// through the gateway by clientdriver. Fixture is then unused.
	Client bool
	// Scenarios, when set, are run one by one (--scenario each, with Args),
	// instead of the selection Args makes.
	Scenarios []string
}

var allConfigs = []suiteConfig{
	{
		Name: "stable-all", Package: "conf-stable", Args: []string{"--suite", "all"}, Fixture: stateful,
		About: "every scenario of the stable suite (protocol 2025-06-18 and 2025-11-25, sessions); direct target: the fixture with `-stateless=false`",
	},
	{
		Name: "alpha-2025-11-25", Package: "conf-alpha", Args: []string{"--requirements", "2025-11-25"}, Fixture: stateful,
		About: "the scenarios the 2025-11-25 revision requires (sessions); direct target: the fixture with `-stateless=false`",
	},
	{
		Name: "alpha-2026-07-28", Package: "conf-alpha", Args: []string{"--requirements", "2026-07-28"}, Fixture: stateless,
		About: "the scenarios the 2026-07-28 revision requires (stateless, no `initialize`); direct target: the fixture in its default stateless mode",
	},
	{
		// The tasks extension's scenarios (SEP-2663), which the Go SDK's
		// fixture cannot pass (it has no tasks): against a fixture of the
		// harness's own, directly and through a gateway of its own.
		Name: "alpha-2026-07-28-tasks", Package: "conf-alpha", Fixture: tasksFixture, Scenarios: tasksScenarios,
		About: "the tasks extension's scenarios (`tasks-*`, SEP-2663; unscored by the suite) against `test/conformance/tasksfixture` (2026-07-28 with the `io.modelcontextprotocol/tasks` extension): directly over streamable HTTP, through a gateway fronting it over stdio",
	},
	{
		Name: "client-2025-11-25", Package: "conf-alpha", Args: []string{"--requirements", "2025-11-25"}, Client: true,
		About: "the client scenarios the 2025-11-25 revision requires (OAuth above all), plus the extensions it runs unscored; directly: the Go SDK's everything-client; through the gateway: `clientdriver`, the gateway doing the OAuth",
	},
	{
		Name: "client-2026-07-28", Package: "conf-alpha", Args: []string{"--requirements", "2026-07-28"}, Client: true,
		About: "the client scenarios the 2026-07-28 revision requires, plus the extensions it runs unscored; as client-2025-11-25",
	},
}

const (
	clientPkg  = "github.com/modelcontextprotocol/go-sdk/conformance/everything-client"
	driverPkg  = "./test/conformance/clientdriver"
	stateful   = "stateful"
	stateless  = "stateless"
	fixturePkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"
	sdkModule  = "github.com/modelcontextprotocol/go-sdk"
)

// tasksFixture is the Fixture of the tasks configuration: the harness's
// own server with the tasks extension.
const (
	tasksFixture    = "tasks"
	tasksFixturePkg = "./test/conformance/tasksfixture"
)

func main() {
	os.Exit(run())
}

func run() int {
	var (
		root         = flag.String("root", ".", "repository root")
		out          = flag.String("out", "test/out/conformance", "output directory (emptied first), relative to -root")
		configs      = flag.String("configs", "", "comma-separated configurations to run (default all: "+configNames(allConfigs)+")")
		knownGaps    = flag.String("known-gaps", "test/conformance/known-gaps.txt", "known-gaps file, relative to -root")
		doc          = flag.String("doc", "docs/conformance.md", "where a full run writes its report, relative to -root; empty: nowhere")
		suiteTimeout = flag.Duration("suite-timeout", 5*time.Minute, "longest one suite run may take")
		proxy        = flag.String("proxy", "", "what stands between the suite and the gateway: empty for nothing, or \"nginx\" "+
			"(its outputs then default to test/out/conformance-nginx and docs/conformance-nginx.md)")
	)
	flag.Parse()
	set := map[string]bool{}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "harness: unexpected arguments %q\n", flag.Args())
		return 2
	}
	began := time.Now()
	switch *proxy {
	case "":
	case proxyNginx:
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["out"] {
			*out = "test/out/conformance-nginx"
		}
		if !set["doc"] {
			*doc = "docs/conformance-nginx.md"
		}
	default:
		fmt.Fprintf(os.Stderr, "harness: unknown -proxy %q (known: nginx)\n", *proxy)
		return 2
	}

	modeConfigs := allConfigs
	if *proxy != "" { // client scenarios do not go through the proxy
		modeConfigs = serverConfigs(allConfigs)
		if *configs == "" {
			*configs = configNames(modeConfigs)
		}
	}
	selected, err := selectConfigs(*configs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 2
	}
	absRoot, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 2
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(absRoot, p)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h := &harness{
		root:         absRoot,
		out:          rel(*out),
		suiteTimeout: *suiteTimeout,
		configs:      selected,
		proxy:        *proxy,
	}
	runErr := h.runAll(ctx) // stops every process it started before returning
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "harness:", runErr)
		if ctx.Err() != nil || errors.Is(runErr, errSetup) {
			return 2
		}
	}

	gaps, err := readKnownGaps(rel(*knownGaps))
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 2
	}
	rep := &report{Meta: h.meta, Problems: h.problems, All: len(selected) == len(modeConfigs)}
	for _, c := range selected {
		cr, err := compareConfig(c, filepath.Join(h.out, c.Name), gaps.forConfig(c.Name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			return 2
		}
		rep.Configs = append(rep.Configs, cr)
	}
	rep.Problems = append(rep.Problems, gaps.unknownConfigs(allConfigs)...)

	md := rep.markdown()
	if err := os.WriteFile(filepath.Join(h.out, "report.md"), []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 2
	}
	if rep.All && *doc != "" {
		if err := os.WriteFile(rel(*doc), []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			return 2
		}
	}

	fmt.Print(rep.console())
	fmt.Printf("\nreport: %s", filepath.Join(h.out, "report.md"))
	if rep.All && *doc != "" {
		fmt.Printf(" (and %s)", rel(*doc))
	}
	fmt.Printf("; logs and results under %s; took %s\n", h.out, time.Since(began).Round(100*time.Millisecond))
	if runErr != nil || !rep.ok() {
		fmt.Println("conformance: FAIL")
		return 1
	}
	fmt.Println("conformance: ok")
	return 0
}

func serverConfigs(cs []suiteConfig) []suiteConfig {
	var out []suiteConfig
	for _, c := range cs {
		if !c.Client {
			out = append(out, c)
		}
	}
	return out
}

func configNames(cs []suiteConfig) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

func selectConfigs(list string) ([]suiteConfig, error) {
	if list == "" {
		return allConfigs, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		found := false
		for _, c := range allConfigs {
			found = found || c.Name == n
		}
		if !found {
			return nil, fmt.Errorf("unknown configuration %q (known: %s)", n, configNames(allConfigs))
		}
		want[n] = true
	}
	var out []suiteConfig
	for _, c := range allConfigs { // keep the canonical order
		if want[c.Name] {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-configs names no configuration")
	}
	return out, nil
}

// tasksScenarios are the suite's scenarios of the tasks extension.
var tasksScenarios = []string{
	"tasks-capability-negotiation", "tasks-dispatch-and-envelope", "tasks-lifecycle", "tasks-mrtr-composition",
	"tasks-mrtr-input", "tasks-request-headers", "tasks-request-state-removal", "tasks-required-task-error",
	"tasks-status-notifications", "tasks-wire-fields",
}
