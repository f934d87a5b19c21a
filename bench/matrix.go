package main

// The call matrix: every target at every concurrency and session layout, in
// rounds; within a round each cell runs every target back to back, the order
// rotating so none is always first.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// cell is one concurrency and session layout of the matrix; sessions is 0
// in the 2026-07-28 era, which has none.
type cell struct{ conc, sessions int }

func (c cell) String() string {
	if c.sessions == 0 {
		return fmt.Sprintf("%d concurrent, sessionless", c.conc)
	}
	if c.sessions == 1 {
		return fmt.Sprintf("%d concurrent, 1 session", c.conc)
	}
	return fmt.Sprintf("%d concurrent, %d sessions", c.conc, c.sessions)
}

// Target names.
const (
	targetDirect      = "direct"
	targetGatewayIO   = "gateway → stdio"
	targetGatewayHTTP = "gateway → HTTP"
	targetFloor       = "floor relay → stdio"
)

// measuredTarget is a target with its processes and results.
type measuredTarget struct {
	target
	label    string
	stop     func()
	sessions []*session
	runs     map[cell][]*runResult // by cell, one per round
	lastRSS  int64                 // of the measured process after its last run
	dead     bool
}

// eraResult is the matrix of one protocol era.
type eraResult struct {
	era     string
	cells   []cell
	targets []*measuredTarget // direct first
}

// multiSessions is the session count of the "many sessions" layout.
const multiSessions = 64

func (b *bench) calls() {
	eras := []string{eraLegacy}
	switch b.opts.era {
	case eraModern:
		eras = []string{eraModern}
	case "both":
		eras = []string{eraLegacy, eraModern}
	}
	for _, era := range eras {
		progress("\n== calls, protocol %s ==", era)
		targets := b.setupTargets(era)
		if len(targets) > 0 {
			b.report.eras = append(b.report.eras, b.runMatrix(era, targets))
		}
		for _, t := range targets {
			t.stop()
		}
	}
}

// setupTargets starts the direct server and the gateways for one
// era and checks each with one call. A target that cannot be measured is
// left out with a note (not served yet, switched off) or an error.
func (b *bench) setupTargets(era string) []*measuredTarget {
	var echoArgs []string
	if era == eraModern {
		echoArgs = append(echoArgs, "-stateless")
	}
	if b.opts.directJSON {
		echoArgs = append(echoArgs, "-json")
	}
	var targets []*measuredTarget

	direct, err := startEchoHTTP(b.echo, echoArgs...)
	if err != nil {
		b.fail("direct target: %v", err)
		return nil
	}
	label := "SDK echo server, streamable HTTP, stateful"
	if era == eraModern {
		label = "SDK echo server, streamable HTTP, stateless"
	}
	if b.opts.directJSON {
		label += ", JSON responses"
	} else {
		label += ", SSE responses (SDK default)"
	}
	targets = append(targets, &measuredTarget{
		target: target{name: targetDirect, ep: direct.ep, era: era, measured: direct.pid},
		label:  label, stop: direct.stop,
	})

	for _, gb := range b.builds() {
		if t := b.gatewayTarget(gb.bin, targetGatewayIO+gb.suffix, era, b.oneEcho(), "SDK echo server as a stdio child"+b.buildLabel(gb), nil); t != nil {
			targets = append(targets, t)
		}
	}

	for _, gb := range b.builds() {
		name := targetGatewayHTTP + gb.suffix
		if !b.opts.httpUpstream {
			b.note("%s (%s): switched off (-http-upstream=false)", name, era)
		} else if up, err := startEchoHTTP(b.echo, echoArgs...); err != nil {
			b.fail("%s: starting its echo server: %v", name, err)
		} else {
			config := fmt.Sprintf(`{"echo":{"url":"http://%s%s"}}`, up.ep.addr, up.ep.path)
			if t := b.gatewayTarget(gb.bin, name, era, config, "SDK echo server over streamable HTTP"+b.buildLabel(gb), up); t != nil {
				targets = append(targets, t)
			} else {
				up.stop()
			}
		}
	}

	// The floor: the least a relay from HTTP to the same stdio server does
	// (bench/floor), for the session era, whose requests it relays as they
	// are.
	if b.floor != "" && era == eraLegacy {
		if t := b.gatewayTarget(b.floor, targetFloor, era, b.oneEcho(), "the floor relay (bench/floor): net/http to the SDK echo server as a stdio child, nothing else", nil); t != nil {
			targets = append(targets, t)
		}
	}

	// Every target answers one call, and (legacy era) the SDK's own client
	// agrees with the benchmark's client, before anything is timed.
	var ok []*measuredTarget
	for _, t := range targets {
		if err := probe(t, era); err != nil {
			var rpcErr *rpcError
			if errors.As(err, &rpcErr) && rpcErr.Code == codeUnsupportedProtocolVersion && strings.HasPrefix(t.name, "gateway") {
				b.note("%s (%s): not served yet: the gateway answers %d (%s)", t.name, era, rpcErr.Code, rpcErr.Message)
			} else {
				b.fail("%s (%s): the first call failed: %v", t.name, era, err)
			}
			t.stop()
			continue
		}
		if era == eraLegacy {
			if err := sdkSanityCheck(t.ep); err != nil {
				b.fail("%s: the SDK's client disagrees: %v", t.name, err)
				t.stop()
				continue
			}
		}
		ok = append(ok, t)
	}
	if len(ok) > 0 && ok[0].name != targetDirect {
		b.fail("no direct target to compare with in the %s era", era)
	}
	return ok
}

// gatewayTarget starts `mcp-gateway serve` with config. A gateway that
// refuses the configuration (exit 2) is a note for the HTTP upstream, which
// is being added, and an error otherwise.
func (b *bench) gatewayTarget(bin, name, era, config, label string, upstream *echoServer) *measuredTarget {
	gw, err := b.startGatewayBin(bin, config, 1)
	var (
		refused *refusedError
		missing *missingToolsError
	)
	isHTTP := strings.HasPrefix(name, targetGatewayHTTP)
	switch {
	case errors.As(err, &refused) && refused.code == 2 && isHTTP:
		b.note("%s (%s): not measured: the gateway refuses url servers yet: %s", name, era, refusal(refused.tail))
		return nil
	case errors.As(err, &missing) && isHTTP:
		b.note("%s (%s): not measured: the gateway accepts the url server but does not serve it yet: %s", name, era, missing.reason())
		return nil
	case err != nil:
		b.fail("%s (%s): %v", name, era, err)
		return nil
	}
	t := &measuredTarget{target: *gw.target(name, era), label: label, stop: gw.stop}
	if upstream != nil {
		t.servers, t.childServers = []int{upstream.pid}, false
		t.stop = func() { gw.stop(); upstream.stop() }
	}
	return t
}

// buildLabel says which gateway a baseline target runs.
func (b *bench) buildLabel(gb gatewayBuild) string {
	if gb.suffix == "" {
		return ""
	}
	return "; the gateway of " + b.report.baseline
}

var logErr = regexp.MustCompile(`err="((?:[^"\\]|\\.)*)"`)

// refusal is the gateway's reason for exiting, from its last log line.
func refusal(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	last := lines[len(lines)-1]
	if m := logErr.FindStringSubmatch(last); m != nil {
		if s, err := strconv.Unquote(`"` + m[1] + `"`); err == nil {
			return s
		}
	}
	return last
}

// probe opens a session and makes one call.
func probe(t *measuredTarget, era string) error {
	c, err := dial(&t.ep, time.Now().Add(30*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := openSession(c, era)
	if err != nil {
		return err
	}
	var buf []byte
	if err := callEcho(c, s, 1, &buf); err != nil {
		return err
	}
	return s.close(c)
}

func (b *bench) runMatrix(era string, targets []*measuredTarget) *eraResult {
	layouts := []int{1, multiSessions}
	if era == eraModern {
		layouts = []int{0} // no sessions in this era
	}
	res := &eraResult{era: era, targets: targets}
	for _, conc := range b.opts.conc {
		for _, n := range layouts {
			res.cells = append(res.cells, cell{conc: conc, sessions: n})
		}
	}
	limit := 60 * time.Second
	for _, t := range targets {
		t.runs = map[cell][]*runResult{}
		var err error
		if t.sessions, err = openSessions(&t.target, max(layouts[len(layouts)-1], 1), time.Now().Add(limit)); err != nil {
			b.fail("%s (%s): opening sessions: %v", t.name, era, err)
			t.dead = true
			continue
		}
		// Warm up: connections, the server's pools, the gateway's first calls,
		// and every session (a remote upstream opens its own session for
		// each on its first call).
		if w := load(&t.target, t.sessions, 16, max(min(1000, b.opts.calls), len(t.sessions)), limit); w.errors > 0 {
			b.fail("%s (%s): warm-up: %d of %d calls failed; first: %v", t.name, era, w.errors, w.errors+w.calls, w.firstErr)
			t.dead = true
		}
	}

	for round := range b.opts.rounds {
		for ci, c := range res.cells {
			calls := b.opts.calls
			if c.conc == 1 {
				calls = max(calls/3, 1)
			}
			for k := range targets {
				t := targets[(k+round+ci)%len(targets)]
				if t.dead {
					continue
				}
				r := load(&t.target, t.sessions[:max(c.sessions, 1)], c.conc, calls, limit)
				t.runs[c] = append(t.runs[c], r)
				t.lastRSS = r.rss
				progress("round %d/%d  %-26s %-16s p50 %7s  %7.0f calls/s  errors %d%s",
					round+1, b.opts.rounds, c, t.name, ms(percentile(r.lat, 0.5)), r.perSecond(), r.errors, timedOut(r))
				if r.errors > 0 {
					b.fail("%s (%s), %s: %d of %d calls failed; first: %v", t.name, era, c, r.errors, r.errors+r.calls, r.firstErr)
				}
				if r.timedOut {
					b.fail("%s (%s), %s: the run hit its %s deadline after %d calls", t.name, era, c, limit, r.calls)
				}
				if r.stall > 0 {
					// Timing decides nothing, but a stall is worth a loud word.
					where := "(run with -pprof to get the gateway's goroutines during a stall)"
					if r.stallDump != "" {
						where = "; the gateway's goroutines during it are in " + r.stallDump
					}
					b.note("WARNING: %s (%s), %s: no call completed for %s %s", t.name, era, c, r.stall.Round(time.Millisecond), where)
				}
				if !alive(t.measured) {
					b.fail("%s (%s): its process (pid %d) died", t.name, era, t.measured)
					t.dead = true
				}
			}
		}
	}
	for _, t := range targets {
		if !t.dead {
			if err := closeSessions(&t.target, t.sessions, time.Now().Add(limit)); err != nil {
				b.fail("%s (%s): closing sessions: %v", t.name, era, err)
			}
		}
	}
	return res
}

func timedOut(r *runResult) string {
	if r.timedOut {
		return "  DEADLINE HIT"
	}
	return ""
}

// ms formats a duration in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
