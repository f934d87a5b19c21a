package attach

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
)

// expectedRefusal is the gateway's own answer to a server that asks for
// the client's roots while no client call is in flight on it: what the
// filesystem server does as soon as it starts, before any client connected.
// The server keeps its own directories then, so the line it writes about it
// ("Failed to request initial roots from client: ... roots/list refused: no
// client call is in flight on mcp server "<name>" ...") is expected, not a
// failure. It is matched with the server's own name, so a line quoting
// another server's refusal still shows.
const expectedRefusal = "roots/list refused: no client call is in flight on mcp server %q"

// quietStderr forwards a server's stderr lines (one per Write, prefixed by
// the upstream) to w, except those echoing the expected refusal of its
// roots/list, which go to the gateway's log at debug level.
type quietStderr struct {
	w       io.Writer
	log     *slog.Logger
	server  string
	refusal []byte // expectedRefusal for server
}

func quietExpected(w io.Writer, log *slog.Logger, server string) io.Writer {
	if w == nil {
		return nil
	}
	return &quietStderr{w: w, log: log, server: server, refusal: fmt.Appendf(nil, expectedRefusal, server)}
}

func (q *quietStderr) Write(p []byte) (int, error) {
	if bytes.Contains(p, q.refusal) {
		q.log.Debug("the server asked for the client's roots while no client call was in flight on it (it does so at start-up); refused, so it keeps its own", "server", q.server, "stderr", string(bytes.TrimRight(p, "\n")))
		return len(p), nil
	}
	return q.w.Write(p)
}
