package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/policy"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// governanceFlags are the policy and audit flags of the launcher, serve and stdio.
type governanceFlags struct {
	policyFile      string
	policyDefault   string
	auditFile       string
	auditArguments  bool
	auditMaxBytes   int64
	approvalTimeout time.Duration
}

// sandboxAuditFile is the audit log's name beside the launcher's log file.
const sandboxAuditFile = "mcp-gateway-audit.jsonl"

func (f *governanceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.policyFile, "policy-file", "", "Cedar policies (a .cedar `file`) deciding what clients may list and call (see docs/policy.md); checked at start")
	fs.StringVar(&f.policyDefault, "policy-default", "permit", "what is decided when no policy matches: permit, or deny (forbid unless a policy permits)")
	fs.StringVar(&f.auditFile, "audit-file", "", "append the audit log (JSON Lines, hash-chained) to `file`; the launcher's default is "+sandboxAuditFile+" beside --log-file; empty: none")
	fs.BoolVar(&f.auditArguments, "audit-arguments", false, "record calls' arguments in full in the audit log (default: their SHA-256 only)")
	fs.Int64Var(&f.auditMaxBytes, "audit-max-bytes", 100<<20, "rotate the audit log beyond this size (the chain continues in the new file)")
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", policy.DefaultApprovalTimeout, "how long a call needing approval (@requireApproval) waits for an answer before it is denied")
}

// args renders the flags for the serving process.
func (f *governanceFlags) args() []string {
	a := []string{
		"--policy-file=" + f.policyFile,
		"--policy-default=" + f.policyDefault,
		"--audit-file=" + f.auditFile,
		fmt.Sprintf("--audit-max-bytes=%d", f.auditMaxBytes),
		"--approval-timeout=" + f.approvalTimeout.String(),
	}
	if f.auditArguments {
		a = append(a, "--audit-arguments")
	}
	return a
}

// launcherDefaults puts the audit log beside the log file unless
// --audit-file was given.
func (f *governanceFlags) launcherDefaults(fs *flag.FlagSet, logFile string) {
	set := false
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "audit-file" })
	if !set {
		f.auditFile = filepath.Join(filepath.Dir(logFile), sandboxAuditFile)
	}
	// The serving process may run elsewhere: absolute paths.
	for _, p := range []*string{&f.policyFile, &f.auditFile} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
}

// load reads and checks the policy file; nil when there is none. An error
// names the file, line and column.
func (f *governanceFlags) load() (*policy.Set, error) {
	def, err := policy.ParseDefault(f.policyDefault)
	if err != nil {
		return nil, err
	}
	if f.approvalTimeout < 0 {
		return nil, fmt.Errorf("--approval-timeout must not be negative, not %s", f.approvalTimeout)
	}
	if f.policyFile == "" {
		if def == policy.DefaultDeny {
			// Deny with no policy: nothing at all is allowed. Meant, but say so.
			return policy.Parse(def)
		}
		return nil, nil
	}
	text, err := os.ReadFile(f.policyFile)
	if err != nil {
		return nil, fmt.Errorf("--policy-file: %w", err)
	}
	set, err := policy.Parse(def, policy.Source{Name: f.policyFile, Text: text})
	if err != nil {
		return nil, fmt.Errorf("invalid policy file:\n%w", err)
	}
	return set, nil
}

// guard builds the gateway's guard from the flags; nil when there is no
// policy and no audit log, so the call path has nothing to consult.
func (f *governanceFlags) guard(specs []mcpconfig.Server, logger *slog.Logger) (gateway.Guard, error) {
	set, err := f.load()
	if err != nil {
		return nil, err
	}
	if set == nil && f.auditFile == "" {
		return nil, nil
	}
	g := &policy.Guard{Engine: policy.NewEngine(set), Principal: "default", ApprovalTimeout: f.approvalTimeout, Logger: logger}
	servers := map[string]policy.Server{}
	for _, s := range specs {
		servers[s.Name] = policy.ServerFromConfig(s)
	}
	g.Servers = func(name string) policy.Server { return servers[name] }
	if f.auditFile != "" {
		if g.Audit, err = audit.Open(f.auditFile, audit.Options{MaxBytes: f.auditMaxBytes, Arguments: f.auditArguments, Logger: logger}); err != nil {
			return nil, err
		}
		detail := "no policy"
		if set != nil {
			detail = fmt.Sprintf("%d policies from %s, default %s", set.Len(), f.policyFile, f.policyDefault)
		}
		_ = g.Audit.Write(&audit.Record{Type: "admin", Action: "gateway start", Detail: detail})
	}
	if set != nil {
		logger.Info("policies loaded", "file", f.policyFile, "policies", set.Len(), "default", f.policyDefault)
	}
	if f.policyFile != "" {
		f.reloadOnHangup(g, logger)
	}
	return g, nil
}

// reloadOnHangup reads the policy file again on SIGHUP and applies it at
// once (clients whose lists change hear list_changed); a file that no
// longer loads is reported and the policies in force stay.
func (f *governanceFlags) reloadOnHangup(g *policy.Guard, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			set, err := f.load()
			if err != nil {
				logger.Error("reloading the policy file failed; the policies in force stay", "err", err)
				if g.Audit != nil {
					_ = g.Audit.Write(&audit.Record{Type: "admin", Action: "policy reload", Name: f.policyFile, Outcome: "error", Detail: err.Error()})
				}
				continue
			}
			g.Engine.Replace(set)
			logger.Info("policies reloaded", "file", f.policyFile, "policies", set.Len())
			if g.Audit != nil {
				_ = g.Audit.Write(&audit.Record{Type: "admin", Action: "policy reload", Name: f.policyFile, Outcome: "ok",
					Detail: fmt.Sprintf("%d policies", set.Len())})
			}
		}
	}()
}

// runAudit is `mcp-gateway audit verify FILE...`.
func runAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, auditUsage)
			return exitOK
		}
		fmt.Fprintln(stderr, auditUsage)
		return exitUsage
	}
	fs := newFlagSet("audit verify", "mcp-gateway audit verify [--from HASH] FILE [FILE...]", auditUsage, stderr)
	from := fs.String("from", "", "the `hash` the chain should start from (the prev of its first record) when its head was rotated away; default: the genesis (64 zeros)")
	if code, done := parse(fs, args[1:], stdout); done {
		return code
	}
	files := fs.Args()
	if *from != "" && !isHash(*from) {
		fmt.Fprintf(stderr, "mcp-gateway audit verify: --from must be a record's hash (64 hex digits), not %q\n", *from)
		return exitUsage
	}
	var res *audit.Result
	var err error
	switch len(files) {
	case 0:
		fmt.Fprintln(stderr, "mcp-gateway audit verify: name the audit file (its rotated files FILE.1, FILE.2, ... are read first)")
		return exitUsage
	case 1:
		res, err = audit.VerifyLog(files[0], *from)
	default:
		res, err = audit.VerifyFrom(*from, files...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-gateway audit verify: %v\n", err)
		return exitError
	}
	for _, p := range res.Problems {
		fmt.Fprintln(stdout, p.String())
	}
	if len(res.Problems) > 0 {
		fmt.Fprintf(stdout, "FAILED: %d problems in %d records (%s)\n", len(res.Problems), res.Records, strings.Join(res.Files, ", "))
		return exitError
	}
	start := "the chain's genesis"
	if res.First != audit.Genesis {
		start = "--from " + res.First
	}
	fmt.Fprintf(stdout, "ok: %d records in %d files, chained from %s; last hash %s\n", res.Records, len(res.Files), start, res.Last)
	return exitOK
}

// isHash says whether s is a record hash: 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

const auditUsage = `Usage: mcp-gateway audit verify [--from HASH] FILE [FILE...]

Check an audit log's hash chain: every record must match its own hash and
carry the hash of the record before it, so an edited, removed, inserted or
reordered record is reported with its file and line (exit code 1). The
chain must start at its genesis, or at --from HASH when its head was
rotated away (the gateway logs that hash when it drops a file). Given one
FILE, its rotated files (FILE.N ... FILE.1) are read first, as one chain,
and a rotated file missing between them fails the check, named.
Keep the printed last hash elsewhere to detect a later truncation.`

// registerHost registers the governance flags of the host daemon, whose
// policies live in its state directory (`mcp-gateway policy set`).
func (f *governanceFlags) registerHost(fs *flag.FlagSet) {
	fs.StringVar(&f.policyDefault, "policy-default", "permit", "what is decided when no policy matches: permit, or deny (forbid unless a policy permits)")
	fs.StringVar(&f.auditFile, "audit-file", "", "the audit log `file` (JSON Lines, hash-chained); default audit.jsonl in the state directory; '-': none")
	fs.BoolVar(&f.auditArguments, "audit-arguments", false, "record calls' arguments in full in the audit log (default: their SHA-256 only)")
	fs.Int64Var(&f.auditMaxBytes, "audit-max-bytes", 100<<20, "rotate the audit log beyond this size (the chain continues in the new file)")
	fs.DurationVar(&f.approvalTimeout, "approval-timeout", policy.DefaultApprovalTimeout, "how long a call needing approval waits for an answer (elicitation or 'mcp-gateway approval allow') before it is denied")
}

// hostOptions are the host daemon's governance options.
func (f *governanceFlags) hostOptions() (host.GovernanceOptions, error) {
	def, err := policy.ParseDefault(f.policyDefault)
	if err != nil {
		return host.GovernanceOptions{}, err
	}
	if f.approvalTimeout < 0 {
		return host.GovernanceOptions{}, fmt.Errorf("--approval-timeout must not be negative, not %s", f.approvalTimeout)
	}
	return host.GovernanceOptions{Default: def, AuditFile: f.auditFile, AuditArguments: f.auditArguments,
		AuditMaxBytes: f.auditMaxBytes, ApprovalTimeout: f.approvalTimeout}, nil
}

// countDecisions makes the gateway's policy guard count its decisions in
// the metrics (mcp_gateway_policy_decisions_total), when both exist.
func countDecisions(gw *gateway.Gateway, tel *telemetry.Telemetry) {
	pg, ok := gw.Guard.(*policy.Guard)
	if !ok || tel == nil || tel.Metrics == nil {
		return
	}
	d, _ := tel.Metrics.PolicyDecisions("")
	pg.Decisions = d
}
