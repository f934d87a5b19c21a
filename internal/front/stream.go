package front

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// stream is the HTTP response of one client request. It answers with plain
// JSON unless a message belonging to the request (progress, a log message, a
// request to the client) comes before the answer: then it switches to an SSE
// stream, sends those messages as events and the answer as the last one.
// Plain JSON costs far less than an SSE stream, and most calls have no
// interim message.
type stream struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	sse    bool // headers written for an event stream
	closed bool // the answer has been written; the ResponseWriter is no longer ours
	status int  // status of a plain JSON answer; 0 means 200
}

var errStreamClosed = errors.New("the request's response is complete")

// Send writes an interim message, switching the response to SSE first.
func (s *stream) Send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if !s.sse {
		s.sse = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(http.StatusOK)
	}
	if err := writeEvent(s.w, msg); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// reply writes the answer and closes the stream.
func (s *stream) reply(id json.RawMessage, r gateway.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if !s.sse {
		writeReply(s.w, s.status, id, r)
		return
	}
	var b []byte
	if r.Error != nil {
		b = wire.AppendRawError(nil, id, r.Error)
	} else {
		b = wire.AppendResult(nil, id, r.Result)
	}
	_ = writeEvent(s.w, b)
}

// close marks the stream finished without an answer (the client went away).
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
