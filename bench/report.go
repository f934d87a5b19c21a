package main

// The report: every figure as Markdown tables, the machine, and the command.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

type report struct {
	opts      *options
	args      []string
	machine   machine
	commit    string
	baseline  string // the baseline gateway, when one is measured beside
	took      time.Duration
	eras      []*eraResult
	startup   []*startupResult
	lists     []*listResult
	sessions  []*sessionResult
	soaks     []*soakResult
	isolation *isolationResult
	telemetry *telemetryResult
	notes     []string
	failures  []string
}

// command is the command line of this run.
func (r *report) command() string {
	return strings.TrimSpace("go run ./bench " + strings.Join(r.args, " "))
}

func (r *report) markdown() string {
	var b strings.Builder
	m := r.machine
	fmt.Fprintf(&b, "## Figures of %s\n\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "Measured with `%s` (`make bench` is `go run ./bench -era both`, `make bench-short` adds `-short`); "+
		"the measures took %s after the build.\n\n", r.command(), r.took.Round(time.Second))
	fmt.Fprintf(&b, "| machine | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPUs (nproc) | %d |\n| model | %s |\n| memory | %s |\n| kernel | Linux %s |\n| Go | %s |\n| gateway | %s |\n",
		m.cpus, m.model, m.memory, m.kernel, m.goVersion, r.commit)
	if r.baseline != "" {
		fmt.Fprintf(&b, "| baseline gateway | %s |\n", r.baseline)
	}
	b.WriteString("\n")
	b.WriteString("The load client, the gateway and the servers share these cores. Timings are figures to compare " +
		"side by side within one run, never pass/fail.\n\n")
	if r.opts.short {
		b.WriteString("**Short mode**: one round and few calls; the figures only show the benchmark still runs, " +
			"and no goal is judged (`make bench` judges them).\n\n")
	}

	r.writeGoals(&b)
	for _, e := range r.eras {
		r.writeCalls(&b, e)
	}
	r.writeIsolation(&b)
	r.writeStartup(&b)
	r.writeLists(&b)
	r.writeSessions(&b)
	r.writeSoak(&b)
	r.writeTelemetry(&b)
	if len(r.notes) > 0 {
		b.WriteString("### Notes\n\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	if len(r.failures) > 0 {
		b.WriteString("### ERRORS: these figures are not valid\n\n")
		for _, f := range r.failures {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(f, "\n", "\n  "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// stats are the medians over rounds of one target in one cell.
type stats struct {
	p50, p90, p99          time.Duration
	max                    time.Duration // the slowest call of every round
	perSecond              float64
	measured, server, self time.Duration // CPU per call
	rss                    int64         // after the last round
	errors                 int
	rounds                 int
	ratePerDirect          float64 // median over rounds of calls/s ÷ direct's in the same round
	p50PerDirect           float64
}

func cellStats(runs, direct []*runResult) stats {
	var s stats
	if len(runs) == 0 {
		return s
	}
	pick := func(f func(*runResult) time.Duration) time.Duration {
		ds := make([]time.Duration, len(runs))
		for i, r := range runs {
			ds[i] = f(r)
		}
		return median(ds)
	}
	s.p50 = pick(func(r *runResult) time.Duration { return percentile(r.lat, 0.50) })
	s.p90 = pick(func(r *runResult) time.Duration { return percentile(r.lat, 0.90) })
	s.p99 = pick(func(r *runResult) time.Duration { return percentile(r.lat, 0.99) })
	for _, r := range runs {
		if len(r.lat) > 0 {
			s.max = max(s.max, r.lat[len(r.lat)-1])
		}
	}
	s.measured = pick(func(r *runResult) time.Duration { return r.cpuPerCall(r.measuredCPU) })
	s.server = pick(func(r *runResult) time.Duration { return r.cpuPerCall(r.serverCPU) })
	s.self = pick(func(r *runResult) time.Duration { return r.cpuPerCall(r.clientCPU) })
	rates := make([]float64, len(runs))
	var rateRatios, p50Ratios []float64
	for i, r := range runs {
		rates[i] = r.perSecond()
		s.errors += r.errors
		if i < len(direct) && direct[i].perSecond() > 0 && len(direct[i].lat) > 0 {
			rateRatios = append(rateRatios, r.perSecond()/direct[i].perSecond())
			p50Ratios = append(p50Ratios, float64(percentile(r.lat, 0.5))/float64(percentile(direct[i].lat, 0.5)))
		}
	}
	s.perSecond = medianFloat(rates)
	s.ratePerDirect = medianFloat(rateRatios)
	s.p50PerDirect = medianFloat(p50Ratios)
	s.rss = runs[len(runs)-1].rss
	s.rounds = len(runs)
	return s
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r *report) writeCalls(b *strings.Builder, e *eraResult) {
	fmt.Fprintf(b, "### Calls, protocol %s: the echo tool, medians of %d round(s)\n\n", e.era, r.opts.rounds)
	b.WriteString("Targets:\n\n")
	for _, t := range e.targets {
		fmt.Fprintf(b, "- **%s**: %s\n", t.name, t.label)
	}
	b.WriteString("\nLatency is one tools/call as the client sees it (request written to response parsed); p50/p90/p99 are medians over rounds, max the slowest call of all rounds. " +
		"CPU per call is the time its threads ran (/proc/<pid>/task/*/schedstat) over the run ÷ calls: *gateway* of the gateway process, " +
		"*server* of the echo server (for direct, the server is the whole target), *client* of this benchmark. " +
		"RSS is VmRSS after the last round: the gateway's, or the echo server's for direct. " +
		"Ratios are the median over rounds of each round's ratio to direct in the same cell.")
	b.WriteString("\n\n")
	b.WriteString("| concurrency | sessions | target | p50 ms | p90 ms | p99 ms | max ms | calls/s | calls/s ÷ direct | p50 ÷ direct | gateway µs/call | server µs/call | client µs/call | RSS MiB | errors |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	direct := e.targets[0]
	for _, c := range e.cells {
		for _, t := range e.targets {
			runs := t.runs[c]
			if len(runs) == 0 {
				continue
			}
			s := cellStats(runs, direct.runs[c])
			gwCPU, ratio, p50Ratio := "—", "1", "1"
			if t.name != targetDirect {
				gwCPU = us(s.measured)
				ratio, p50Ratio = fmt.Sprintf("%.2f", s.ratePerDirect), fmt.Sprintf("%.2f", s.p50PerDirect)
			}
			server := s.server
			if t.name == targetDirect {
				server = s.measured
			}
			errs := fmt.Sprint(s.errors)
			if s.errors > 0 {
				errs = fmt.Sprintf("**%d**", s.errors)
			}
			sessions := fmt.Sprint(c.sessions)
			if c.sessions == 0 {
				sessions = "none"
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f | %s |\n",
				c.conc, sessions, t.name, msf(s.p50), msf(s.p90), msf(s.p99), msf(s.max), s.perSecond, ratio, p50Ratio,
				gwCPU, us(server), us(s.self), float64(s.rss)/(1<<20), errs)
		}
	}
	b.WriteString("\n")
	r.writeAgainstBaseline(b, e)
}

// writeAgainstBaseline compares each gateway target with its baseline, cell
// by cell: the median over rounds of each round's ratio, both measured in
// the same round.
func (r *report) writeAgainstBaseline(b *strings.Builder, e *eraResult) {
	byName := map[string]*measuredTarget{}
	for _, t := range e.targets {
		byName[t.name] = t
	}
	type row struct {
		c       cell
		name    string
		now, bl stats
		cpu     float64 // gateway CPU per call ÷ the baseline's
		p50     float64
		rate    float64
	}
	var rows []row
	for _, c := range e.cells {
		for _, t := range e.targets {
			base := byName[t.name+baselineSuffix]
			if base == nil || len(t.runs[c]) == 0 || len(base.runs[c]) == 0 {
				continue
			}
			var cpu, p50, rate []float64
			for i, run := range t.runs[c] {
				if i >= len(base.runs[c]) {
					break
				}
				br := base.runs[c][i]
				if bc := br.cpuPerCall(br.measuredCPU); bc > 0 {
					cpu = append(cpu, float64(run.cpuPerCall(run.measuredCPU))/float64(bc))
				}
				if bp := percentile(br.lat, 0.5); bp > 0 {
					p50 = append(p50, float64(percentile(run.lat, 0.5))/float64(bp))
				}
				if br.perSecond() > 0 {
					rate = append(rate, run.perSecond()/br.perSecond())
				}
			}
			rows = append(rows, row{c: c, name: t.name, now: cellStats(t.runs[c], nil), bl: cellStats(base.runs[c], nil),
				cpu: medianFloat(cpu), p50: medianFloat(p50), rate: medianFloat(rate)})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "#### Against the baseline (%s), protocol %s\n\n", r.baseline, e.era)
	b.WriteString("Each ratio is the median over rounds of this gateway's figure ÷ the baseline's in the same round.\n\n")
	b.WriteString("| concurrency | sessions | target | gateway µs/call | baseline µs/call | CPU ÷ baseline | p50 ms | baseline p50 ms | p50 ÷ baseline | calls/s ÷ baseline |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range rows {
		sessions := fmt.Sprint(x.c.sessions)
		if x.c.sessions == 0 {
			sessions = "none"
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.2f | %s | %s | %.2f | %.2f |\n", x.c.conc, sessions, x.name,
			us(x.now.measured), us(x.bl.measured), x.cpu, msf(x.now.p50), msf(x.bl.p50), x.p50, x.rate)
	}
	b.WriteString("\n")
}

// verdict says whether a goal is met, or, in a short run, whose few calls
// judge nothing, that it is not judged.
func (r *report) verdict(ok bool, met, notMet string) string {
	if r.opts.short {
		return "not judged (short run)"
	}
	if ok {
		return met
	}
	return notMet
}

// goalRow is a row of the Against the goals table.
type goalRow struct{ goal, measured, met string }

// floorRows set the gateway beside the floor relay (bench/floor), in the
// same rounds: references, not goals.
func floorRows(t, floor, direct *measuredTarget) []goalRow {
	var rows []goalRow
	add := func(goal, measured string) {
		rows = append(rows, goalRow{goal, measured, "(reference)"})
	}
	if len(t.runs[cell{1, 1}]) > 0 && len(floor.runs[cell{1, 1}]) > 0 {
		s, f := cellStats(t.runs[cell{1, 1}], floor.runs[cell{1, 1}]), cellStats(floor.runs[cell{1, 1}], direct.runs[cell{1, 1}])
		add(t.name+": p50 at 1 client against the floor relay's, the same rounds",
			fmt.Sprintf("%s vs %s ms (%.2f×); the floor relay is %.2f× direct", msf(s.p50), msf(f.p50), s.p50PerDirect, f.p50PerDirect))
	}
	if len(t.runs[cell{16, 1}]) > 0 && len(floor.runs[cell{16, 1}]) > 0 {
		s, f := cellStats(t.runs[cell{16, 1}], floor.runs[cell{16, 1}]), cellStats(floor.runs[cell{16, 1}], direct.runs[cell{16, 1}])
		ratio := 0.0
		if f.measured > 0 {
			ratio = float64(s.measured) / float64(f.measured)
		}
		add(t.name+": calls/s and CPU per call at 16 concurrent against the floor relay's",
			fmt.Sprintf("%.0f vs %.0f calls/s (%.2f×), %s vs %s µs (%.2f×); the floor relay is %.2f× direct's calls/s", s.perSecond, f.perSecond, s.ratePerDirect, us(s.measured), us(f.measured), ratio, f.ratePerDirect))
	}
	if t.lastRSS > 0 && floor.lastRSS > 0 {
		add(t.name+": RSS after load against the floor relay's", fmt.Sprintf("%s vs %s", mib(t.lastRSS), mib(floor.lastRSS)))
	}
	return rows
}

// writeGoals compares the figures with the goals of the benchmark issue.
func (r *report) writeGoals(b *strings.Builder) {
	type row = goalRow
	var rows []row
	yes := func(ok bool) string { return r.verdict(ok, "yes", "**no**") }
	for _, e := range r.eras {
		// One session in the session era; none in 2026-07-28's.
		sessions, era := 1, ""
		if e.era != eraLegacy {
			sessions, era = 0, " ("+e.era+")"
		}
		direct := e.targets[0]
		var floor *measuredTarget
		for _, t := range e.targets {
			if t.name == targetFloor {
				floor = t
			}
		}
		for _, t := range e.targets[1:] {
			if strings.HasSuffix(t.name, baselineSuffix) || t.name == targetFloor {
				continue
			}
			if s, ok := r.lookup(t, direct, cell{16, sessions}); ok {
				d := cellStats(direct.runs[cell{16, sessions}], nil)
				cpuRatio := 0.0
				if d.measured > 0 {
					cpuRatio = float64(s.measured) / float64(d.measured)
				}
				rows = append(rows,
					row{fmt.Sprintf("%s%s: calls/s at 16 concurrent ≥ 1.25× direct's", t.name, era),
						fmt.Sprintf("%.0f vs %.0f calls/s (%.2f×)", s.perSecond, d.perSecond, s.ratePerDirect),
						yes(s.ratePerDirect >= 1.25)},
					row{fmt.Sprintf("%s%s: gateway CPU per call at 16 concurrent ≤ 0.25× the direct server's", t.name, era),
						fmt.Sprintf("%s vs %s µs (%.2f×)", us(s.measured), us(d.measured), cpuRatio), yes(d.measured > 0 && cpuRatio <= 0.25)})
			}
			if s, ok := r.lookup(t, direct, cell{1, sessions}); ok {
				d := cellStats(direct.runs[cell{1, sessions}], nil)
				rows = append(rows, row{fmt.Sprintf("%s%s: p50 at 1 client ≤ 1.15× direct", t.name, era),
					fmt.Sprintf("%s vs %s ms (%.2f×)", msf(s.p50), msf(d.p50), s.p50PerDirect), yes(s.p50PerDirect <= 1.15)})
			}
			if t.name == targetGatewayIO && e.era == eraLegacy {
				if t.lastRSS > 0 {
					rows = append(rows, row{"RSS after load ≤ 15 MiB with one server (default flags: metrics on, tracing off)", mib(t.lastRSS), yes(t.lastRSS <= 15<<20)})
				}
				if floor != nil {
					rows = append(rows, floorRows(t, floor, direct)...)
				}
			}
		}
	}
	if x := r.isolation; x != nil {
		// The goal is judged against the same burst read by its client (the
		// floor the shared server and cores set); the ratio to no burst at
		// all is in the isolation table.
		m, ok := x.floorGoal()
		rows = append(rows, row{x.target + ": isolation: p99 with a client that never reads ≤ 1.5× with one that reads the same burst, 0 errors", m, yes(ok)})
	}
	for _, s := range r.sessions {
		if s.target != targetDirect && !strings.HasSuffix(s.target, baselineSuffix) {
			m := fmt.Sprintf("%.1f KiB (RSS delta over %d sessions)", s.perSessionRSS/1024, s.sessions)
			ok := s.perSessionRSS <= 20<<10
			if s.perSessionHeap > 0 {
				m += fmt.Sprintf("; live heap %.1f KiB", s.perSessionHeap/1024)
			}
			rows = append(rows, row{s.target + ": memory per open legacy session ≤ 20 KiB", m, yes(ok)})
		}
	}
	for _, s := range r.soaks {
		m := fmt.Sprintf("RSS %s → %s, threads %d → %d, fds %d → %d", mib(s.baseline.rss), mib(s.after.rss),
			s.baseline.threads, s.after.threads, s.fdsBaseline, s.fdsAfter)
		if s.gorBaseline >= 0 {
			m += fmt.Sprintf(", goroutines %d → %d", s.gorBaseline, s.gorAfter)
		}
		if s.heapBaseline >= 0 {
			m += fmt.Sprintf(", live heap %s → %s", mib(s.heapBaseline), mib(s.heapAfter))
		}
		rows = append(rows, row{fmt.Sprintf("%s: back to baseline after %d calls and %d sessions", s.target, s.calls, s.sessions), m, yes(s.back)},
			row{fmt.Sprintf("%s: no call lost in the soak (unanswered after %s)", s.target, lostAfter), fmt.Sprintf("%d lost, %d errors", s.lost, s.errors), yes(s.lost == 0 && s.errors == 0)})
	}
	if t := r.telemetry; t != nil {
		if m, ok := t.metricsCost(); m != "" {
			rows = append(rows, row{"telemetry: gateway CPU per call with metrics on ≤ 1.05× off", m, yes(ok)})
		}
		if m, ok := t.tracedCost(); m != "" {
			rows = append(rows, row{fmt.Sprintf("telemetry: added CPU per traced call ≤ %.1f× the OpenTelemetry SDK's own for the same two spans", tracedGoal), m, yes(ok)})
		}
	}
	for _, s := range r.startup {
		limit := map[int]time.Duration{1: 15 * time.Millisecond, 8: 30 * time.Millisecond}[s.servers]
		if limit == 0 {
			continue
		}
		d := medianOf(s.launches, func(l launchResult) time.Duration { return l.launch })
		rows = append(rows, row{fmt.Sprintf("launch to ready with %d server(s) ≤ %s", s.servers, limit), msf(d) + " ms", yes(d <= limit)})
	}
	for _, l := range r.lists {
		if strings.HasPrefix(l.what, "gateway") && r.opts.listServers == 64 && r.opts.listTools == 100 {
			p := percentile(l.full, 0.5)
			rows = append(rows, row{"tools/list over 64 servers × 100 tools ≤ 2 ms", msf(p) + " ms (p50, all pages)", yes(p <= 2*time.Millisecond)})
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("### Against the goals\n\n| goal | measured | met |\n|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", x.goal, x.measured, x.met)
	}
	b.WriteString("\n")
}

func (r *report) lookup(t, direct *measuredTarget, c cell) (stats, bool) {
	if len(t.runs[c]) == 0 || len(direct.runs[c]) == 0 {
		return stats{}, false
	}
	return cellStats(t.runs[c], direct.runs[c]), true
}

func (r *report) writeStartup(b *strings.Builder) {
	if len(r.startup) == 0 {
		return
	}
	fmt.Fprintf(b, "### Start-up: `mcp-gateway --config ...` from exec to its exit 0 with the ready line, median of %d (min–max)\n\n", r.opts.startupReps)
	b.WriteString("Each server is the echo server as a stdio child. *Gateway total*, *slowest server* and *own share* come from the " +
		"serving process's debug line `start-up time` (its start to serving; the slowest server's start and tools/list; the difference).\n\n")
	b.WriteString("*Launcher and process start* is the rest: launch → ready less the gateway total (the launcher's own start and checks, " +
		"starting the serving process, its runtime and handoff, the readiness report).\n\n")
	b.WriteString("| servers | launch → ready ms | gateway total ms | slowest server ms | gateway's own share ms | launcher and process start ms |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.startup {
		span := func(f func(launchResult) time.Duration) string {
			ds := make([]time.Duration, len(s.launches))
			for i, l := range s.launches {
				ds[i] = f(l)
			}
			if len(ds) == 1 {
				return msf(ds[0])
			}
			return fmt.Sprintf("%s (%s–%s)", msf(median(ds)), msf(slices.Min(ds)), msf(slices.Max(ds)))
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", s.servers,
			span(func(l launchResult) time.Duration { return l.launch }),
			span(func(l launchResult) time.Duration { return l.total }),
			span(func(l launchResult) time.Duration { return l.slowest }),
			span(func(l launchResult) time.Duration { return l.share }),
			span(func(l launchResult) time.Duration { return l.launch - l.total }))
	}
	b.WriteString("\n")
}

func (r *report) writeLists(b *strings.Builder) {
	if len(r.lists) == 0 {
		return
	}
	fmt.Fprintf(b, "### tools/list: every page, one client, %d reads\n\n", r.opts.listIters)
	b.WriteString("Timed from the first request written to the last page received; decoding the pages (the client's work) is not timed. " +
		"CPU is that of the process answering (the gateway, or the SDK server), the time its threads ran over the reads ÷ reads.\n\n")
	b.WriteString("| what | tools | pages | p50 ms | p90 ms | p99 ms | CPU per full read ms | RSS MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.lists {
		fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %s | %s | %.1f |\n", l.what, l.tools, l.pages,
			msf(percentile(l.full, 0.5)), msf(percentile(l.full, 0.9)), msf(percentile(l.full, 0.99)), msf(l.cpu), float64(l.rss)/(1<<20))
	}
	for _, l := range r.lists {
		if l.startup > 0 {
			fmt.Fprintf(b, "\nThe gateway with %s was ready (serve, /health answering) %s after exec.\n", strings.TrimPrefix(l.what, "gateway, "), msf(l.startup)+" ms")
		}
	}
	b.WriteString("\n")
}

func (r *report) writeSessions(b *strings.Builder) {
	if len(r.sessions) == 0 {
		return
	}
	b.WriteString("### Sessions held open at once (protocol 2025-11-25)\n\n")
	b.WriteString("A fresh process each, warmed up with 800 calls; then the sessions are opened over 8 connections, " +
		"one echo call on each, and closed with DELETE. Per session: the RSS delta ÷ sessions.")
	known := slices.ContainsFunc(r.sessions, func(s *sessionResult) bool { return s.heapOpen >= 0 })
	if known {
		b.WriteString(" Live heap: HeapInuse after a forced GC, from the -pprof build's /debug/pprof.")
	}
	b.WriteString("\n\n| target | sessions | RSS before MiB | RSS open MiB | per session KiB | RSS after close MiB | threads before / open / closed |")
	if known {
		b.WriteString(" live heap before / open / closed MiB | live heap per session KiB | goroutines before / open / closed |")
	}
	b.WriteString("\n|---|---:|---:|---:|---:|---:|---:|")
	if known {
		b.WriteString("---:|---:|---:|")
	}
	b.WriteString("\n")
	for _, s := range r.sessions {
		fmt.Fprintf(b, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %d / %d / %d |", s.target, s.sessions,
			float64(s.before.rss)/(1<<20), float64(s.open.rss)/(1<<20), s.perSessionRSS/1024, float64(s.closed.rss)/(1<<20),
			s.before.threads, s.open.threads, s.closed.threads)
		if known {
			if s.heapOpen >= 0 {
				fmt.Fprintf(b, " %.2f / %.2f / %.2f | %.1f | %d / %d / %d |",
					float64(s.heapBefore)/(1<<20), float64(s.heapOpen)/(1<<20), float64(s.heapClosed)/(1<<20),
					s.perSessionHeap/1024, s.goroutinesBefore, s.goroutinesOpen, s.goroutinesClosed)
			} else {
				b.WriteString(" — | — | — |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (r *report) writeSoak(b *strings.Builder) {
	for _, s := range r.soaks {
		writeSoak(b, s)
	}
}

func writeSoak(b *strings.Builder, s *soakResult) {
	fmt.Fprintf(b, "### Soak, %s: %d calls at %d concurrent, %d sessions opened and closed\n\n", s.target, s.calls, s.conc, s.sessions)
	fmt.Fprintf(b, "Ten segments, each over its own new sessions and connections, closed after it; %s in all, %d errors, %d calls lost (each call is given %s: one unanswered by then, hung, is lost). "+
		"The baseline is taken after a warm-up at the same concurrency (Go keeps the threads it creates). "+
		"Afterwards a trickle of calls (100 every 250 ms) lets GCs run until the figures are back or 10 s pass: %s. "+
		"Back means: RSS and live heap within 10%% + 1 MiB of the baseline; open files and goroutines no more than the baseline's "+
		"plus %d and %d, the idle connections (and, where net/http keeps them, two goroutines each) an HTTP client may keep from a peak of %d calls in flight; "+
		"a leak grows with the sessions and calls.\n\n",
		s.took.Round(time.Millisecond), s.errors, s.lost, lostAfter, map[bool]string{true: fmt.Sprintf("back after %s", s.settled.Round(time.Millisecond)), false: "**not back**"}[s.back],
		s.conc, 2*s.conc, s.conc)
	if s.gorBaseline < 0 {
		b.WriteString("The gateway exposes no goroutine count: open files (/proc/<pid>/fd: a leaked connection or pipe shows there) " +
			"and RSS stand in for it; threads (/proc/<pid>/status) are shown but not judged, since Go keeps every thread it once needed " +
			"and a leaked goroutine takes none. A -pprof build adds goroutines and the live heap.\n\n")
	}
	b.WriteString("| | baseline | peak | after |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| RSS MiB | %.1f | %.1f | %.1f |\n", float64(s.baseline.rss)/(1<<20), float64(s.peak.rss)/(1<<20), float64(s.after.rss)/(1<<20))
	fmt.Fprintf(b, "| threads | %d | %d | %d |\n", s.baseline.threads, s.peak.threads, s.after.threads)
	fmt.Fprintf(b, "| open files | %d | | %d |\n", s.fdsBaseline, s.fdsAfter)
	if s.gorBaseline >= 0 {
		fmt.Fprintf(b, "| goroutines | %d | | %d |\n", s.gorBaseline, s.gorAfter)
	}
	if s.heapBaseline >= 0 {
		fmt.Fprintf(b, "| live heap MiB (after GC) | %.2f | | %.2f |\n", float64(s.heapBaseline)/(1<<20), float64(s.heapAfter)/(1<<20))
	}
	b.WriteString("\n")
}

func msf(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string  { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

func sortDurations(ds []time.Duration) { slices.Sort(ds) }
