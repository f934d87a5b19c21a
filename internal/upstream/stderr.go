package upstream

import (
	"bufio"
	"io"
	"sync"
	"unicode/utf8"
)

const (
	stderrTailLines    = 20
	stderrTailLineSize = 1024 // longer lines are cut in the tail (not in the forwarded stream)
	stderrReadSize     = 4096 // a longer line is forwarded in pieces of this size
)

// stderrMu serializes the stderr lines of every upstream, so that several
// sharing one writer never interleave within a line.
var stderrMu sync.Mutex

// forwardStderr copies r to w line by line, each line prefixed, and keeps the
// last lines in tail. It returns when r ends.
func forwardStderr(r io.Reader, w io.Writer, prefix string, tail *ring) {
	br := bufio.NewReaderSize(r, stderrReadSize)
	buf := make([]byte, 0, 256)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			line := trimNewline(chunk)
			tail.add(line)
			buf = append(append(append(buf[:0], prefix...), line...), '\n')
			stderrMu.Lock()
			w.Write(buf) //nolint:errcheck // a failing log writer must not stop the server
			stderrMu.Unlock()
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// ring keeps the last lines of a process's stderr.
type ring struct {
	mu   sync.Mutex
	buf  [stderrTailLines]string
	next int
	full bool
}

func (r *ring) add(line []byte) {
	if len(line) > stderrTailLineSize {
		cut := stderrTailLineSize
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = append(line[:cut:cut], "…"...)
	}
	s := string(line)
	r.mu.Lock()
	r.buf[r.next] = s
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// lines returns the kept lines, oldest first.
func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.buf[:r.next]...)
	}
	out := make([]string, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
