package main

// The isolation phase: one client's echo calls, measured without and then
// with a second client whose call streams many progress notifications it
// never reads. What the gateway does for one client must not hold another:
// the calls' latency, and their errors, should not change.

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// isolationResult is what the phase measured, pooled over rounds.
type isolationResult struct {
	target        string
	notifications int // asked of the stalled call, per round
	calls         int // echo calls per measure and round
	rounds        int
	without, with []time.Duration // latencies, sorted
	reading       []time.Duration // beside a client that reads its stream: the shared server's own burst
	errorsWithout int
	errorsWith    int
	errorsReading int
	firstErr      error
}

// stalledMessage is the length of each progress notification's message:
// with it, the notifications outgrow what the kernel's socket buffers can
// hold (20 000 of them are about 20 MiB), so they back up into the gateway.
const stalledMessage = 1000

// isolationLimit bounds each measure: a gateway held by the stalled client
// shows as errors, not as a benchmark that never ends.
const isolationLimit = 60 * time.Second

func (b *bench) isolation() {
	progress("\n== isolation: echo calls beside a client that never reads its stream ==")
	config := fmt.Sprintf(`{"echo":{"runCmd":"exec '%s' -progress"}}`, b.echo)
	gw, err := b.startGateway(config, 2)
	if err != nil {
		b.fail("isolation: %v", err)
		return
	}
	defer gw.stop()
	t := gw.target(targetGatewayIO, eraLegacy)
	res := &isolationResult{target: targetGatewayIO, notifications: b.opts.isolationNotifications, calls: b.opts.isolationCalls, rounds: b.opts.rounds}
	for round := range b.opts.rounds {
		sessions, err := openSessions(t, 1, time.Now().Add(30*time.Second))
		if err != nil {
			b.fail("isolation: opening the measuring client's session: %v", err)
			return
		}
		without := load(t, sessions, 1, res.calls, isolationLimit)
		stalled, err := startStalled(t, res.notifications)
		if err != nil {
			b.fail("isolation: starting the stalled client: %v", err)
			return
		}
		with := load(t, sessions, 1, res.calls, isolationLimit)
		stalled.Close()
		// The same burst read by its client: what the shared server's
		// work costs the measuring client when nobody stalls.
		reader, err := startStalled(t, res.notifications)
		if err != nil {
			b.fail("isolation: starting the reading client: %v", err)
			return
		}
		drained := make(chan struct{})
		go func() { defer close(drained); readUntilAnswer(reader) }()
		reading := load(t, sessions, 1, res.calls, isolationLimit)
		reader.Close()
		<-drained
		res.reading = append(res.reading, reading.lat...)
		res.errorsReading += reading.errors
		_ = closeSessions(t, sessions, time.Now().Add(10*time.Second))

		res.without = append(res.without, without.lat...)
		res.with = append(res.with, with.lat...)
		res.errorsWithout += without.errors
		res.errorsWith += with.errors
		for _, r := range []*runResult{without, with} {
			if res.firstErr == nil && r.firstErr != nil {
				res.firstErr = r.firstErr
			}
		}
		progress("round %d: p99 %s ms without, %s ms with the stalled client, %s ms with a reading one; errors %d, %d, %d",
			round+1, msf(percentile(without.lat, 0.99)), msf(percentile(with.lat, 0.99)), msf(percentile(reading.lat, 0.99)),
			without.errors, with.errors, reading.errors)
	}
	slices.Sort(res.without)
	slices.Sort(res.with)
	slices.Sort(res.reading)
	b.report.isolation = res
}

// startStalled opens a session on a connection of its own and calls the
// progress tool for count notifications with a progress token, then stops
// reading once the answer has begun (its status line): everything after
// backs up into the gateway. Its receive buffer is made small, so the
// notifications cannot all wait in the kernel instead.
func startStalled(t *target, count int) (*httpConn, error) {
	c, err := dial(&t.ep, time.Now().Add(10*time.Minute))
	if err != nil {
		return nil, err
	}
	s, err := openSession(c, t.era)
	if err != nil {
		c.Close()
		return nil, err
	}
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"count":` +
		strconv.Itoa(count) + `,"message":` + strconv.Itoa(stalledMessage) + `},"_meta":{"progressToken":"stalled"}}}`
	if err := c.send("POST", s.callHeaders, []byte(body)); err != nil {
		c.Close()
		return nil, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("waiting for the progress call's answer to begin: %w", err)
	}
	if !strings.HasPrefix(string(line), "HTTP/1.1 200") {
		c.Close()
		return nil, fmt.Errorf("the progress call was answered %q", strings.TrimSpace(string(line)))
	}
	return c, nil
}

// readUntilAnswer reads a progress call's stream until its answer (or the
// connection's end), as a client that keeps up would.
func readUntilAnswer(c *httpConn) {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
		if strings.Contains(string(line), `"result"`) {
			return
		}
	}
}

func (r *report) writeIsolation(b *strings.Builder) {
	x := r.isolation
	if x == nil {
		return
	}
	b.WriteString("### Isolation: a client that never reads its stream\n\n")
	fmt.Fprintf(b, "One client calls echo through **%s**, %d calls one at a time, first alone, then while a second client "+
		"(its own session and connection, a 4 KiB receive buffer) has called the echo server's progress tool for %d progress "+
		"notifications of about 1 KB each and reads nothing after the status line; %d round(s), latencies pooled. The server is shared, as a "+
		"stdio server is.\n\n", x.target, x.calls, x.notifications, x.rounds)
	b.WriteString("The last columns are the same burst read by its client: what the shared server's own work costs the " +
		"measuring client when nobody stalls, the floor the stalled client is judged by (issue 26: p99 with it ≤ 1.5× with a reading client, 0 errors).\n\n")
	b.WriteString("| | without the stalled client | with it | with ÷ without | with a reading client instead | with ÷ reading |\n|---|---:|---:|---:|---:|---:|\n")
	ratio := func(with, without time.Duration) string {
		if without <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", float64(with)/float64(without))
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50 ms", 0.5}, {"p99 ms", 0.99}} {
		w, wo := percentile(x.with, p.q), percentile(x.without, p.q)
		rd := percentile(x.reading, p.q)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", p.name, msf(wo), msf(w), ratio(w, wo), msf(rd), ratio(w, rd))
	}
	fmt.Fprintf(b, "| errors | %d | %d | | %d | |\n\n", x.errorsWithout, x.errorsWith, x.errorsReading)
	if x.firstErr != nil {
		fmt.Fprintf(b, "First error: `%s`\n\n", firstLine(x.firstErr.Error()))
	}
}

// floorGoal compares the stalled client's cost with the same burst read by
// its client: on a machine whose cores the server's burst takes from the
// measuring client, that is what the gateway's isolation can be judged by.
func (x *isolationResult) floorGoal() (measured string, met bool) {
	w, r := percentile(x.with, 0.99), percentile(x.reading, 0.99)
	ratio := 0.0
	if r > 0 {
		ratio = float64(w) / float64(r)
	}
	errs := x.errorsWith + x.errorsReading
	return fmt.Sprintf("p99 %s vs %s ms (%.2f×), errors %d", msf(w), msf(r), ratio, errs),
		r > 0 && len(x.with) > 0 && ratio <= 1.5 && errs == 0
}
