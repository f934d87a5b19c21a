package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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

// The floor relay is measured beside the gateway and set against it in
// reference rows, never judged as a gateway against the goals.
func TestFloorIsAReferenceNotAGoal(t *testing.T) {
	run := func(p50 time.Duration, calls int, cpu time.Duration) []*runResult {
		return []*runResult{{calls: calls, elapsed: time.Second, lat: []time.Duration{p50}, measuredCPU: cpu * time.Duration(calls)}}
	}
	target := func(name string, p50 time.Duration, calls int, cpu time.Duration, rss int64) *measuredTarget {
		return &measuredTarget{target: target{name: name}, lastRSS: rss,
			runs: map[cell][]*runResult{{1, 1}: run(p50, 1000, cpu), {16, 1}: run(p50*8, calls, cpu)}}
	}
	e := &eraResult{era: eraLegacy, targets: []*measuredTarget{
		target(targetDirect, 300*time.Microsecond, 4000, 0, 14<<20),
		target(targetGatewayIO, 420*time.Microsecond, 5000, 90*time.Microsecond, 20<<20),
		target(targetFloor, 400*time.Microsecond, 5200, 85*time.Microsecond, 12<<20),
	}}
	r := &report{opts: &options{}, eras: []*eraResult{e}}
	var b strings.Builder
	r.writeGoals(&b)
	got := b.String()
	for _, want := range []string{
		"| gateway → stdio: p50 at 1 client against the floor relay's, the same rounds | 0.42 vs 0.40 ms (1.05×); the floor relay is 1.33× direct | (reference) |",
		"| gateway → stdio: RSS after load against the floor relay's | 20.0 MiB vs 12.0 MiB | (reference) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the goals table lacks\n%s\nin:\n%s", want, got)
		}
	}
	if strings.Contains(got, targetFloor+": calls/s at 16 concurrent ≥") {
		t.Errorf("the floor relay was judged against the goals:\n%s", got)
	}
}

// The OTLP receiver counts the spans of an export: each scope's, of each
// resource's.
func TestCountSpans(t *testing.T) {
	span := protowire.AppendTag(nil, 2, protowire.BytesType)
	span = protowire.AppendBytes(span, []byte{0x0a, 0x01, 0x00}) // a span with a 1-byte trace_id
	scope := protowire.AppendTag(nil, 1, protowire.BytesType)
	scope = protowire.AppendBytes(scope, nil) // the scope
	scope = append(append(scope, span...), span...)
	rs := protowire.AppendTag(nil, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, scope)
	rs = append(append(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendBytes(nil, nil)...), rs...) // resource, then the scope spans
	req := protowire.AppendTag(nil, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, rs)
	req = append(req, req...) // two resource spans
	if n, err := countSpans(req); err != nil || n != 4 {
		t.Errorf("countSpans = %d, %v; want 4", n, err)
	}
	if _, err := countSpans([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("a truncated export was counted without an error")
	}
}
