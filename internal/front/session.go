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
// session, its activity (for expiry) and its resumable SSE streams.
type session struct {
	id   string
	gs   *gateway.Session
	busy atomic.Int32 // requests in progress, open GET streams included
	last atomic.Int64 // when a request last began or ended, Unix nanoseconds

	mu      sync.Mutex
	n       uint64             // streams opened
	streams map[string]*events // resumable streams by id
	order   []string           // their ids, oldest first
}

// begin and end bracket each request of the session, for its expiry.
func (s *session) begin() {
	s.busy.Add(1)
	s.last.Store(time.Now().UnixNano())
}

func (s *session) end() {
	s.last.Store(time.Now().UnixNano())
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

// keep records a stream for resumption.
func (s *session) keep(e *events) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams == nil {
		s.streams = map[string]*events{}
	}
	s.streams[e.id] = e
	s.order = append(s.order, e.id)
	if len(s.order) > maxKeptStreams {
		delete(s.streams, s.order[0])
		s.order = slices.Delete(s.order, 0, 1)
	}
}

// forget drops a stream that needs no resumption: its last event was written.
func (s *session) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.streams[id]; ok {
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
