package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// streamBuffer is how many of an SSE stream's latest events are kept: the
// events a slow connection has not written yet (its queue: a full one
// refuses more), and the events a client resuming the stream with
// Last-Event-ID gets again (those also within the replay byte budgets).
const streamBuffer = 256

// eventOverhead is what one kept event costs beyond its message, counted
// in the replay byte budgets so that many tiny events are bounded too.
const eventOverhead = 64

// Limits that drop events from a replay buffer, as the resume error and
// the metrics name them.
const (
	limitEvents     = "events"  // the stream's streamBuffer
	limitStream     = "stream"  // Handler.ReplayBytesPerStream
	limitSession    = "session" // Handler.ReplayBytesPerSession
	limitTotal      = "total"   // Handler.ReplayBytes
	flagPerStream   = "--replay-bytes-per-stream"
	flagPerSession  = "--replay-bytes-per-session"
	flagReplayTotal = "--replay-bytes"
)

// retryMillis is the reconnection delay the priming event of a resumable
// stream asks for (the SSE retry field).
const retryMillis = 1000

var (
	errStreamClosed = errors.New("the request's response is complete")
	errStreamFull   = errors.New("the client's stream is not being read: its queue is full")
)

// stream is the HTTP response of one client request. It answers with plain
// JSON unless a message belonging to the request (progress, a log message, a
// request to the client) comes before the answer: then it switches to an SSE
// stream, sends those messages as events and the answer as the last one.
// Plain JSON costs far less than an SSE stream, and most calls have no
// interim message.
//
// Send never writes: it queues the message in the stream's events, and a
// goroutine of the stream's own (started by the first interim message)
// writes them, so a client that stops reading holds up only itself.
type stream struct {
	h      *Handler
	w      http.ResponseWriter
	ctx    context.Context    // the request's: done when the client goes away
	sess   *session           // nil: not resumable (a 2026-07-28 request)
	cancel context.CancelFunc // cancels the call when its stream is closed; nil: the call goes on
	reqID  json.RawMessage    // names the request in log lines

	mu     sync.Mutex
	ev     *events       // nil until the first interim message
	closed bool          // the answer is in: nothing more is sent
	status int           // status of a plain JSON answer; 0 means 200
	done   chan struct{} // closed when the writing goroutine returns
}

// Send queues an interim message, switching the response to SSE first.
func (s *stream) Send(msg []byte) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errStreamClosed
	}
	if s.ev == nil {
		s.startSSE()
	}
	ev := s.ev
	s.mu.Unlock()
	return ev.add(msg, false)
}

// prime switches a response still unanswered to a resumable SSE stream,
// whose first event is the priming event.
func (s *stream) prime() {
	s.mu.Lock()
	if !s.closed && s.ev == nil {
		s.startSSE()
	}
	s.mu.Unlock()
}

// startSSE makes the stream's events and starts the goroutine writing
// them; s.mu is held.
func (s *stream) startSSE() {
	id, sessID := "", ""
	if s.sess != nil {
		id, sessID = s.sess.newStreamID('p'), s.sess.logID()
	}
	s.ev = s.h.newEvents(id, sessID)
	s.ev.request = string(s.reqID)
	s.ev.onSlow = s.cancel
	wr := s.ev.attach(0)
	if s.sess != nil {
		s.sess.keep(s.ev)
	}
	s.done = make(chan struct{})
	go s.pump(wr)
}

// pump writes the stream's events until its answer is written, the client
// goes away, or the stream is closed as too slow.
func (s *stream) pump(wr *writer) {
	defer close(s.done)
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	if complete, _ := s.ev.serve(s.ctx, s.w, wr, nil, nil, nil); complete && s.sess != nil {
		s.sess.forget(s.ev.id) // delivered: nothing to resume
	}
}

// reply sends the answer and ends the stream: as plain JSON when nothing
// came before it, else as the last event, waiting until it is written (or
// the connection is given up: then a client resuming the stream gets it).
func (s *stream) reply(id json.RawMessage, r gateway.Reply) {
	s.mu.Lock()
	s.closed = true
	ev := s.ev
	if ev == nil {
		writeReply(s.w, s.status, id, r)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	var b []byte
	if r.Error != nil {
		b = wire.AppendRawError(nil, id, r.Error)
	} else {
		b = wire.AppendResult(nil, id, r.Result)
	}
	_ = ev.add(b, true)
	<-s.done
}

// close ends the stream without an answer (the client went away).
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	ev := s.ev
	s.mu.Unlock()
	if ev != nil {
		ev.stop()
		<-s.done
	}
}

// event is one SSE event of a stream.
type event struct {
	seq  uint64
	data []byte // a JSON-RPC message; nil for the priming event
}

// events is one SSE stream's events: a POST's response stream or a GET
// stream. At most one connection (a writer) writes it at a time: the one
// that opened it, or a GET that resumed it with Last-Event-ID.
type events struct {
	id      string // "p3", "g4": a resumable stream's id within its session; "": not resumable
	session string // the session's id as logged; "": none
	request string // the request's id, for a POST's stream
	timeout time.Duration
	// keepalive: how long a connection may go without a write before it
	// gets an SSE comment (see Handler.StreamKeepalive); 0: never.
	keepalive time.Duration
	log       *slog.Logger
	onSlow    func() // called when the connection is given up as too slow
	tel       *telemetry.Telemetry

	limit int64 // replay bytes the stream may hold (ReplayBytesPerStream); 0: no limit
	h     *Handler

	mu        sync.Mutex
	buf       []event // the latest events, oldest first, at most streamBuffer (one more for the last)
	next      uint64  // sequence number of the next event
	ended     bool    // the last event is in
	writer    *writer
	fullSince time.Time // when the writer's queue filled up; zero while it is not full

	bytes     int64    // what buf costs (messages and eventOverhead each)
	acct      *session // the session whose replay budget counts bytes; nil: none
	delivered uint64   // events before this sequence number were written to a connection
	dropped   string   // the limit that dropped the stream's latest dropped event; "": none
}

// writer is one connection writing a stream.
type writer struct {
	cursor uint64        // the next sequence number to write
	wake   chan struct{} // an event was added
	gone   chan struct{} // closed when the stream gives the connection up
	reason error         // why, when the client is too slow
}

// slowClient is why a stream's connection was given up.
type slowClient struct{ reason string }

func (e *slowClient) Error() string { return e.reason }

func (h *Handler) newEvents(id, session string) *events {
	e := &events{id: id, session: session, timeout: h.slowClientTimeout(), keepalive: h.streamKeepalive(), log: h.logger(), tel: h.Telemetry,
		limit: h.ReplayBytesPerStream, h: h}
	if id != "" {
		e.buf = append(e.buf, event{seq: 0}) // the priming event
		e.next = 1
	}
	return e
}

// eventCost is what an event counts in the replay budgets; the priming
// event (no data) counts nothing, so a new stream starts at zero.
func eventCost(data []byte) int64 {
	if data == nil {
		return 0
	}
	return int64(len(data)) + eventOverhead
}

// count makes the stream's bytes count against s's replay budget; s.mu is held.
func (e *events) count(s *session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.acct = s
	s.charge(e.bytes)
}

// uncount takes the stream's bytes out of its session's replay budget: it
// can no longer be resumed.
func (e *events) uncount() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.acct != nil {
		e.acct.charge(-e.bytes)
		e.acct = nil
	}
}

// droppable is how many of the oldest events may be dropped: all without
// a writer, else those it has written (the rest are its queue); e.mu is held.
func (e *events) droppable() int {
	if e.writer == nil {
		return len(e.buf)
	}
	n := 0
	for n < len(e.buf) && e.buf[n].seq < e.writer.cursor {
		n++
	}
	return n
}

// dropOldest drops the k oldest events because of limit, returning the
// bytes freed; e.mu is held.
func (e *events) dropOldest(k int, limit string) int64 {
	if k <= 0 {
		return 0
	}
	var freed int64
	undelivered := 0
	for _, ev := range e.buf[:k] {
		freed += eventCost(ev.data)
		if ev.seq >= e.delivered {
			undelivered++
		}
	}
	e.buf = slices.Delete(e.buf, 0, k)
	e.bytes -= freed
	if e.acct != nil {
		e.acct.charge(-freed)
	}
	e.dropped = limit
	if undelivered > 0 {
		e.tel.ReplayEventsDropped(limit, undelivered)
	}
	return freed
}

// trim drops the oldest droppable events until at least n bytes are freed.
func (e *events) trim(n int64, limit string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	k, d := 0, e.droppable()
	var freed int64
	for k < d && freed < n {
		freed += eventCost(e.buf[k].data)
		k++
	}
	return e.dropOldest(k, limit)
}

// makeRoom drops the stream's oldest events, those it may, so that cost
// more bytes stay within its own budget; e.mu is held.
func (e *events) makeRoom(cost int64) {
	if e.limit <= 0 || e.bytes+cost <= e.limit {
		return
	}
	k, d := 0, e.droppable()
	for over := e.bytes + cost - e.limit; k < d && over > 0; k++ {
		over -= eventCost(e.buf[k].data)
	}
	e.dropOldest(k, limitStream)
}

// replayGap is a resume that asks for events the replay budget dropped.
type replayGap struct {
	first uint64 // the oldest event still kept (e.next when none is)
	limit string
}

// resume makes a new connection the stream's writer from the event of
// sequence number from, like attach, unless events from there on were
// dropped: a resume must not skip messages silently.
func (e *events) resume(from uint64) (*writer, *replayGap) {
	e.mu.Lock()
	first := e.next
	if len(e.buf) > 0 {
		first = e.buf[0].seq
	}
	if from < first && e.dropped != "" {
		gap := &replayGap{first: first, limit: e.dropped}
		e.mu.Unlock()
		return nil, gap
	}
	e.mu.Unlock()
	return e.attach(from), nil
}

// add appends an event. A writer whose queue has been full for the slow
// client timeout is given up; before that a full queue refuses the
// message. Without a writer, the oldest event makes room.
func (e *events) add(data []byte, last bool) error {
	cost := eventCost(data)
	e.mu.Lock()
	acct := e.acct
	e.mu.Unlock()
	if acct != nil {
		// Room in the session's and the front's budgets first, so that
		// neither ever holds more than its budget, not even for a moment.
		e.h.reserveReplay(acct, cost)
	}
	e.mu.Lock()
	if e.acct != acct { // no longer resumable meanwhile: nothing to count
		if acct != nil {
			acct.charge(-cost)
		}
		acct = nil
	}
	if e.ended {
		e.mu.Unlock()
		if acct != nil {
			acct.charge(-cost)
		}
		return errStreamClosed
	}
	var slow *slowClient
	if w := e.writer; w != nil && !last && e.next-w.cursor >= streamBuffer {
		now := time.Now()
		if e.fullSince.IsZero() {
			e.fullSince = now
		}
		if now.Sub(e.fullSince) < e.timeout {
			e.mu.Unlock()
			if acct != nil {
				acct.charge(-cost)
			}
			return errStreamFull
		}
		slow = &slowClient{fmt.Sprintf("its queue of %d messages stayed full for %s", streamBuffer, e.timeout)}
		e.drop(w, slow)
	}
	e.makeRoom(cost)
	e.buf = append(e.buf, event{seq: e.next, data: data})
	e.next++
	e.bytes += cost // already charged to acct
	if len(e.buf) > streamBuffer+1 {
		e.dropOldest(1, limitEvents)
	}
	e.ended = last
	if w := e.writer; w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	e.mu.Unlock()
	if slow != nil {
		e.gaveUp(slow)
	}
	return nil
}

// giveUp gives a too slow writer up.
func (e *events) giveUp(w *writer, reason *slowClient) {
	e.mu.Lock()
	mine := e.writer == w
	e.drop(w, reason)
	e.mu.Unlock()
	if mine {
		e.gaveUp(reason)
	}
}

// gaveUp logs a stream's connection given up because its client did not
// read it, and cancels what the stream's closing cancels.
func (e *events) gaveUp(reason *slowClient) {
	attrs := make([]any, 0, 8)
	if e.session != "" {
		attrs = append(attrs, "session", e.session, "stream", e.id)
	}
	if e.request != "" {
		attrs = append(attrs, "request", e.request)
	}
	attrs = append(attrs, "reason", reason.reason)
	e.log.Warn("closed a slow client's stream; the client's other streams and every other client are unaffected", attrs...)
	e.tel.SlowClientDisconnect()
	if e.onSlow != nil {
		e.onSlow()
	}
}

// attach makes a new connection the stream's writer, from the event of
// sequence number from (0 for a new stream: from its start). A writer
// already attached is given up.
func (e *events) attach(from uint64) *writer {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writer != nil {
		e.drop(e.writer, nil)
	}
	w := &writer{cursor: from, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	e.writer = w
	e.fullSince = time.Time{}
	return w
}

// drop gives a writer up; e.mu is held.
func (e *events) drop(w *writer, reason error) {
	if e.writer != w {
		return
	}
	e.writer = nil
	e.fullSince = time.Time{}
	w.reason = reason
	close(w.gone)
}

// stop gives up the writer, if any, without a reason.
func (e *events) stop() {
	e.mu.Lock()
	if e.writer != nil {
		e.drop(e.writer, nil)
	}
	e.mu.Unlock()
}

// detach gives w up, without a reason, if it is still the writer: a
// connection that ends (its client went away, its session or gateway
// closed) must not give up a writer that resumed the stream meanwhile.
func (e *events) detach(w *writer) {
	e.mu.Lock()
	e.drop(w, nil)
	e.mu.Unlock()
}

// pending returns the events w has not written yet and whether they end
// the stream; ok is false once w is given up.
func (e *events) pending(w *writer) (batch []event, last, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writer != w {
		return nil, false, false
	}
	i := 0
	if len(e.buf) > 0 && w.cursor > e.buf[0].seq {
		i = int(min(w.cursor-e.buf[0].seq, uint64(len(e.buf))))
	}
	return slices.Clone(e.buf[i:]), e.ended, true
}

// wrote records that w wrote the events before sequence number next; it
// is false when w was given up meanwhile (another connection resumed the
// stream): then what w wrote counts for nothing.
func (e *events) wrote(w *writer, next uint64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writer != w {
		return false
	}
	w.cursor = next
	e.delivered = max(e.delivered, next)
	if e.next-next < streamBuffer {
		e.fullSince = time.Time{}
	}
	return true
}

// serve writes the stream's events on w until the last one is written
// (complete), the client goes away (ctx), done1 or done2 is closed, or the
// connection is given up. Messages from more (a session's outbox) are
// added as they come; an outbox that stays full for the slow client
// timeout gives the connection up too. err is a *slowClient when the
// client was too slow.
func (e *events) serve(ctx context.Context, rw http.ResponseWriter, wr *writer, more <-chan []byte, done1, done2 <-chan struct{}) (complete bool, err error) {
	rc := http.NewResponseController(rw)
	defer rc.SetWriteDeadline(time.Time{}) //nolint:errcheck // the connection may carry another request
	var moreFull time.Time                 // since when more has been seen full after a write
	// A stream with nothing to say for a while gets a comment, which
	// clients ignore, so that a proxy's read timeout does not cut it.
	var keepalive <-chan time.Time
	if e.keepalive > 0 {
		t := time.NewTicker(e.keepalive)
		defer t.Stop()
		keepalive = t.C
	}
	wrote := false // since the last tick
	failed := func(err error) (bool, error) {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			slow := &slowClient{fmt.Sprintf("a write made no progress within %s", e.timeout)}
			e.giveUp(wr, slow)
			return false, slow
		}
		e.detach(wr) // the client went away
		return false, nil
	}
	for {
		batch, last, ok := e.pending(wr)
		if !ok {
			return false, wr.reason
		}
		if len(batch) > 0 {
			if err := e.write(rw, rc, batch); err != nil {
				return failed(err)
			}
			wrote = true
			if !e.wrote(wr, batch[len(batch)-1].seq+1) {
				return false, wr.reason // resumed elsewhere: that connection writes the rest
			}
			if more != nil && len(more) == cap(more) {
				now := time.Now()
				if moreFull.IsZero() {
					moreFull = now
				} else if now.Sub(moreFull) >= e.timeout {
					slow := &slowClient{fmt.Sprintf("its queue of %d messages stayed full for %s", cap(more), e.timeout)}
					e.giveUp(wr, slow)
					return false, slow
				}
			} else {
				moreFull = time.Time{}
			}
		}
		if last {
			return true, nil
		}
		if len(batch) > 0 {
			continue // more may have come meanwhile
		}
		select {
		case <-wr.wake:
		case <-keepalive:
			if !wrote {
				if err := e.writeRaw(rw, rc, keepaliveComment); err != nil {
					return failed(err)
				}
			}
			wrote = false
		case <-wr.gone:
			return false, wr.reason
		case msg := <-more:
			if e.add(msg, false) == nil {
				// Take what else is waiting, to write it in one go.
			drain:
				for range streamBuffer / 4 {
					select {
					case msg := <-more:
						if e.add(msg, false) != nil {
							break drain
						}
					default:
						break drain
					}
				}
			}
		case <-ctx.Done():
			e.detach(wr)
			return false, nil
		case <-done1:
			e.detach(wr)
			return false, nil
		case <-done2:
			e.detach(wr)
			return false, nil
		}
	}
}

// keepaliveComment is what an idle stream gets every StreamKeepalive: an
// SSE comment, which clients skip.
var keepaliveComment = []byte(": keepalive\n\n")

// write writes a batch of events with a deadline: a client that does not
// take them within the slow client timeout loses its stream.
func (e *events) write(rw http.ResponseWriter, rc *http.ResponseController, batch []event) error {
	size := 0
	for _, ev := range batch {
		size += len(ev.data) + 48
	}
	b := make([]byte, 0, size)
	for _, ev := range batch {
		b = e.appendEvent(b, ev)
	}
	return e.writeRaw(rw, rc, b)
}

// writeRaw writes and flushes b with the slow client deadline.
func (e *events) writeRaw(rw http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(e.timeout)) // unsupported: the write is not bounded
	if _, err := rw.Write(b); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil {
		return err
	}
	// A buffering ResponseWriter reports a failed flush on its next write.
	_, err := rw.Write(nil)
	return err
}

// appendEvent appends one SSE event: its id on a resumable stream, the
// priming event (an id, a retry field and empty data) at its start.
func (e *events) appendEvent(b []byte, ev event) []byte {
	if e.id != "" {
		b = append(b, "id: "...)
		b = append(b, e.id...)
		b = append(b, '-')
		b = strconv.AppendUint(b, ev.seq, 10)
		b = append(b, '\n')
	}
	if ev.data == nil {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, retryMillis, 10)
		return append(b, "\ndata: \n\n"...)
	}
	b = append(b, "event: message\ndata: "...)
	b = append(b, ev.data...)
	return append(b, "\n\n"...)
}

// parseEventID splits an event id into its stream's id and sequence number.
func parseEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 1 || (id[0] != 'p' && id[0] != 'g') {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(id[1:i], 10, 64); err != nil {
		return "", 0, false
	}
	return id[:i], seq, true
}
