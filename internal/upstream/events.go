package upstream

import (
	"errors"
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The JSON-RPC messages of an event stream, whichever framing opened it,
// and what an event over the size limit does to the call it answers.

// consume reads events from a stream and dispatches their messages. With
// awaited set (a call's response stream) it returns once that response has
// been delivered, answered true; otherwise when the stream ends.
func (s *session) consume(sr *sseReader, awaited uint64) (answered bool, err error) {
	sr.messages = eventMessages{s: s, sr: sr, awaited: awaited}
	answered, err = s.rpc.Serve(&sr.messages, awaited)
	if err == errAwaitedTooLarge {
		return true, nil
	}
	return answered, err
}

// eventMessages reads the JSON-RPC messages of an event stream
// (rpc.Reader): "message" events; others are skipped, and so is an event
// that is not JSON-RPC, with a warning. An event over the size limit fails
// the call it answers (see oversize); when that is the awaited call, the
// stream's reading ends with errAwaitedTooLarge.
type eventMessages struct {
	s       *session
	sr      *sseReader
	awaited uint64
	msg     wire.Message
}

var errAwaitedTooLarge = errors.New("the awaited response is over the size limit")

func (m *eventMessages) Read() (*wire.Message, error) {
	for {
		ev, err := m.sr.next()
		if err != nil {
			return nil, err
		}
		if ev.name != "" && ev.name != "message" {
			continue
		}
		if ev.oversize {
			if m.s.oversize(ev, m.awaited) {
				return nil, errAwaitedTooLarge
			}
			continue
		}
		if len(ev.data) == 0 {
			// A priming event (an id, maybe a retry, empty data): servers
			// send it so a client can resume the stream, and carry no message.
			continue
		}
		if err := wire.ParseInto(&m.msg, ev.data); err != nil {
			m.s.h.log.Warn(fmt.Sprintf("mcp server %q sent an event that is not a JSON-RPC message; ignored", m.s.name()), "err", err, "data", preview(ev.data))
			continue
		}
		return &m.msg, nil
	}
}

// oversize handles an event longer than MaxResponseBytes: it fails the call
// it answers (the stream's own call, or the one its id names on the legacy
// stream) and tells the server to stop working on it. It reports whether the
// awaited call was failed.
func (s *session) oversize(ev *sseEvent, awaited uint64) bool {
	id := awaited
	if id == 0 {
		id, _ = rpc.ParseID(ev.id)
	}
	return s.rpc.Oversize(id) && awaited != 0
}
