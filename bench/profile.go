package main

// -cpuprofile: a CPU profile of the gateway under 16 concurrent calls,
// gateway → stdio (or → HTTP with -profile-http), from a -pprof build.

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"
)

func (b *bench) profile() {
	if b.opts.cpuProfile == "" {
		return
	}
	secs := b.opts.profileSeconds
	era := b.opts.profileEra
	name, config := targetGatewayIO, b.oneEcho()
	var upstream *echoServer
	if b.opts.profileHTTP {
		var err error
		if upstream, err = startEchoHTTP(b.echo); err != nil {
			b.fail("profile: %v", err)
			return
		}
		defer upstream.stop()
		name, config = targetGatewayHTTP, fmt.Sprintf(`{"echo":{"url":"http://%s%s"}}`, upstream.ep.addr, upstream.ep.path)
	}
	progress("\n== CPU profile of the gateway, %ds of 16 concurrent calls, %s, protocol %s ==", secs, name, era)
	gw, err := b.startGateway(config, 1)
	if err != nil {
		b.fail("profile: %v", err)
		return
	}
	defer gw.stop()
	t := gw.target(name, era)
	if upstream != nil {
		t.servers, t.childServers = []int{upstream.pid}, false
	}
	sessions, err := openSessions(t, 1, time.Now().Add(time.Minute))
	if err != nil {
		b.fail("profile: %v", err)
		return
	}
	if w := load(t, sessions, 16, 2000, time.Minute); w.errors > 0 {
		b.fail("profile: warm-up: %d calls failed; first: %v", w.errors, w.firstErr)
		return
	}

	before := readMemStats(*gw.pprof)
	if b.opts.memProfile != "" {
		b.saveAllocs(*gw.pprof, b.opts.memProfile+".base")
	}
	var (
		wg      sync.WaitGroup
		prof    []byte
		profErr error
	)
	wg.Go(func() {
		e := *gw.pprof
		e.path = fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs)
		c, err := dial(&e, time.Now().Add(time.Duration(secs)*time.Second+30*time.Second))
		if err != nil {
			profErr = err
			return
		}
		defer c.Close()
		r, err := c.do("GET", "", nil)
		switch {
		case err != nil:
			profErr = err
		case r.status != 200:
			profErr = fmt.Errorf("GET /debug/pprof/profile: HTTP %d: %.200q", r.status, r.body)
		default:
			prof = append([]byte(nil), r.body...)
		}
	})
	// The load outlasts the profile; its deadline ends it.
	time.Sleep(100 * time.Millisecond)
	r := load(t, sessions, 16, 10_000_000, time.Duration(secs)*time.Second+time.Second)
	wg.Wait()
	after := readMemStats(*gw.pprof)
	if b.opts.memProfile != "" {
		b.saveAllocs(*gw.pprof, b.opts.memProfile)
	}
	if r.errors > 0 {
		b.fail("profile: %d calls failed; first: %v", r.errors, r.firstErr)
	}
	if profErr != nil {
		b.fail("profile: %v", profErr)
		return
	}
	if err := os.WriteFile(b.opts.cpuProfile, prof, 0o644); err != nil {
		b.fail("profile: %v", err)
		return
	}
	b.note("CPU profile of the gateway (%s) under %d calls of protocol %s (%.0f calls/s, gateway %s µs/call) written to %s: go tool pprof -top %s",
		name, r.calls, era, r.perSecond(), us(r.cpuPerCall(r.measuredCPU)), b.opts.cpuProfile, b.opts.cpuProfile)
	if n := r.calls + r.errors; n > 0 && before.ok && after.ok {
		b.note("allocations in the gateway during the profile (runtime.MemStats, exact; the profiler's own included): %.1f objects and %.0f bytes per call, %d GCs",
			float64(after.mallocs-before.mallocs)/float64(n), float64(after.totalAlloc-before.totalAlloc)/float64(n), after.numGC-before.numGC)
	}
	if b.opts.memProfile != "" {
		b.note("allocation profiles of the gateway before and after the profiled load written to %s.base and %s: go tool pprof -sample_index=alloc_objects -top -base %s.base %s",
			b.opts.memProfile, b.opts.memProfile, b.opts.memProfile, b.opts.memProfile)
	}
}

// memStats are the allocation counters of runtime.MemStats, as
// /debug/pprof/allocs?debug=1 prints them.
type memStats struct {
	ok                         bool
	mallocs, totalAlloc, numGC uint64
}

var memStatRe = regexp.MustCompile(`(?m)^# (Mallocs|TotalAlloc|NumGC) = (\d+)$`)

func readMemStats(ep endpoint) memStats {
	body := pprofGet(ep, "/debug/pprof/allocs?debug=1")
	var m memStats
	found := 0
	for _, sub := range memStatRe.FindAllSubmatch(body, -1) {
		v, err := strconv.ParseUint(string(sub[2]), 10, 64)
		if err != nil {
			continue
		}
		found++
		switch string(sub[1]) {
		case "Mallocs":
			m.mallocs = v
		case "TotalAlloc":
			m.totalAlloc = v
		case "NumGC":
			m.numGC = v
		}
	}
	m.ok = found == 3
	return m
}

// saveAllocs writes the gateway's allocation profile (the pprof format) to file.
func (b *bench) saveAllocs(ep endpoint, file string) {
	body := pprofGet(ep, "/debug/pprof/allocs")
	if body == nil {
		b.fail("profile: cannot read /debug/pprof/allocs")
		return
	}
	if err := os.WriteFile(file, body, 0o644); err != nil {
		b.fail("profile: %v", err)
	}
}

// pprofGet reads one document of a -pprof build's side port; nil on failure.
func pprofGet(ep endpoint, path string) []byte {
	ep.path = path
	c, err := dial(&ep, time.Now().Add(10*time.Second))
	if err != nil {
		return nil
	}
	defer c.Close()
	r, err := c.do("GET", "", nil)
	if err != nil || r.status != 200 {
		return nil
	}
	return append([]byte(nil), r.body...)
}
