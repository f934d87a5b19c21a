package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/httpfield"
)

// errNotSimple: the response head is left to http.ReadResponse, nothing
// of it consumed.
var errNotSimple = errors.New("httpc: response head left to http.ReadResponse")

// readSimpleResponse is the fast path of reading a response head, for
// http.ReadResponse, which took ~9 % of the gateway's CPU under load: a
// string per line, key and value, textproto's line and header readers, the
// canonical keys. The heads MCP servers send are few and plain: a status
// line, half a dozen headers, a Content-Length or chunked body.
// readSimpleResponse reads those from the bytes already in br's buffer,
// with one string for the whole head (Status, the values and most keys are
// parts of it), and leaves every other head to http.ReadResponse.
//
// A head is simple, and read here, when it gives the same *http.Response as
// http.ReadResponse with none of net/http's special cases at work; each
// exclusion says which:
//   - the request is not HEAD (its response has no body whatever the head
//     says);
//   - the head, up to its empty line, is in the buffer: already, or after
//     the one read made when the buffer is empty (net/http waits for the
//     rest);
//   - every line ends in CRLF (net/http takes a bare LF as a line end too);
//   - the status line is "HTTP/1.1 ", a status in 200–599 but 204 and 304,
//     one space and a reason of printable ASCII (1xx heads come before
//     another; 204 and 304 have no body whatever the head says; net/http
//     takes other versions, with other Close rules, several spaces, which
//     it trims, and no reason);
//   - every header line is a token, a colon and a value without control
//     bytes but tab (net/http joins an obs-fold line, one starting with a
//     space or tab, to the previous one; keeps a name with a space before
//     the colon as it is; fails on invalid bytes);
//   - no field comes twice (net/http lists the values of a repeated field,
//     merges two equal Content-Length and fails on two different ones,
//     fails on two Transfer-Encoding, finds close in either of two
//     Connection fields);
//   - either a Content-Length of 1–18 digits (net/http fails on an empty,
//     signed or non-digit one and takes up to 2^63-1) or Transfer-Encoding:
//     chunked, which net/http removes from Header (it fails on any other
//     coding), but not both (it removes the length) and not neither (the
//     body then lasts until the connection closes, and it sets Close);
//   - Connection, if there, is "close" (Close set, the field removed) or
//     "keep-alive" (kept): net/http looks for the close token in a list, in
//     any case;
//   - no Trailer field (net/http moves it to resp.Trailer) and no Pragma
//     (Pragma: no-cache adds a Cache-Control).
//
// It returns the response, its Body reading br, as http.ReadResponse would,
// or errNotSimple for any other head. With nothing buffered it waits for
// the first bytes; a read failing before any fails as in
// http.ReadResponse.
func readSimpleResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if req != nil && req.Method == http.MethodHead {
		return nil, errNotSimple
	}
	if br.Buffered() == 0 {
		if _, err := br.Peek(1); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	buf, _ := br.Peek(br.Buffered())
	if !bytes.HasPrefix(buf, []byte("HTTP/1.1 ")) {
		return nil, errNotSimple
	}
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, errNotSimple
	}
	resp := parseHead(string(buf[:end+len("\r\n")]))
	if resp == nil {
		return nil, errNotSimple
	}
	br.Discard(end + len("\r\n\r\n"))
	resp.Request = req
	switch {
	case resp.ContentLength < 0:
		resp.Body = &chunkedBody{br: br, chunks: httputil.NewChunkedReader(br), resp: resp}
	case resp.ContentLength == 0:
		resp.Body = http.NoBody
	default:
		resp.Body = &lengthBody{br: br, left: resp.ContentLength}
	}
	return resp, nil
}

// parseHead parses a head without its final empty line into a response
// without Body and Request, or returns nil if it is not simple. Status and
// the header values are parts of head.
func parseHead(head string) *http.Response {
	statusLine, fields, ok := cutLine(head)
	if !ok {
		return nil
	}
	code, ok := parseStatusLine(statusLine)
	if !ok {
		return nil
	}
	// One array for all the values, one line each, as textproto does.
	values := make([]string, strings.Count(fields, "\n"))
	resp := &http.Response{
		Status:        statusLine[len("HTTP/1.1 "):],
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header, len(values)),
		ContentLength: -1,
	}
	for i := range values {
		var line string
		if line, fields, ok = cutLine(fields); !ok {
			return nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !httpfield.ValidName(name) || !httpfield.ValidValue(value) {
			return nil
		}
		value = trimOWS(value)
		key := canonicalKey(name)
		switch key {
		case "Content-Length":
			if resp.ContentLength, ok = parseLength(value); !ok {
				return nil
			}
		case "Transfer-Encoding":
			if resp.TransferEncoding != nil || value != "chunked" {
				return nil
			}
			values[i] = value
			resp.TransferEncoding = values[i : i+1 : i+1]
			continue // not in Header
		case "Connection":
			switch value {
			case "close":
				resp.Close = true
			case "keep-alive":
			default:
				return nil
			}
		case "Trailer", "Pragma":
			return nil
		}
		values[i] = value
		n := len(resp.Header)
		resp.Header[key] = values[i : i+1 : i+1]
		if len(resp.Header) == n {
			return nil // a field repeated
		}
	}
	if resp.Close {
		delete(resp.Header, "Connection")
	}
	if (resp.ContentLength >= 0) == (resp.TransferEncoding != nil) {
		return nil // both, or a body until the connection closes
	}
	return resp
}

// cutLine cuts the first line off s. It fails on a line ending in a bare
// LF, which net/http takes as a line end too; a CR elsewhere in a line is
// refused where the line is parsed.
func cutLine(s string) (line, rest string, ok bool) {
	i := strings.IndexByte(s, '\n')
	if i < 1 || s[i-1] != '\r' {
		return "", "", false
	}
	return s[:i-1], s[i+1:], true
}

// parseStatusLine returns the status code of "HTTP/1.1 200 OK", if it is
// one of a simple head.
func parseStatusLine(line string) (code int, ok bool) {
	const prefix = "HTTP/1.1 "
	if len(line) < len(prefix+"200 X") || line[:len(prefix)] != prefix || line[len(prefix)+3] != ' ' {
		return 0, false
	}
	for _, c := range []byte(line[len(prefix) : len(prefix)+3]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified {
		return 0, false
	}
	for _, c := range []byte(line[len(prefix)+4:]) {
		if c < ' ' || c > '~' {
			return 0, false
		}
	}
	return code, true
}

// parseLength parses a Content-Length of 1 to 18 digits (18 cannot
// overflow an int64; net/http takes up to 2^63-1).
func parseLength(s string) (n int64, ok bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// commonKeys are the header names MCP servers send (the TypeScript SDK
// writes its own in lower case), to find their canonical form without
// allocating it.
var commonKeys = func() map[string]string {
	m := make(map[string]string)
	for _, k := range []string{
		"Access-Control-Allow-Origin", "Access-Control-Expose-Headers",
		"Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Type", "Date", "Etag", "Keep-Alive", "Mcp-Protocol-Version",
		"Mcp-Session-Id", "Server", "Transfer-Encoding", "Vary",
		"Www-Authenticate", "X-Accel-Buffering", "X-Content-Type-Options",
		"X-Powered-By",
	} {
		m[k] = k
	}
	return m
}()

// canonicalKey returns the canonical form of a header name made of token
// bytes, as net/http gives it: upper case at the start and after each
// hyphen, lower case elsewhere. A name already canonical is returned as it
// is, not copied.
func canonicalKey(name string) string {
	if isCanonical(name) {
		return name
	}
	var array [64]byte
	b := array[:0]
	upper := true
	for _, c := range []byte(name) {
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b = append(b, c)
		upper = c == '-'
	}
	if k, ok := commonKeys[string(b)]; ok {
		return k
	}
	return string(b)
}

func isCanonical(name string) bool {
	upper := true
	for _, c := range []byte(name) {
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return false
		}
		upper = c == '-'
	}
	return true
}

// The bodies of simple responses. Their Close does nothing: they are only
// read by the connection's body (conn.go), which closes the connection
// itself when it is closed before the end.

// lengthBody reads a body of ContentLength bytes from the connection,
// returning io.EOF with its last bytes and io.ErrUnexpectedEOF if the
// connection ends before them, as net/http does.
type lengthBody struct {
	br   *bufio.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		err = io.ErrUnexpectedEOF
	case err == nil && n > 0 && b.left == 0:
		err = io.EOF
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }

// Errors of a chunked body's trailer section, worded as net/http's.
var (
	errTrailerEOF  = errors.New("http: unexpected EOF reading trailer")
	errLongTrailer = errors.New("http: suspiciously long trailer after chunked body")
)

// chunkedBody reads a chunked body from the connection with net/http's own
// chunk reader, then its trailer section up to the empty line ending it, so
// that io.EOF leaves the connection at the start of the next response.
// Trailer fields, if the server sends any, are set in resp.Trailer, as
// net/http does.
type chunkedBody struct {
	br     *bufio.Reader
	chunks io.Reader // httputil.NewChunkedReader(br)
	resp   *http.Response
	err    error // once io.EOF or a failure: returned from then on
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// The chunk reader keeps its first error (errWouldBlock of a read
	// without waiting too) and returns it again: it never loops on one.
	n, err := b.chunks.Read(p)
	if err == io.EOF {
		if terr := b.readTrailer(); terr != nil {
			err = terr
		}
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *chunkedBody) Close() error { return nil }

// readTrailer reads the trailer section after the last chunk. As in
// net/http, one with fields must end within the buffer.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	switch {
	case string(buf) == "\r\n":
		b.br.Discard(2)
		return nil
	case len(buf) < 2 && err == io.EOF:
		return errTrailerEOF
	case len(buf) < 2:
		return err // errWouldBlock, or the connection's failure
	}
	if err := trailerInBuffer(b.br); err != nil {
		return err
	}
	fields, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err == io.EOF {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	b.resp.Trailer = http.Header(fields) // nil before: the head has no Trailer field
	return nil
}

// trailerInBuffer waits until the CRLF CRLF ending a trailer section is
// in br's buffer. It fails, as net/http does, if it is not there when the
// buffer is full or the connection ends; and with the read's error if one
// fails otherwise (errWouldBlock of a read without waiting).
func trailerInBuffer(br *bufio.Reader) error {
	n := max(4, br.Buffered())
	for {
		buf, err := br.Peek(n)
		switch {
		case bytes.Contains(buf, []byte("\r\n\r\n")):
			return nil
		case err == bufio.ErrBufferFull || err == io.EOF:
			return errLongTrailer
		case err != nil:
			return err
		}
		n = len(buf) + 1
	}
}
