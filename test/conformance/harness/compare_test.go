package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func checks(statuses ...string) []check {
	var out []check
	for i, s := range statuses {
		out = append(out, check{ID: "c" + string(rune('a'+i)), Status: s, ErrorMessage: "msg " + s})
	}
	return out
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		statuses []string
		want     outcome
	}{
		{[]string{"SUCCESS", "SUCCESS"}, outPass},
		{[]string{"SUCCESS", "INFO", "SKIPPED"}, outPass},
		{[]string{"SUCCESS", "WARNING"}, outWarn},
		{[]string{"INFO", "WARNING"}, outWarn},
		{[]string{"SUCCESS", "WARNING", "FAILURE"}, outFail},
		{[]string{"INFO"}, outNA},
		{nil, outNA},
	} {
		if got := classify(checks(tc.statuses...)).Outcome; got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.statuses, got, tc.want)
		}
	}
}

func TestRegressed(t *testing.T) {
	pass := classify(checks("SUCCESS"))
	warn := classify(checks("SUCCESS", "WARNING"))
	fail := classify(checks("FAILURE"))
	na := classify(checks("INFO"))
	for _, tc := range []struct {
		name            string
		direct, gateway *result
		want            bool
	}{
		{"pass/pass", pass, pass, false},
		{"pass/fail", pass, fail, true},
		{"pass/missing", pass, nil, true},
		{"pass/warn", pass, warn, true},
		{"pass/n-a", pass, na, false},
		{"warn/warn", warn, warn, false},
		{"warn/pass", warn, pass, false},
		{"warn/n-a", warn, na, false},
		{"warn/fail", warn, fail, true},
		{"n-a/warn", na, warn, true},
		{"n-a/fail", na, fail, true},
		{"fail/fail", fail, fail, false},
		{"fail/pass", fail, pass, false},
		{"missing/fail", nil, fail, false},
	} {
		if got := regressed(tc.direct, tc.gateway); got != tc.want {
			t.Errorf("%s: regressed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCompareResults(t *testing.T) {
	pass := classify(checks("SUCCESS"))
	fail := classify(checks("SUCCESS", "FAILURE"))
	direct := map[string]*result{"ok": pass, "gap": pass, "new": pass, "fixed": pass, "stale": fail, "broken": fail}
	gateway := map[string]*result{"ok": pass, "gap": fail, "new": fail, "fixed": pass, "stale": fail, "broken": fail}
	gaps := map[string]*knownGap{
		"gap":   {Scenario: "gap", Reason: "not yet", Line: 1},
		"fixed": {Scenario: "fixed", Reason: "was broken", Line: 2},
		"stale": {Scenario: "stale", Reason: "wrong", Line: 3},
		"gone":  {Scenario: "gone", Reason: "renamed", Line: 4},
	}
	cr := compareResults(suiteConfig{Name: "x"}, direct, gateway, gaps, map[string]string{"broken": "extension"})
	want := map[string]verdict{"ok": vOK, "gap": vKnownGap, "new": vRegression, "fixed": vFixed, "stale": vStaleGap, "broken": vFailsDirectly}
	if len(cr.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(cr.Rows), len(want))
	}
	for _, r := range cr.Rows {
		if r.Verdict != want[r.Scenario] {
			t.Errorf("%s: verdict %v, want %v", r.Scenario, r.Verdict, want[r.Scenario])
		}
	}
	if len(cr.Problems) != 1 || !strings.Contains(cr.Problems[0], "line 4: gone did not run") {
		t.Errorf("problems = %q, want one about the gap that did not run", cr.Problems)
	}
	if cr.ok() {
		t.Error("ok() with a regression, a fixed gap and a stale gap")
	}
	s := cr.summary()
	if s.total != 6 || s.holdDirect != 4 || s.holdBoth != 2 || s.known != 1 || s.regressions != 1 || s.fixed != 1 || s.stale != 1 || s.failDirect != 2 {
		t.Errorf("summary = %+v", s)
	}

	md := (&report{Configs: []*configResult{cr}}).markdown()
	for _, wantLine := range []string{
		"| gap | pass (1/1) | **fail** (1/2) | known gap: not yet |",
		"| new | pass (1/1) | **fail** (1/2) | REGRESSION: cb: msg FAILURE |",
		"| fixed | pass (1/1) | pass (1/1) | fixed — remove it from known-gaps.txt |",
		"| broken | **fail** (1/2) | **fail** (1/2) | fails directly: cb: msg FAILURE; not scored by the suite (extension) |",
	} {
		if !strings.Contains(md, wantLine) {
			t.Errorf("report lacks %q:\n%s", wantLine, md)
		}
	}

	// Only known gaps left: the configuration is ok.
	delete(direct, "new")
	delete(direct, "fixed")
	delete(direct, "stale")
	delete(gaps, "fixed")
	delete(gaps, "stale")
	delete(gaps, "gone")
	if cr := compareResults(suiteConfig{Name: "x"}, direct, gateway, gaps, nil); !cr.ok() {
		t.Errorf("not ok with known gaps only: %+v", cr)
	}
}

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(dir, name, "checks.json"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("server-tools-list-2026-11-29T11-02-11-983Z", `[{"id":"tools-list","status":"SUCCESS"}]`)
	write("server-server-initialize-2026-11-29T11-02-11-853Z", `[{"id":"server-initialize","status":"FAILURE","errorMessage":"boom"}]`)
	write("server-tasks-lifecycle-2026-11-29T11-02-12-000Z", "") // skipped by the suite
	got, err := readResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["tools-list"].Outcome != outPass || got["server-initialize"].Outcome != outFail || got["tasks-lifecycle"].Outcome != outNA {
		t.Errorf("readResults = %+v", got)
	}
	if msg := issue(got["server-initialize"]); msg != "server-initialize: boom" {
		t.Errorf("issue = %q", msg)
	}

	write("server-tools-list-2026-11-29T12-00-00-000Z", `[]`)
	if _, err := readResults(dir); err == nil || !strings.Contains(err.Error(), "two result directories") {
		t.Errorf("duplicate scenario: err = %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "server-tools-list-2026-11-29T12-00-00-000Z")); err != nil {
		t.Fatal(err)
	}
	write("something-else", `[]`)
	if _, err := readResults(dir); err == nil || !strings.Contains(err.Error(), "unexpected result directory") {
		t.Errorf("unknown directory: err = %v", err)
	}
}

// An order-dependent gap is a known gap whether the scenario fails through
// the gateway on this run or passes; it still needs the direct run to hold.
func TestOrderDependentGap(t *testing.T) {
	pass := classify(checks("SUCCESS"))
	fail := classify(checks("SUCCESS", "FAILURE"))
	gap := &knownGap{Scenario: "racy", Reason: "order-dependent: the server's requests race", Line: 1, OrderDependent: true}
	for _, c := range []struct {
		name            string
		direct, gateway *result
		want            verdict
	}{
		{"failing this run", pass, fail, vKnownGap},
		{"passing this run", pass, pass, vKnownGap},
		{"failing directly too", fail, fail, vStaleGap},
	} {
		cr := compareResults(suiteConfig{Name: "x"}, map[string]*result{"racy": c.direct}, map[string]*result{"racy": c.gateway}, map[string]*knownGap{"racy": gap}, nil)
		if len(cr.Rows) != 1 || cr.Rows[0].Verdict != c.want {
			t.Errorf("%s: rows %+v, want verdict %v", c.name, cr.Rows, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "known-gaps.txt")
	if err := os.WriteFile(path, []byte("alpha-2026-07-28 racy  # order-dependent: a race\nalpha-2026-07-28 steady  # not order-dependent: always\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := readKnownGaps(path)
	if err != nil {
		t.Fatal(err)
	}
	if g := k.forConfig("alpha-2026-07-28"); !g["racy"].OrderDependent || g["steady"].OrderDependent {
		t.Errorf("OrderDependent: racy %v, steady %v; want true, false", g["racy"].OrderDependent, g["steady"].OrderDependent)
	}
}

func TestReadKnownGaps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "known-gaps.txt")
	read := func(body string) (*knownGaps, error) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return readKnownGaps(path)
	}
	k, err := read("# header\n\nalpha-2026-07-28 tools-list  # no 2026 era yet\nstable-all ping # why\n")
	if err != nil {
		t.Fatal(err)
	}
	g := k.forConfig("alpha-2026-07-28")["tools-list"]
	if g == nil || g.Reason != "no 2026 era yet" || g.Line != 3 {
		t.Errorf("entry = %+v", g)
	}
	if probs := k.unknownConfigs(allConfigs); len(probs) != 0 {
		t.Errorf("unknownConfigs = %q", probs)
	}
	for body, want := range map[string]string{
		"stable-all ping\n":                        "want `<configuration> <scenario>  # reason`",
		"stable-all ping extra # r\n":              "want `<configuration> <scenario>  # reason`",
		"stable-all ping # r\nstable-all ping # s": "already listed on line 1",
	} {
		if _, err := read(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
	k, err = read("stable ping # typo in the configuration\n")
	if err != nil {
		t.Fatal(err)
	}
	if probs := k.unknownConfigs(allConfigs); len(probs) != 1 || !strings.Contains(probs[0], `unknown configuration "stable"`) {
		t.Errorf("unknownConfigs = %q", probs)
	}
	if k, err := readKnownGaps(filepath.Join(dir, "absent")); err != nil || len(k.entries) != 0 {
		t.Errorf("missing file: %v %v", k, err)
	}
}

func TestReadNotScored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "direct.log")
	log := "=== SUMMARY ===\n✓ tools-list: 3 passed, 0 failed\n\nTotal: 1 passed, 0 failed\n\n" +
		"Not scored for 2026-07-28: 2 scenario(s) run, 1 failing. These do not affect conformance.\n" +
		"  ✗ tasks-lifecycle (extension)\n  ✓ json-schema-2020-12 (pending)\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readNotScored(path)
	if len(got) != 2 || got["tasks-lifecycle"] != "extension" || got["json-schema-2020-12"] != "pending" {
		t.Errorf("readNotScored = %v", got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b/everything-server": "/a/b/everything-server",
		"":                       "''",
		"/a b/it's":              `'/a b/it'\''s'`,
		`{"a":1}`:                `'{"a":1}'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// The client scenarios' layout: <scenario>-<time>, and auth/<scenario>-<time>.
func TestReadClientResults(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, checks string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "checks.json"), []byte(checks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tools_call-2026-12-01T14-28-45-821Z", `[{"id":"a","status":"SUCCESS"}]`)
	write("auth/client-credentials-jwt-2026-12-01T14-28-45-822Z", `[{"id":"b","status":"FAILURE"}]`)
	got, err := readClientResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["tools_call"].Outcome != outPass || got["auth/client-credentials-jwt"].Outcome != outFail {
		t.Fatalf("read %v", got)
	}
}
