package main

// One load run: conc workers, each on its own keep-alive connection, call
// echo until the run's count of calls is done or its deadline passes. The
// sessions are opened before the clock starts; with several, each call takes
// the next one in turn, so every session is in use whatever the concurrency.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// target is one way of reaching the echo tool.
type target struct {
	name string
	ep   endpoint
	era  string
	// measured is the pid whose CPU per call and RSS are reported: the
	// gateway, or the echo server itself for the direct target.
	measured int
	// servers are the pids behind it (the gateway's echo server); nil for direct.
	servers []int
	// pprof is the net/http/pprof endpoint of a -pprof gateway build.
	pprof *endpoint
	// childServers: servers are the measured process's children, looked up
	// again before each run (a restarted server).
	childServers bool
}

// runResult is what one run measured.
type runResult struct {
	calls    int // answered correctly
	errors   int
	lost     int // of the errors: calls unanswered after the call timeout (loadEach), hung
	firstErr error
	timedOut bool
	elapsed  time.Duration
	lat      []time.Duration // sorted

	measuredCPU time.Duration // of target.measured
	serverCPU   time.Duration // of target.servers
	clientCPU   time.Duration // of this process
	rss         int64         // of target.measured, after the run
	threads     int

	// stall is the longest time no call completed, when over stallAfter;
	// stallDump the file holding the gateway's goroutines during it (-pprof).
	stall     time.Duration
	stallDump string
}

// stallAfter is how long without a completed call counts as a stall.
const stallAfter = 5 * time.Second

func (r *runResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.calls) / r.elapsed.Seconds()
}

func (r *runResult) cpuPerCall(d time.Duration) time.Duration {
	n := r.calls + r.errors
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// openSessions opens n sessions over one connection.
func openSessions(t *target, n int, deadline time.Time) ([]*session, error) {
	c, err := dial(&t.ep, deadline)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sessions := make([]*session, 0, n)
	for range n {
		s, err := openSession(c, t.era)
		if err != nil {
			return sessions, err
		}
		sessions = append(sessions, s)
	}
	return sessions, nil
}

// closeSessions ends sessions over one connection.
func closeSessions(t *target, sessions []*session, deadline time.Time) error {
	c, err := dial(&t.ep, deadline)
	if err != nil {
		return err
	}
	defer c.Close()
	var errs []error
	for _, s := range sessions {
		if err := s.close(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// load runs calls over the given sessions with conc workers and measures
// latency, throughput and the CPU of the processes involved.
func load(t *target, sessions []*session, conc, calls int, limit time.Duration) *runResult {
	return loadEach(t, sessions, conc, calls, limit, 0)
}

// lostAfter is how long a call of the soak may go unanswered before it
// counts as lost (hung), the load clients' usual timeout.
const lostAfter = 30 * time.Second

// loadEach is load with each call bounded by callTimeout (0: only by the
// run's limit): a call unanswered by then fails, counted in lost.
func loadEach(t *target, sessions []*session, conc, calls int, limit, callTimeout time.Duration) *runResult {
	res := &runResult{}
	if t.childServers {
		t.servers = childrenOf(t.measured)
	}
	deadline := time.Now().Add(limit)
	conns := make([]*httpConn, conc)
	for i := range conns {
		c, err := dial(&t.ep, deadline.Add(5*time.Second))
		if err != nil {
			res.errors, res.firstErr = calls, fmt.Errorf("connecting: %w", err)
			closeAll(conns)
			return res
		}
		conns[i] = c
	}
	defer closeAll(conns)

	var (
		next     atomic.Int64 // calls claimed
		nextSes  atomic.Uint64
		lastDone atomic.Int64 // unix nanoseconds of the last completed call
		errMu    sync.Mutex
		lats     = make([][]time.Duration, conc)
		errs     = make([]int, conc)
		lost     = make([]int, conc)
		wg       sync.WaitGroup
	)
	before, serversBefore, clientBefore := sumStats([]int{t.measured}), sumStats(t.servers), selfCPU()
	start := time.Now()
	lastDone.Store(start.UnixNano())
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchStalls(t, res, &lastDone, stopWatch)
	}()
	for w := range conc {
		lat := make([]time.Duration, 0, calls/conc+1)
		wg.Go(func() {
			c := conns[w]
			buf := make([]byte, 0, 512)
			for {
				i := next.Add(1)
				if i > int64(calls) {
					break
				}
				if time.Now().After(deadline) {
					errMu.Lock()
					res.timedOut = true
					errMu.Unlock()
					break
				}
				s := sessions[int(nextSes.Add(1)-1)%len(sessions)]
				began := time.Now()
				if callTimeout > 0 {
					d := began.Add(callTimeout)
					if end := deadline.Add(5 * time.Second); end.Before(d) {
						d = end
					}
					_ = c.nc.SetDeadline(d)
				}
				err := callEcho(c, s, i, &buf)
				took := time.Since(began)
				lastDone.Store(time.Now().UnixNano())
				if err != nil {
					errs[w]++
					if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() && callTimeout > 0 {
						lost[w]++
					}
					errMu.Lock()
					if res.firstErr == nil {
						res.firstErr = err
					}
					errMu.Unlock()
					// The connection's state is unknown after an error: go on with a fresh one.
					c.Close()
					nc, err := dial(&t.ep, deadline.Add(5*time.Second))
					if err != nil {
						break
					}
					conns[w], c = nc, nc
					continue
				}
				lat = append(lat, took)
			}
			lats[w] = lat
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(stopWatch)
	<-watched
	after, serversAfter, clientAfter := sumStats([]int{t.measured}), sumStats(t.servers), selfCPU()

	for w := range conc {
		res.lat = append(res.lat, lats[w]...)
		res.errors += errs[w]
		res.lost += lost[w]
	}
	slices.Sort(res.lat)
	res.calls = len(res.lat)
	res.measuredCPU = after.cpu - before.cpu
	res.serverCPU = serversAfter.cpu - serversBefore.cpu
	res.clientCPU = clientAfter - clientBefore
	res.rss, res.threads = after.rss, after.threads
	return res
}

// watchStalls records the longest time without a completed call beyond
// stallAfter and, for a -pprof build, saves the gateway's goroutines while
// the first stall lasts, for whoever debugs it.
func watchStalls(t *target, res *runResult, lastDone *atomic.Int64, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			if d := time.Since(time.Unix(0, lastDone.Load())); d > stallAfter {
				res.stall = max(res.stall, d)
			}
			return
		case <-tick.C:
		}
		d := time.Since(time.Unix(0, lastDone.Load()))
		if d <= stallAfter {
			continue
		}
		res.stall = max(res.stall, d)
		if res.stallDump == "" && t.pprof != nil {
			res.stallDump = saveGoroutines(*t.pprof)
		}
	}
}

// saveGoroutines writes a goroutine dump (debug=2) of a -pprof build to a
// file that outlives the run, and returns its name ("" on failure).
func saveGoroutines(ep endpoint) string {
	ep.path = "/debug/pprof/goroutine?debug=2"
	c, err := dial(&ep, time.Now().Add(10*time.Second))
	if err != nil {
		return ""
	}
	defer c.Close()
	r, err := c.do("GET", "", nil)
	if err != nil || r.status != 200 {
		return ""
	}
	f, err := os.CreateTemp("", "mcp-gateway-bench-stall-*.txt")
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Write(r.body); err != nil {
		return ""
	}
	return f.Name()
}

func closeAll(conns []*httpConn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}
