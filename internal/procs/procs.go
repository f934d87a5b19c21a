// Package procs chooses how many Ps (runtime.GOMAXPROCS) the in-sandbox
// gateway runs on, from the calls it has in flight.
//
// A gateway mostly waits: for a client's request, for a server's answer.
// Each wake-up of one of its goroutines while a P is idle makes the Go
// scheduler wake a thread that spins looking for work, finds little and
// sleeps again. With one call at a time that spinning is what keeps the
// latency low (a thread is awake when the answer arrives); with several in
// flight there is always a goroutine ready, and the spinning is CPU taken
// from the servers and clients sharing the machine. Measured on two cores
// with 16 concurrent calls over stdio (docs/template.md): 13–15 % less CPU
// per call in the gateway and 5 % more calls per second with this choice
// than on the default Ps throughout, and the same p50 with a single client
// (one P throughout raises it by half).
//
// A Governor therefore runs the process on one P while several requests are
// in flight and gives the runtime its default back once at most one is.
// It does nothing when GOMAXPROCS is set in the environment (that choice is
// the operator's) or the runtime's default is one P already.
package procs

import (
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

const (
	// window is how often the Governor looks at the requests in flight.
	window = 20 * time.Millisecond
	// busy is the peak of requests in flight within a window that moves the
	// process to one P.
	busy = 3
	// calmWindows of at most one request in flight give the default back.
	calmWindows = 2
	// idleWindows without a request stop the Governor's goroutine until the
	// next request.
	idleWindows = 50
)

// Governor sets runtime.GOMAXPROCS from the POST requests a handler has in
// flight. The zero value is not usable; call New.
type Governor struct {
	inflight atomic.Int32
	peak     atomic.Int32 // the most in flight since the last look
	watching atomic.Bool  // the goroutine of watch runs
	off      bool
	setOne   func(bool) // one P (true) or the runtime's default (false)

	// Owned by the goroutine of watch.
	one         bool
	calm, quiet int
}

// New returns a Governor for this process: off when the environment sets
// GOMAXPROCS or the runtime's default is one P.
func New() *Governor {
	_, set := os.LookupEnv("GOMAXPROCS")
	return &Governor{off: set || runtime.GOMAXPROCS(0) < 2, setOne: setOne}
}

func setOne(one bool) {
	if one {
		runtime.GOMAXPROCS(1)
	} else {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// Wrap returns h counting its POST requests for g (the other methods are
// long-lived streams and health checks, which say nothing of the load); h
// itself when g is off.
func (g *Governor) Wrap(h http.Handler) http.Handler {
	if g.off {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		g.begin()
		defer g.inflight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

func (g *Governor) begin() {
	if n := g.inflight.Add(1); n > g.peak.Load() {
		g.peak.Store(n) // a lost race only lowers one window's peak by one
	}
	if !g.watching.Load() && g.watching.CompareAndSwap(false, true) {
		go g.watch()
	}
}

// watch looks at the requests in flight every window until the process
// has been idle on its default Ps for idleWindows.
func (g *Governor) watch() {
	t := time.NewTicker(window)
	defer t.Stop()
	for range t.C {
		if !g.step(g.peak.Swap(g.inflight.Load())) {
			g.watching.Store(false)
			return
		}
	}
}

// step decides after one window whose peak of requests in flight was
// peak; it reports false when the watching can stop.
func (g *Governor) step(peak int32) (keepWatching bool) {
	switch {
	case peak >= busy:
		g.calm = 0
		if !g.one {
			g.setOne(true)
			g.one = true
		}
	case peak <= 1:
		g.calm++
		if g.one && g.calm >= calmWindows {
			g.setOne(false)
			g.one = false
		}
	}
	if peak > 0 {
		g.quiet = 0
	} else {
		g.quiet++
	}
	return g.one || g.quiet < idleWindows
}
