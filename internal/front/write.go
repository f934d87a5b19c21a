package front

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

var contentTypeJSON = []string{"application/json"}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

var resultEnd = []byte("}")

// bigResult is the size past which a result is written as it is, after the
// envelope's start, instead of being copied into a pooled buffer with it:
// a long list's page (64 servers × 100 tools is ~1.7 MB) would otherwise be
// copied once more and the buffer, grown, kept in the pool.
const bigResult = 64 << 10

// autoLengthBytes is what net/http buffers of a response before it must
// choose between a Content-Length and chunked encoding: for a body this
// size or less, written by a handler that returns, net/http sets the
// Content-Length itself, without allocating.
const autoLengthBytes = 2048

// writeReply writes a plain JSON response.
func writeReply(w http.ResponseWriter, status int, id json.RawMessage, reply gateway.Reply) {
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Error == nil && len(reply.Result) > bigResult {
		head := wire.AppendResultStart(make([]byte, 0, 64), id)
		h := w.Header()
		h["Content-Type"] = contentTypeJSON
		h["Content-Length"] = []string{strconv.Itoa(len(head) + len(reply.Result) + 1)}
		w.WriteHeader(status)
		_, _ = w.Write(head)
		_, _ = w.Write(reply.Result)
		_, _ = w.Write(resultEnd)
		return
	}
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	if reply.Error != nil {
		b = wire.AppendRawError(b, id, reply.Error)
	} else {
		b = wire.AppendResult(b, id, reply.Result)
	}
	h := w.Header()
	h["Content-Type"] = contentTypeJSON // shared, never modified: no allocation per reply
	if len(b) > autoLengthBytes {
		// Beyond net/http's own buffer it would send the body chunked and
		// write its last chunk apart: with the length given, a body larger
		// than the connection's buffer costs one write less.
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
	*bp = b
	bufPool.Put(bp)
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *wire.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(wire.AppendError(nil, id, e))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
