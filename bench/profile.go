package main

// -cpuprofile: a CPU profile of the gateway under 16 concurrent calls,
// gateway → stdio (or → HTTP with -profile-http), from a -pprof build.

import (
	"fmt"
	"os"
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
}
