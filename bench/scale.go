package main

// Scale: tools/list over many servers, many open sessions, and a soak.

import (
	"bufio"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// listResult is the tools/list measure of one endpoint.
type listResult struct {
	what    string
	tools   int
	pages   int
	full    []time.Duration // one full read (every page), sorted
	cpu     time.Duration   // of the process answering, per full read
	rss     int64           // of the process answering
	startup time.Duration   // how long the gateway took to be ready
}

func (b *bench) listScale() {
	n, k := b.opts.listServers, b.opts.listTools
	progress("\n== tools/list: %d servers × %d tools ==", n, k)
	began := time.Now()
	gw, err := b.startGateway(b.echoConfig(n, fmt.Sprintf(" -tools %d", k)), n*k)
	if err != nil {
		b.fail("tools/list: starting the gateway with %d servers: %v", n, err)
		return
	}
	ready := time.Since(began)
	r, err := measureList(gw.target(targetGatewayIO, eraLegacy), n*k, b.opts.listIters)
	gw.stop()
	if err != nil {
		b.fail("tools/list through the gateway: %v", err)
		return
	}
	r.what = fmt.Sprintf("gateway, %d stdio servers × %d tools", n, k)
	r.startup = ready
	b.report.lists = append(b.report.lists, r)
	progress("%s: %d tools in %d pages, full list p50 %s", r.what, r.tools, r.pages, ms(percentile(r.full, 0.5)))

	// For scale: one SDK server listing its k tools directly.
	direct, err := startEchoHTTP(b.echo, "-tools", strconv.Itoa(k))
	if err != nil {
		b.fail("tools/list direct: %v", err)
		return
	}
	dt := &target{name: targetDirect, ep: direct.ep, era: eraLegacy, measured: direct.pid}
	r, err = measureList(dt, k, b.opts.listIters)
	direct.stop()
	if err != nil {
		b.fail("tools/list direct: %v", err)
		return
	}
	r.what = fmt.Sprintf("direct, one SDK server × %d tools", k)
	b.report.lists = append(b.report.lists, r)
	progress("%s: %d tools in %d pages, full list p50 %s", r.what, r.tools, r.pages, ms(percentile(r.full, 0.5)))
}

// measureList reads the whole tool list iters times (after a few unmeasured
// reads) and checks it has want tools. Only the exchange is timed; decoding
// the page, the client's work, is not.
func measureList(t *target, want, iters int) (*listResult, error) {
	c, err := dial(&t.ep, time.Now().Add(2*time.Minute))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s, err := openSession(c, t.era)
	if err != nil {
		return nil, err
	}
	defer s.close(c)
	res := &listResult{}
	id := int64(1)
	var cpuBefore time.Duration
	for i := range iters + 5 {
		if i == 5 {
			st, _ := readStat(t.measured)
			cpuBefore = st.cpu
		}
		var took time.Duration
		tools, pages := 0, 0
		cursor := ""
		for range 1000 {
			id++
			body := listBody(s, id, cursor)
			began := time.Now()
			r, err := c.do("POST", s.listHeaders(), body)
			took += time.Since(began)
			if err != nil {
				return nil, err
			}
			p, err := decodeListPage(r)
			if err != nil {
				return nil, err
			}
			tools += len(p.Tools)
			pages++
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		if tools != want {
			return nil, fmt.Errorf("tools/list returned %d tools, want %d", tools, want)
		}
		if i >= 5 {
			res.full = append(res.full, took)
		}
		res.tools, res.pages = tools, pages
	}
	sortDurations(res.full)
	st, _ := readStat(t.measured)
	res.rss = st.rss
	res.cpu = (st.cpu - cpuBefore) / time.Duration(max(iters, 1))
	return res, nil
}

// sessionResult is the memory of many sessions held open at once.
type sessionResult struct {
	target               string
	sessions             int
	before, open, closed procStat
	heapBefore, heapOpen int64 // live heap after a GC, when the process serves /debug/pprof
	heapClosed           int64
	goroutinesBefore     int
	goroutinesOpen       int
	goroutinesClosed     int
	perSessionRSS        float64 // bytes
	perSessionHeap       float64 // bytes; 0 when unknown
}

// sessionScale opens many sessions at once on a fresh gateway and a fresh
// direct server, and reads their memory with the sessions open and closed.
func (b *bench) sessionScale() {
	n := b.opts.sessions
	progress("\n== %d sessions held open ==", n)
	direct, err := startEchoHTTP(b.echo)
	if err != nil {
		b.fail("sessions: %v", err)
		return
	}
	defer direct.stop()
	targets := []*target{{name: targetDirect, ep: direct.ep, era: eraLegacy, measured: direct.pid}}
	for _, gb := range b.builds() {
		gw, err := b.startGatewayBin(gb.bin, b.oneEcho(), 1)
		if err != nil {
			b.fail("sessions: %v", err)
			return
		}
		defer gw.stop()
		targets = append(targets, gw.target(targetGatewayIO+gb.suffix, eraLegacy))
	}
	for _, gb := range b.builds() {
		if t, stop := b.startHTTPGatewayBin("sessions", gb); t != nil {
			defer stop()
			targets = append(targets, t)
		}
	}
	for _, t := range targets {
		r, err := holdSessions(t, n)
		if err != nil {
			b.fail("sessions on %s: %v", t.name, err)
			continue
		}
		b.report.sessions = append(b.report.sessions, r)
		progress("%s: %d sessions: RSS %s → %s (%.1f KiB per session) → %s after closing",
			t.name, n, mib(r.before.rss), mib(r.open.rss), r.perSessionRSS/1024, mib(r.closed.rss))
	}
}

// startHTTPGateway starts a gateway in front of its own echo server over
// HTTP, for the session and soak measures (a remote upstream holds one
// upstream session per client session). It returns nil, with a note, while
// the gateway does not serve url servers. stop stops both processes.
func (b *bench) startHTTPGateway(phase string) (t *target, stop func()) {
	return b.startHTTPGatewayBin(phase, gatewayBuild{bin: b.gateway})
}

// startHTTPGatewayBin is startHTTPGateway with a given build.
func (b *bench) startHTTPGatewayBin(phase string, gb gatewayBuild) (t *target, stop func()) {
	if !b.opts.httpUpstream {
		return nil, nil
	}
	up, err := startEchoHTTP(b.echo)
	if err != nil {
		b.fail("%s: %v", phase, err)
		return nil, nil
	}
	gw, err := b.startGatewayBin(gb.bin, fmt.Sprintf(`{"echo":{"url":"http://%s%s"}}`, up.ep.addr, up.ep.path), 1)
	var (
		refused *refusedError
		missing *missingToolsError
	)
	switch {
	case errors.As(err, &refused) && refused.code == 2, errors.As(err, &missing):
		up.stop()
		b.note("%s: %s not measured: the gateway does not serve url servers yet", phase, targetGatewayHTTP)
		return nil, nil
	case err != nil:
		up.stop()
		b.fail("%s: %s: %v", phase, targetGatewayHTTP, err)
		return nil, nil
	}
	t = gw.target(targetGatewayHTTP+gb.suffix, eraLegacy)
	t.servers, t.childServers = []int{up.pid}, false
	return t, func() { gw.stop(); up.stop() }
}

// holdSessions opens n sessions over 8 connections, makes one call on each,
// and closes them.
func holdSessions(t *target, n int) (*sessionResult, error) {
	limit := time.Now().Add(2 * time.Minute)
	// Warm up so the process's pools and connections exist before the baseline.
	warm, err := openSessions(t, 8, limit)
	if err != nil {
		return nil, err
	}
	if w := load(t, warm, 8, 800, time.Minute); w.errors > 0 {
		return nil, fmt.Errorf("warm-up: %d calls failed; first: %v", w.errors, w.firstErr)
	}
	if err := closeSessions(t, warm, limit); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	r := &sessionResult{target: t.name, sessions: n}
	r.before, r.heapBefore, r.goroutinesBefore = snapshot(t)

	const workers = 8
	all := make([][]*session, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			c, err := dial(&t.ep, limit)
			if err != nil {
				errs[w] = err
				return
			}
			defer c.Close()
			var buf []byte
			for i := w; i < n; i += workers {
				// 50 sessions a client: the gateway holds at most 100 of one
				// client identity (--max-sessions-per-tenant).
				s, err := openSessionAs(c, t.era, fmt.Sprintf("mcp-gateway-bench-%d", i/50))
				if err != nil {
					errs[w] = err
					return
				}
				all[w] = append(all[w], s)
				if err := callEcho(c, s, int64(i+1), &buf); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	var sessions []*session
	for w := range workers {
		sessions = append(sessions, all[w]...)
	}
	for _, err := range errs {
		if err != nil {
			_ = closeSessions(t, sessions, limit)
			return nil, err
		}
	}
	time.Sleep(200 * time.Millisecond)
	r.open, r.heapOpen, r.goroutinesOpen = snapshot(t)
	if err := closeSessions(t, sessions, limit); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	r.closed, r.heapClosed, r.goroutinesClosed = snapshot(t)
	r.perSessionRSS = float64(r.open.rss-r.before.rss) / float64(n)
	if r.heapOpen > 0 && r.heapBefore > 0 {
		r.perSessionHeap = float64(r.heapOpen-r.heapBefore) / float64(n)
	}
	return r, nil
}

// snapshot reads a process's /proc figures and, for a -pprof build, its live
// heap after a GC and its goroutine count; -1 for those otherwise.
func snapshot(t *target) (procStat, int64, int) {
	st, _ := readStat(t.measured)
	if t.pprof == nil {
		return st, -1, -1
	}
	heap, goroutines := pprofFigures(*t.pprof)
	return st, heap, goroutines
}

var (
	heapInuse   = regexp.MustCompile(`(?m)^# HeapInuse = (\d+)$`)
	goroutineRe = regexp.MustCompile(`^goroutine profile: total (\d+)`)
)

// pprofFigures asks /debug/pprof for the live heap (HeapInuse after a forced
// GC) and the goroutine count; -1 for what it cannot read.
func pprofFigures(ep endpoint) (heap int64, goroutines int) {
	heap, goroutines = -1, -1
	if body := pprofGet(ep, "/debug/pprof/heap?gc=1&debug=1"); body != nil {
		if m := heapInuse.FindSubmatch(body); m != nil {
			heap, _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
	}
	if body := pprofGet(ep, "/debug/pprof/goroutine?debug=1"); body != nil {
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		if sc.Scan() {
			if m := goroutineRe.FindStringSubmatch(sc.Text()); m != nil {
				goroutines, _ = strconv.Atoi(m[1])
			}
		}
	}
	return heap, goroutines
}

// soakResult says whether the gateway returns to its baseline after many
// calls and sessions.
type soakResult struct {
	target                  string
	calls, sessions, errors int
	lost                    int // of the errors: calls unanswered after lostAfter (hung)
	firstErr                error
	took                    time.Duration
	conc                    int
	baseline, peak, after   procStat
	fdsBaseline, fdsAfter   int
	heapBaseline, heapAfter int64 // -1 when unknown
	gorBaseline, gorAfter   int   // -1 when unknown
	settled                 time.Duration
	back                    bool
}

const soakConc = 16

// soak runs the soak calls at 16 concurrent on a fresh gateway, in ten
// segments each over its own freshly opened sessions (closed after it), and
// then waits for the process to return to its baseline.
func (b *bench) soak() {
	calls, sessions := b.opts.soakCalls, b.opts.soakSessions
	if calls == 0 {
		b.note("soak: skipped (-short or -soak-calls 0)")
		return
	}
	gw, err := b.startGateway(b.oneEcho(), 1)
	if err != nil {
		b.fail("soak: %v", err)
		return
	}
	b.soakOn(gw.target(targetGatewayIO, eraLegacy), calls, sessions)
	gw.stop()
	if t, stop := b.startHTTPGateway("soak"); t != nil {
		b.soakOn(t, calls, sessions)
		stop()
	}
}

// soakOn soaks one gateway target and records the result.
func (b *bench) soakOn(t *target, calls, sessions int) {
	progress("\n== soak, %s: %d calls, %d sessions opened and closed ==", t.name, calls, sessions)
	r := &soakResult{target: t.name, conc: soakConc}
	limit := 5 * time.Minute

	// Warm up at the soak's concurrency: Go keeps the threads it made, so the
	// baseline must already have them.
	warm, err := openSessions(t, 10, time.Now().Add(limit))
	if err == nil {
		if w := load(t, warm, soakConc, 3000, limit); w.errors > 0 {
			err = fmt.Errorf("%d calls failed; first: %v", w.errors, w.firstErr)
		}
	}
	if err == nil {
		err = closeSessions(t, warm, time.Now().Add(limit))
	}
	if err != nil {
		b.fail("soak: warm-up: %v", err)
		return
	}
	time.Sleep(500 * time.Millisecond)
	r.baseline, r.heapBaseline, r.gorBaseline = snapshot(t)
	r.fdsBaseline = fdCount(t.measured)
	r.peak = r.baseline

	const segments = 10
	began := time.Now()
	for seg := range segments {
		n := sessions / segments
		if seg < sessions%segments {
			n++
		}
		ss, err := openSessions(t, max(n, 1), time.Now().Add(limit))
		if err != nil {
			b.fail("soak: opening sessions: %v", err)
			return
		}
		segCalls := calls / segments
		if seg < calls%segments {
			segCalls++
		}
		res := loadEach(t, ss, soakConc, segCalls, limit, lostAfter)
		r.calls += res.calls
		r.sessions += len(ss)
		r.errors += res.errors
		r.lost += res.lost
		if r.firstErr == nil {
			r.firstErr = res.firstErr
		}
		if err := closeSessions(t, ss, time.Now().Add(limit)); err != nil {
			b.fail("soak: closing sessions: %v", err)
			return
		}
		st, _ := readStat(t.measured)
		r.peak.rss = max(r.peak.rss, st.rss)
		r.peak.threads = max(r.peak.threads, st.threads)
		progress("soak segment %d/%d: %d calls, %d sessions, %.0f calls/s, RSS %s, threads %d, errors %d (lost %d)",
			seg+1, segments, res.calls, len(ss), res.perSecond(), mib(st.rss), st.threads, res.errors, res.lost)
	}
	r.took = time.Since(began)
	if r.errors > 0 {
		b.fail("soak, %s: %d of %d calls failed (%d lost: unanswered after %s); first: %v", t.name, r.errors, r.errors+r.calls, r.lost, lostAfter, r.firstErr)
	}

	// Settle: the Go runtime returns freed memory to the system in the
	// background, after a GC; a trickle of calls lets GCs happen.
	settleStart := time.Now()
	for range 40 {
		ss, err := openSessions(t, 1, time.Now().Add(limit))
		if err == nil {
			load(t, ss, 1, 100, limit)
			err = closeSessions(t, ss, time.Now().Add(limit))
		}
		if err != nil {
			b.fail("soak: settling: %v", err)
			return
		}
		time.Sleep(250 * time.Millisecond)
		r.after, r.heapAfter, r.gorAfter = snapshot(t)
		r.fdsAfter = fdCount(t.measured)
		if r.isBack() {
			r.back = true
			break
		}
	}
	r.settled = time.Since(settleStart)
	b.report.soaks = append(b.report.soaks, r)
	progress("soak, %s: baseline RSS %s threads %d fds %d; peak RSS %s; after RSS %s threads %d fds %d; back: %v", t.name,
		mib(r.baseline.rss), r.baseline.threads, r.fdsBaseline, mib(r.peak.rss), mib(r.after.rss), r.after.threads, r.fdsAfter, r.back)
}

// isBack reports whether the process is back at its baseline: open files
// (and goroutines, when known) no more than before, give or take the idle
// connections of an HTTP client; RSS (and the live heap, when known) within
// 10% + 1 MiB of before. Threads are reported, not judged: Go keeps every
// thread it once needed, and a leaked goroutine takes none.
//
// The gateway keeps idle connections to a remote server (net/http's two
// goroutines each) as many as were last in use at once, up to its limit: between the baseline and the end that count varies by up to
// the soak's concurrency, while a leak grows with the 1 000 sessions and
// 100 000 calls.
func (r *soakResult) isBack() bool {
	near := func(now, base int64) bool { return now <= base+base/10+1<<20 }
	ok := r.fdsAfter <= r.fdsBaseline+r.conc && near(r.after.rss, r.baseline.rss)
	if r.gorBaseline >= 0 && r.gorAfter >= 0 {
		ok = ok && r.gorAfter <= r.gorBaseline+2*r.conc
	}
	if r.heapBaseline >= 0 && r.heapAfter >= 0 {
		ok = ok && near(r.heapAfter, r.heapBaseline)
	}
	return ok
}

func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
