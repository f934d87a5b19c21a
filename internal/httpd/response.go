package httpd

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

// response is the http.ResponseWriter (and http.Flusher) of a request
// served here. A response the handler finishes without flushing goes out in
// one write, head and body, with its Content-Length; once the handler
// flushes, the head goes out and the body follows in chunks (or as the
// Content-Length the handler set). Informational (1xx) statuses are not
// sent, and the head is the header as it is when first written.
type response struct {
	c           *conn
	header      http.Header
	status      int
	wroteHeader bool
	sent        bool // the head has been written
	chunked     bool
	closeAfter  bool   // the connection closes after this response
	buf         []byte // body not yet written (chunk-framed once chunked)
	bp          *[]byte
	err         error
}

// flushAt is the body size past which a response starts going out before
// the handler returns.
const flushAt = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// newResponse readies the connection's response for req. The handler must
// not use it after it returns, as with net/http.
func (c *conn) newResponse(req *http.Request) *response {
	bp := bufPool.Get().(*[]byte)
	header := c.resp.header
	if header == nil {
		header = make(http.Header, 4)
	}
	clear(header)
	c.resp = response{c: c, header: header, buf: (*bp)[:0], bp: bp, closeAfter: req.Close}
	return &c.resp
}

func (w *response) Header() http.Header { return w.header }

// SetWriteDeadline sets the connection's write deadline, for
// http.ResponseController: a write not done by then fails (a streaming
// handler bounds how long a client that stops reading can hold it). As
// with net/http, the deadline outlives the request: reset it when done.
func (w *response) SetWriteDeadline(t time.Time) error { return w.c.rwc.SetWriteDeadline(t) }

func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic("httpd: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.wroteHeader || code < 200 {
		return
	}
	w.wroteHeader = true
	w.status = code
}

func (w *response) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if len(p) >= flushAt {
		// A large piece (a long list's page) goes out as it is, after what
		// is buffered, instead of being copied into buf first.
		if _, ok := w.header["Content-Type"]; !ok && !w.sent && len(w.buf) == 0 {
			w.header["Content-Type"] = []string{http.DetectContentType(p)}
		}
		w.Flush()
		w.writeThrough(p)
		return len(p), w.err
	}
	if w.chunked {
		w.buf = appendChunk(w.buf, p)
	} else {
		w.buf = append(w.buf, p...)
	}
	if len(w.buf) >= flushAt {
		w.Flush()
	}
	return len(p), w.err
}

// Flush writes the head, if it has not gone yet, and the body so far.
func (w *response) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.sendHead(false)
		return
	}
	w.writeBuf()
}

// finish completes the response after the handler returned.
func (w *response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case !w.sent:
		w.sendHead(true)
	case w.chunked:
		w.buf = append(w.buf, "0\r\n\r\n"...)
		w.writeBuf()
	default:
		w.writeBuf()
	}
	w.release()
	return w.err
}

// release returns the buffer; the response is not used after.
func (w *response) release() {
	if w.bp != nil && cap(w.buf) <= flushAt*2 {
		*w.bp = w.buf[:0]
		bufPool.Put(w.bp)
	}
	w.bp, w.buf = nil, nil
}

// sendHead writes the status line and header, then the body buffered so
// far. final: the handler has returned, so the body is complete.
func (w *response) sendHead(final bool) {
	w.sent = true
	h := w.header
	if w.c.srv.closing.Load() || httpfield.HasToken(h["Connection"], "close") {
		w.closeAfter = true
	}
	var declared string
	if v := h["Content-Length"]; len(v) > 0 {
		declared = v[0]
	}
	hbp := bufPool.Get().(*[]byte)
	b := append((*hbp)[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	if text := http.StatusText(w.status); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(w.status), 10)
	}
	b = append(b, "\r\n"...)
	b = appendFields(b, h)
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, httpDate()...)
		b = append(b, "\r\n"...)
	}
	if bodyAllowed(w.status) {
		if _, ok := h["Content-Type"]; !ok && len(w.buf) > 0 {
			b = append(b, "Content-Type: "...)
			b = append(b, http.DetectContentType(w.buf)...)
			b = append(b, "\r\n"...)
		}
		switch {
		case final:
			b = append(b, "Content-Length: "...)
			b = strconv.AppendInt(b, int64(len(w.buf)), 10)
			b = append(b, "\r\n"...)
		case declared != "":
			b = append(b, "Content-Length: "...)
			b = append(b, declared...)
			b = append(b, "\r\n"...)
		default:
			w.chunked = true
			b = append(b, "Transfer-Encoding: chunked\r\n"...)
			if len(w.buf) > 0 {
				w.buf = appendChunk(nil, w.buf)
			}
		}
	}
	if w.closeAfter {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)

	if len(w.buf) <= 16<<10 {
		b = append(b, w.buf...)
		_, w.err = w.c.write(b)
	} else {
		bufs := net.Buffers{b, w.buf}
		_, w.err = bufs.WriteTo(w.c.rwc)
	}
	w.buf = w.buf[:0]
	*hbp = b[:0]
	bufPool.Put(hbp)
}

// writeThrough writes p on the connection, framed as a chunk when the
// body is chunked, without copying it.
func (w *response) writeThrough(p []byte) {
	if w.err != nil {
		return
	}
	if !w.chunked {
		_, w.err = w.c.write(p)
		return
	}
	size := strconv.AppendInt(make([]byte, 0, 18), int64(len(p)), 16)
	bufs := net.Buffers{append(size, "\r\n"...), p, []byte("\r\n")}
	_, w.err = bufs.WriteTo(w.c.rwc)
}

func (w *response) writeBuf() {
	if len(w.buf) > 0 && w.err == nil {
		_, w.err = w.c.write(w.buf)
	}
	w.buf = w.buf[:0]
}

// appendFields appends the header's fields in sorted order, less those
// this package writes itself; names net/http would not send are skipped and
// line breaks in values become spaces, as net/http does.
func appendFields(b []byte, h http.Header) []byte {
	var small [8]string
	keys := small[:0]
	for k := range h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		if httpfield.ValidName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if strings.ContainsAny(v, "\r\n") {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

func appendChunk(b, p []byte) []byte {
	if len(p) == 0 {
		return b // an empty chunk would end the body
	}
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// bodyAllowed reports whether a response of this status has a body.
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// httpDate is the Date header's value, formatted once a second.
func httpDate() string {
	now := time.Now()
	if d := cachedDate.Load(); d != nil && d.sec == now.Unix() {
		return d.text
	}
	d := &dateText{sec: now.Unix(), text: now.UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	sec  int64
	text string
}

var cachedDate atomic.Pointer[dateText]
