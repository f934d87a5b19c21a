package main

import (
	"strings"
	"testing"
)

// A short run (make bench-short, in make test) has too few calls to judge a
// goal: its table says so, rather than a column of "no" under a run that
// passed.
func TestShortRunJudgesNoGoal(t *testing.T) {
	missed := []*sessionResult{{target: targetGatewayIO, sessions: 100, perSessionRSS: 64 << 10}}
	for _, short := range []bool{false, true} {
		r := &report{opts: &options{short: short}, sessions: missed}
		var b strings.Builder
		r.writeGoals(&b)
		got := b.String()
		if !strings.Contains(got, "memory per open legacy session") {
			t.Fatalf("short=%v: the goals table lacks the sessions row:\n%s", short, got)
		}
		if short && (strings.Contains(got, "**no**") || !strings.Contains(got, "not judged (short run)")) {
			t.Errorf("a short run judged a goal:\n%s", got)
		}
		if !short && !strings.Contains(got, "**no**") {
			t.Errorf("a full run did not judge a missed goal:\n%s", got)
		}
	}
}
