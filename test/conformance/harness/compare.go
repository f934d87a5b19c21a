package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// outcome is how one scenario went against one target, worst first.
type outcome int

const (
	outMissing outcome = iota // no result directory: the scenario did not run
	outFail                   // at least one FAILURE check
	outNA                     // no FAILURE, WARNING or SUCCESS: nothing was scored
	outWarn                   // no FAILURE, at least one WARNING (a SHOULD not met)
	outPass                   // no FAILURE, no WARNING, at least one SUCCESS
)

// check is the part of a checks.json entry the harness reads. Status is
// SUCCESS, FAILURE, WARNING, INFO (a trace or a not-applicable note) or
// SKIPPED.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

type result struct {
	Outcome                   outcome
	Success, Failure, Warning int
	Checks                    []check
}

func classify(checks []check) *result {
	r := &result{Checks: checks}
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			r.Success++
		case "FAILURE":
			r.Failure++
		case "WARNING":
			r.Warning++
		}
	}
	switch {
	case r.Failure > 0:
		r.Outcome = outFail
	case r.Warning > 0:
		r.Outcome = outWarn
	case r.Success > 0:
		r.Outcome = outPass
	default:
		r.Outcome = outNA
	}
	return r
}

// holds reports whether the scenario counts as passing: warnings and
// not-applicable results do not fail a scenario by themselves.
func (r *result) holds() bool { return r != nil && r.Outcome >= outNA }

// resultDir is how the suite names a scenario's directory:
// server-<scenario>-<ISO time with : and . as ->.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// clientResultDir is a client scenario's: <scenario>-<time>, the auth/
// scenarios' in a directory auth/.
var clientResultDir = regexp.MustCompile(`^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every <dir>/server-<scenario>-<time>/checks.json. A
// directory without checks.json is a scenario the suite skipped as not
// applicable: it counts as n/a.
func readResults(dir string) (map[string]*result, error) {
	return readResultsIn(dir, resultDir, "")
}

// readClientResults reads a client run's <dir>/<scenario>-<time> and
// <dir>/auth/<scenario>-<time>, the scenarios named auth/<scenario>.
func readClientResults(dir string) (map[string]*result, error) {
	return readResultsIn(dir, clientResultDir, "")
}

func readResultsIn(dir string, pattern *regexp.Regexp, prefix string) (map[string]*result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return map[string]*result{}, nil
		}
		return nil, err
	}
	out := map[string]*result{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m := pattern.FindStringSubmatch(e.Name())
		if m == nil && pattern == clientResultDir && prefix == "" {
			sub, err := readResultsIn(filepath.Join(dir, e.Name()), pattern, e.Name()+"/")
			if err != nil {
				return nil, err
			}
			for k, v := range sub {
				out[k] = v
			}
			continue
		}
		if m == nil {
			return nil, fmt.Errorf("%s: unexpected result directory %q (has the suite's output layout changed?)", dir, e.Name())
		}
		scenario := prefix + m[1]
		if out[scenario] != nil {
			return nil, fmt.Errorf("%s: scenario %s has two result directories", dir, scenario)
		}
		var checks []check
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			if err := json.Unmarshal(b, &checks); err != nil {
				return nil, fmt.Errorf("%s/%s/checks.json: %v", dir, e.Name(), err)
			}
		}
		out[scenario] = classify(checks)
	}
	return out, nil
}

// notScoredLine is how the alpha suite lists scenarios it runs but does not
// score for a revision ("  ✗ tasks-lifecycle (extension)").
var notScoredLine = regexp.MustCompile(`^\s+[✓✗] (\S+) \(([^)]+)\)$`)

// readNotScored reads the suite's "Not scored for <revision>" list from its
// output; a missing file or list gives an empty map.
func readNotScored(logPath string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(logPath)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Not scored for ") {
			in = true
			continue
		}
		if !in {
			continue
		}
		m := notScoredLine.FindStringSubmatch(line)
		if m == nil {
			in = false
			continue
		}
		out[m[1]] = m[2]
	}
	return out
}

// verdict is what the comparison concludes for one scenario.
type verdict int

const (
	vOK            verdict = iota // passes directly and through the gateway
	vFailsDirectly                // fails directly: nothing to hold the gateway to
	vKnownGap                     // fails through the gateway only, listed in known-gaps.txt
	vRegression                   // fails through the gateway only, not listed: fails the run
	vFixed                        // listed, but passes through the gateway now: fails the run
	vStaleGap                     // listed, but fails directly too: fails the run
)

type row struct {
	Scenario        string
	Direct, Gateway *result
	Verdict         verdict
	Gap             *knownGap
	NotScored       string // the suite's reason for not scoring it, if so
}

// regressed reports whether the gateway did worse than the fixture on its
// own: a failure (or no result) where the direct run held, or a warning
// where the direct run had none.
func regressed(direct, gateway *result) bool {
	if !direct.holds() {
		return false
	}
	if !gateway.holds() {
		return true
	}
	return gateway.Outcome == outWarn && direct.Outcome != outWarn
}

type configResult struct {
	Config   suiteConfig
	Rows     []row
	Problems []string // stale known-gaps lines
}

func compareConfig(c suiteConfig, dir string, gaps map[string]*knownGap) (*configResult, error) {
	read := readResults
	if c.Client {
		read = readClientResults
	}
	direct, err := read(filepath.Join(dir, "direct"))
	if err != nil {
		return nil, err
	}
	gateway, err := read(filepath.Join(dir, "gateway"))
	if err != nil {
		return nil, err
	}
	return compareResults(c, direct, gateway, gaps, readNotScored(filepath.Join(dir, "direct.log"))), nil
}

func compareResults(c suiteConfig, direct, gateway map[string]*result, gaps map[string]*knownGap, notScored map[string]string) *configResult {
	cr := &configResult{Config: c}
	seen := map[string]bool{}
	var names []string
	for _, m := range []map[string]*result{direct, gateway} {
		for n := range m {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		r := row{Scenario: n, Direct: direct[n], Gateway: gateway[n], Gap: gaps[n], NotScored: notScored[n]}
		switch reg := regressed(r.Direct, r.Gateway); {
		case r.Gap != nil && reg:
			r.Verdict = vKnownGap
		case r.Gap != nil && r.Gap.OrderDependent && r.Direct.holds():
			r.Verdict = vKnownGap // a gap that shows only on some runs
		case r.Gap != nil && !r.Direct.holds():
			r.Verdict = vStaleGap
		case r.Gap != nil:
			r.Verdict = vFixed
		case reg:
			r.Verdict = vRegression
		case !r.Direct.holds():
			r.Verdict = vFailsDirectly
		default:
			r.Verdict = vOK
		}
		cr.Rows = append(cr.Rows, r)
	}
	var unknown []*knownGap
	for n, g := range gaps {
		if !seen[n] {
			unknown = append(unknown, g)
		}
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].Line < unknown[j].Line })
	for _, g := range unknown {
		cr.Problems = append(cr.Problems, fmt.Sprintf("known-gaps.txt line %d: %s did not run in %s — remove it", g.Line, g.Scenario, c.Name))
	}
	return cr
}

func (cr *configResult) count(v verdict) int {
	n := 0
	for _, r := range cr.Rows {
		if r.Verdict == v {
			n++
		}
	}
	return n
}

func (cr *configResult) ok() bool {
	return len(cr.Problems) == 0 && cr.count(vRegression) == 0 && cr.count(vFixed) == 0 && cr.count(vStaleGap) == 0
}

// knownGap is one line of known-gaps.txt: `<config> <scenario>  # reason`.
type knownGap struct {
	Config, Scenario, Reason string
	Line                     int
	// OrderDependent: the reason begins with "order-dependent:", a gap that
	// depends on the order in which a server's concurrent messages arrive,
	// so a run where the scenario passes does not fail as "fixed".
	OrderDependent bool
}

// orderDependent begins the reason of a gap that shows on some runs only.
const orderDependent = "order-dependent:"

type knownGaps struct {
	path    string
	entries []*knownGap
}

func readKnownGaps(path string) (*knownGaps, error) {
	k := &knownGaps{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		entry, reason, _ := strings.Cut(line, "#")
		fields := strings.Fields(entry)
		reason = strings.TrimSpace(reason)
		if len(fields) != 2 || reason == "" {
			return nil, fmt.Errorf("%s line %d: want `<configuration> <scenario>  # reason`, got %q", path, i+1, line)
		}
		key := fields[0] + " " + fields[1]
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s line %d: %s is already listed on line %d", path, i+1, key, prev)
		}
		seen[key] = i + 1
		k.entries = append(k.entries, &knownGap{Config: fields[0], Scenario: fields[1], Reason: reason, Line: i + 1,
			OrderDependent: strings.HasPrefix(reason, orderDependent)})
	}
	return k, nil
}

func (k *knownGaps) forConfig(name string) map[string]*knownGap {
	out := map[string]*knownGap{}
	for _, g := range k.entries {
		if g.Config == name {
			out[g.Scenario] = g
		}
	}
	return out
}

// unknownConfigs reports lines naming no configuration the harness knows.
func (k *knownGaps) unknownConfigs(all []suiteConfig) []string {
	var out []string
	for _, g := range k.entries {
		found := false
		for _, c := range all {
			found = found || c.Name == g.Config
		}
		if !found {
			out = append(out, fmt.Sprintf("known-gaps.txt line %d: unknown configuration %q (known: %s)", g.Line, g.Config, configNames(all)))
		}
	}
	return out
}
