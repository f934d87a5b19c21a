package front

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// maxKeptStreams bounds the resumable streams a session keeps; beyond it
// the oldest can no longer be resumed.
const maxKeptStreams = 32

// session is a session-era client as the front sees it: its gateway
// session, its activity (for expiry and eviction), its tenant and its
// resumable SSE streams.
type session struct {
	id     string
	gs     *gateway.Session
	h      *Handler
	tenant *tenant
	busy   atomic.Int32 // requests in progress, open GET streams included
	last   atomic.Int64 // when a request last began or ended, Unix nanoseconds

	// calls and lastCall are what eviction reads: a session whose client
	// only listens on a GET stream is idle, one with a POST in progress
	// is not.
	calls    atomic.Int32 // POST requests in progress
	lastCall atomic.Int64 // when a POST last began or ended (or the session began), Unix nanoseconds

	bytes atomic.Int64 // replay bytes its streams hold

	mu      sync.Mutex
	n       uint64             // streams opened
	streams map[string]*events // resumable streams by id
	order   []string           // their ids, oldest first
	ended   bool               // removed from the handler: its streams count against no budget
}

// begin and end bracket each request of the session, for its expiry;
// call is true for a POST, which also counts for eviction.
func (s *session) begin(call bool) {
	now := time.Now().UnixNano()
	s.busy.Add(1)
	s.last.Store(now)
	if call {
		s.calls.Add(1)
		s.lastCall.Store(now)
	}
}

func (s *session) end(call bool) {
	now := time.Now().UnixNano()
	s.last.Store(now)
	if call {
		s.lastCall.Store(now)
		s.calls.Add(-1)
	}
	s.busy.Add(-1)
}

// logID is the session's id as log lines show it: enough to tell sessions
// apart, not enough to use it.
func (s *session) logID() string { return s.id[:8] }

// newStreamID names a new stream: kind 'p' for a POST's response, 'g' for
// a GET stream.
func (s *session) newStreamID(kind byte) string {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	return string(kind) + strconv.FormatUint(n, 10)
}

// keep records a stream for resumption; from now on its bytes count
// against the session's replay budget.
func (s *session) keep(e *events) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.streams == nil {
		s.streams = map[string]*events{}
	}
	s.streams[e.id] = e
	s.order = append(s.order, e.id)
	e.count(s)
	if len(s.order) > maxKeptStreams {
		s.streams[s.order[0]].uncount()
		delete(s.streams, s.order[0])
		s.order = slices.Delete(s.order, 0, 1)
	}
}

// forget drops a stream that needs no resumption: its last event was written.
func (s *session) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.streams[id]; ok {
		e.uncount()
		delete(s.streams, id)
		s.order = slices.DeleteFunc(s.order, func(v string) bool { return v == id })
	}
}

// lookup returns the resumable stream of that id, or nil.
func (s *session) lookup(id string) *events {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// release gives back the replay bytes of a session that has ended.
func (s *session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for _, e := range s.streams {
		e.uncount()
	}
	s.streams, s.order = nil, nil
}

// charge counts n more replay bytes (fewer when negative) for the session,
// its tenant and the handler.
func (s *session) charge(n int64) {
	s.bytes.Add(n)
	s.tenant.bytes.Add(n)
	s.h.replayBytes.Add(n)
}

// trim drops the oldest events of the session's streams, oldest stream
// first, until at least n bytes are freed or nothing more may be dropped
// (events a connected client has yet to read are its queue, not replay).
func (s *session) trim(n int64, limit string) int64 {
	s.mu.Lock()
	streams := make([]*events, 0, len(s.order))
	for _, id := range s.order {
		streams = append(streams, s.streams[id])
	}
	s.mu.Unlock()
	var freed int64
	for _, e := range streams {
		if freed >= n {
			break
		}
		freed += e.trim(n-freed, limit)
	}
	return freed
}

// tenantKey names whose sessions and replay bytes count together: in host
// mode a sandbox (its gateway), in a sandbox gateway a client identity
// (the clientInfo.name of the session's initialize).
type tenantKey struct {
	gw     *gateway.Gateway
	client string
}

// tenant is one tenant's holdings.
type tenant struct {
	key     tenantKey
	members map[*session]struct{} // its open sessions; under Handler.mu
	pending int                   // places taken by initializes in progress; under Handler.mu
	bytes   atomic.Int64          // replay bytes its sessions hold
}

// held is how many sessions the tenant holds, initializes in progress
// included; Handler.mu is held.
func (t *tenant) held() int { return len(t.members) + t.pending }

// idlest returns the tenant's session idle for longest: one without a call
// in progress; with anyBusy, failing that, the one whose call began
// first. nil when there is none. Handler.mu is held.
func (t *tenant) idlest(anyBusy bool) *session {
	var best, bestBusy *session
	for s := range t.members {
		if s.calls.Load() == 0 {
			if best == nil || s.lastCall.Load() < best.lastCall.Load() {
				best = s
			}
		} else if bestBusy == nil || s.lastCall.Load() < bestBusy.lastCall.Load() {
			bestBusy = s
		}
	}
	if best != nil || !anyBusy {
		return best
	}
	return bestBusy
}
