package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// sseFieldSlack is room beyond the data limit for a line's field name.
const sseFieldSlack = 64

// sseEvent is one server-sent event.
type sseEvent struct {
	name string // "" for the default, "message"
	data []byte // owned by the event; nil when oversize
	// oversize: the data was longer than the reader's limit and was dropped.
	oversize bool
	// id is the top-level "id" of an oversize JSON-RPC message, when the
	// reader was asked to look for it and found it.
	id json.RawMessage
}

// sseReader reads a text/event-stream as the WHATWG specification parses
// it: lines end in LF, CRLF or CR; "data" lines of one event are joined with
// LF; "id" sets the last event id; "retry" the reconnection time; comments
// and unknown fields are ignored; an event cut off by the end of the stream
// is dropped.
type sseReader struct {
	br     *bufio.Reader
	src    eofReader // what br reads
	limit  int       // most data bytes kept for one event
	findID bool      // look for the JSON-RPC id of an oversize event

	lastID   string        // the last event id seen, for Last-Event-ID
	retry    time.Duration // the last retry field seen; 0 if none
	skipLF   bool          // the previous line ended in CR: a following LF belongs to it
	received bool          // some event with data was read
	ev       sseEvent      // the event next returns
	hasData  bool          // ev has had a data line
	scan     *idScanner    // looks for the id of an oversize ev, when findID
	messages eventMessages // its JSON-RPC messages, as the session reads them
}

const sseBufferSize = 4 << 10

func newSSEReader(r io.Reader, limit int, findID bool) *sseReader {
	sr := &sseReader{src: eofReader{r: r}, limit: limit, findID: findID}
	sr.br = bufio.NewReaderSize(&sr.src, sseBufferSize)
	return sr
}

// eofReader passes on the reads of a stream and notes its end.
type eofReader struct {
	r   io.Reader
	eof bool // r has returned io.EOF
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// ended reports whether the stream has been read to its end (what is left
// of it, if anything, is in the reader's buffer).
func (r *sseReader) ended() bool { return r.src.eof }

// responseReaders recycles the readers of calls' response streams, one per
// call: their buffer is most of what a call costs in memory.
var responseReaders sync.Pool

// getResponseReader returns a reader of a call's response stream; give it
// back with putResponseReader once its events have been handled.
func getResponseReader(r io.Reader, limit int) *sseReader {
	sr, _ := responseReaders.Get().(*sseReader)
	if sr == nil {
		return newSSEReader(r, limit, false)
	}
	sr.src = eofReader{r: r}
	sr.br.Reset(&sr.src)
	sr.limit = limit
	return sr
}

func putResponseReader(sr *sseReader) {
	sr.br.Reset(nil)
	*sr = sseReader{br: sr.br}
	responseReaders.Put(sr)
}

// next returns the next event that carries data; the event is valid until
// the next call, its data for good. Its error is the stream's: io.EOF at its
// end.
func (r *sseReader) next() (*sseEvent, error) {
	ev := &r.ev
	*ev = sseEvent{}
	r.scan, r.hasData = nil, false
	for {
		line, long, err := r.readLine(r.limit - len(ev.data) + sseFieldSlack)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 && !long { // the end of an event
			if !r.hasData {
				*ev = sseEvent{}
				r.scan = nil
				continue
			}
			if ev.oversize {
				ev.data = nil
				if r.scan != nil {
					ev.id = r.scan.id
				}
			}
			r.received = true
			return ev, nil
		}
		field, value := splitField(line)
		if string(field) == "data" {
			r.data(value, long)
		} else {
			r.field(field, value, long)
		}
	}
}

// data adds a data line (value, which is the reader's buffer; long: the
// line goes on past it) to the event being read. Past the limit the event
// is oversize: its data is dropped, and scanned for its JSON-RPC id when
// the reader was asked to find it.
func (r *sseReader) data(value []byte, long bool) {
	ev := &r.ev
	if ev.oversize {
		var sink func([]byte)
		if r.scan != nil {
			sink = r.scan.write
			r.scan.write([]byte{'\n'})
			r.scan.write(value)
		}
		if long {
			r.drainLine(sink)
		}
		return
	}
	if r.hasData {
		ev.data = append(ev.data, '\n')
	}
	r.hasData = true
	if long || len(ev.data)+len(value) > r.limit {
		ev.oversize = true
		if r.findID {
			r.scan = &idScanner{}
			r.scan.write(ev.data)
			r.scan.write(value)
			if long {
				r.drainLine(r.scan.write) // the rest of this line
			}
		} else if long {
			r.drainLine(nil)
		}
		ev.data = nil
		return
	}
	// value is the reader's buffer: the data is copied out.
	if ev.data == nil {
		ev.data = append(make([]byte, 0, len(value)), value...)
	} else {
		ev.data = append(ev.data, value...)
	}
}

// field handles a line of a field other than data.
func (r *sseReader) field(field, value []byte, long bool) {
	switch {
	case long:
		r.drainLine(nil) // no other field is kept past the buffer
	case string(field) == "event" && string(value) == "message":
		r.ev.name = "message"
	case string(field) == "event":
		r.ev.name = string(value)
	case string(field) == "id" && bytes.IndexByte(value, 0) < 0:
		if string(value) != r.lastID {
			r.lastID = string(value)
		}
	case string(field) == "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
			r.retry = time.Duration(ms) * time.Millisecond
		}
	}
}

// reset continues reading on a resumed stream, keeping the last event id
// and retry.
func (r *sseReader) reset(body io.Reader) {
	r.src = eofReader{r: body}
	r.br.Reset(&r.src)
	r.skipLF, r.received = false, false
}

// splitField splits "field: value" (one space after the colon is dropped);
// both are line's bytes.
func splitField(line []byte) (field, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	value = line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:i], value
}

// readLine reads one line, without its end, of at most maxLen bytes. A
// longer line is returned cut with long set; the rest of it stays to be read
// by drainLine. The line may be the reader's buffer: it is valid until the
// next read.
func (r *sseReader) readLine(maxLen int) (line []byte, long bool, err error) {
	// Most lines are whole in the buffer: return them where they are.
	if r.skipLF && r.br.Buffered() > 0 {
		if b, _ := r.br.Peek(1); b[0] == '\n' {
			r.br.Discard(1) //nolint:errcheck // buffered
		}
		r.skipLF = false
	}
	if buf, _ := r.br.Peek(r.br.Buffered()); len(buf) > 0 && !r.skipLF {
		if i := bytes.IndexAny(buf, "\r\n"); i >= 0 && i <= maxLen {
			r.br.Discard(i + 1) //nolint:errcheck // buffered
			r.skipLF = buf[i] == '\r'
			return buf[:i:i], false, nil
		}
	}
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				if err == io.EOF && len(line) > 0 {
					return nil, false, io.ErrUnexpectedEOF
				}
				return nil, false, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1) //nolint:errcheck // buffered
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if line == nil && i >= 0 && i <= maxLen {
			// The line came whole with this read (the first of an event
			// that starts a read does): it is returned where it is.
			r.br.Discard(i + 1) //nolint:errcheck // buffered
			r.skipLF = buf[i] == '\r'
			return buf[:i:i], false, nil
		}
		chunk := buf
		if i >= 0 {
			chunk = buf[:i]
		}
		if room := maxLen - len(line); len(chunk) > room {
			line = append(line, chunk[:room]...)
			r.br.Discard(room) //nolint:errcheck // buffered
			return line, true, nil
		}
		line = append(line, chunk...)
		if i < 0 {
			r.br.Discard(len(buf)) //nolint:errcheck // buffered
			continue
		}
		r.br.Discard(i + 1) //nolint:errcheck // buffered
		if buf[i] == '\r' {
			r.skipLF = true
		}
		if line == nil {
			line = []byte{}
		}
		return line, false, nil
	}
}

// drainLine reads the rest of a line cut by readLine, passing it to sink if
// not nil.
func (r *sseReader) drainLine(sink func([]byte)) {
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return // the next read reports the error
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if sink != nil {
				sink(buf)
			}
			r.br.Discard(len(buf)) //nolint:errcheck // buffered
			continue
		}
		if sink != nil {
			sink(buf[:i])
		}
		r.br.Discard(i + 1) //nolint:errcheck // buffered
		if buf[i] == '\r' {
			r.skipLF = true
		}
		return
	}
}

// idScanner finds the top-level "id" member of a JSON object streamed
// through it, keeping nothing else: how an oversize response on the legacy
// transport's single stream is matched to its call.
type idScanner struct {
	depth      int
	inString   bool
	escaped    bool
	expectKey  bool
	readingKey bool
	key        []byte
	lastKey    string
	capturing  bool // the value of "id" is being read
	value      []byte
	done       bool
	id         json.RawMessage
}

const maxIDBytes = 256

func (s *idScanner) write(p []byte) {
	for _, c := range p {
		if s.done {
			return
		}
		s.step(c)
	}
}

func (s *idScanner) step(c byte) {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
		}
		switch {
		case s.capturing:
			s.value = append(s.value, c)
			if !s.inString {
				s.finish()
			}
		case s.readingKey && s.inString:
			s.key = append(s.key, c)
		case s.readingKey:
			s.readingKey, s.lastKey = false, string(s.key)
		}
		s.checkLength()
		return
	}
	switch c {
	case '"':
		s.inString = true
		switch {
		case s.capturing:
			s.value = append(s.value, c)
		case s.depth == 1 && s.expectKey:
			s.readingKey, s.key = true, s.key[:0]
		}
	case '{', '[':
		s.capturing = false // an id is never an object or array
		s.depth++
		s.expectKey = s.depth == 1 && c == '{'
	case '}', ']':
		if s.depth == 1 && s.capturing {
			s.finish()
		}
		s.depth--
	case ':':
		if s.depth == 1 {
			s.expectKey = false
			if s.lastKey == "id" {
				s.capturing, s.value = true, s.value[:0]
			}
		}
	case ',':
		if s.depth == 1 {
			if s.capturing {
				s.finish()
			}
			s.expectKey, s.lastKey = true, ""
		}
	case ' ', '\t', '\n', '\r':
		if s.capturing && len(s.value) > 0 {
			s.finish()
		}
	default:
		if s.capturing {
			s.value = append(s.value, c)
		}
	}
	s.checkLength()
}

// checkLength gives up on an id too long to be one of ours.
func (s *idScanner) checkLength() {
	if len(s.value) > maxIDBytes {
		s.capturing, s.value = false, nil
	}
	if len(s.key) > maxIDBytes {
		s.readingKey, s.key = false, nil
	}
}

func (s *idScanner) finish() {
	s.capturing = false
	if len(s.value) > 0 && json.Valid(s.value) {
		s.id, s.done = bytes.Clone(s.value), true
	}
}
