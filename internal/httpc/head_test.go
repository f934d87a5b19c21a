package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Heads as MCP servers send them: the Go SDK's (net/http's server) and
// the TypeScript SDK's (Node's, lower-case names).
const (
	goEventStream = "HTTP/1.1 200 OK\r\n" +
		"Cache-Control: no-cache, no-transform\r\n" +
		"Content-Type: text/event-stream\r\n" +
		"Mcp-Session-Id: 7XK3QH5ZJ2M4\r\n" +
		"Date: Sun, 29 Nov 2026 18:00:00 GMT\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n"
	nodeEventStream = "HTTP/1.1 200 OK\r\n" +
		"content-type: text/event-stream\r\n" +
		"cache-control: no-cache\r\n" +
		"connection: keep-alive\r\n" +
		"mcp-session-id: 1b7d3a0e-5f6c-4c1d-9a55-2d0f8e7c6b4a\r\n" +
		"Date: Sun, 29 Nov 2026 18:00:00 GMT\r\n" +
		"Keep-Alive: timeout=5\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n"
	event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n"
)

// chunk is data as one chunk of a chunked body.
func chunk(data string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(data), data) }

// splitReader is a connection whose first read returns only the first
// split bytes (all if split is 0), and the others the rest.
type splitReader struct {
	data  []byte
	split int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if r.split > 0 {
		n = min(n, r.split)
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	r.split = max(0, r.split-n)
	return n, nil
}

func reader(data string, split int) *bufio.Reader {
	return bufio.NewReaderSize(&splitReader{data: []byte(data), split: split}, readBufferSize)
}

// outcome is everything a caller can see of reading a response: its head,
// its body (read 7 bytes at a time up to the first error, io.EOF coming
// with the last bytes or after them), its trailer, and what is left on the
// connection after it.
type outcome struct {
	Err              string
	Status           string
	StatusCode       int
	Proto            string
	ProtoMajor       int
	ProtoMinor       int
	Header           http.Header
	ContentLength    int64
	TransferEncoding []string
	Close            bool
	Uncompressed     bool
	Request          *http.Request
	NoBody           bool
	Reads            []int // the bytes of each read of the body
	Body             string
	BodyErr          string
	Trailer          http.Header
	Rest             string
}

func outcomeOf(resp *http.Response, err error, br *bufio.Reader) outcome {
	if err != nil {
		return outcome{Err: err.Error()}
	}
	o := outcome{
		Status: resp.Status, StatusCode: resp.StatusCode,
		Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		Header: resp.Header, ContentLength: resp.ContentLength,
		TransferEncoding: resp.TransferEncoding, Close: resp.Close,
		Uncompressed: resp.Uncompressed, Request: resp.Request,
		NoBody: resp.Body == http.NoBody,
	}
	var body []byte
	p := make([]byte, 7)
	for range 1 << 16 { // a reader returning 0, nil forever stops too
		n, err := resp.Body.Read(p)
		body = append(body, p[:n]...)
		o.Reads = append(o.Reads, n)
		if err != nil {
			if err != io.EOF {
				o.BodyErr = err.Error()
			}
			break
		}
	}
	o.Body = string(body)
	o.Trailer = resp.Trailer
	rest, _ := io.ReadAll(br)
	o.Rest = string(rest)
	return o
}

// compare reads data with readSimpleResponse and, if it takes the head,
// with http.ReadResponse, and reports any difference. It says whether the
// head was taken.
func compare(t *testing.T, data string, split int, req *http.Request) (taken bool) {
	t.Helper()
	br := reader(data, split)
	resp, err := readSimpleResponse(br, req)
	if err == errNotSimple {
		if rest, _ := io.ReadAll(br); string(rest) != data {
			t.Errorf("a head left to http.ReadResponse was consumed: %q left of %q", rest, data)
		}
		return false
	}
	got := outcomeOf(resp, err, br)
	wbr := reader(data, split)
	wresp, werr := http.ReadResponse(wbr, req)
	want := outcomeOf(wresp, werr, wbr)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q:\nsimple:   %+v\nnet/http: %+v", data, got, want)
	}
	return true
}

var post, _ = http.NewRequest("POST", "http://upstream/mcp", nil)

// TestSimpleResponse: the heads MCP servers send are taken, and read as
// http.ReadResponse reads them, bodies included.
func TestSimpleResponse(t *testing.T) {
	tests := []struct {
		name, data string
		split      int // the first read's bytes; 0: all
	}{
		{"Go SDK event stream", goEventStream + chunk(event) + "0\r\n\r\n", 0},
		{"Node event stream", nodeEventStream + chunk(event) + "0\r\n\r\n", 0},
		{"event stream, chunk split across reads", goEventStream + chunk(event) + "0\r\n\r\n", len(goEventStream) + 20},
		{"event stream, its end not arrived", goEventStream + chunk(event), 0},
		{"event stream, several chunks", goEventStream + chunk("event: message\n") + chunk("data: {}\n\n") + chunk(event) + "0\r\n\r\n", 0},
		{"chunk extensions and trailers", goEventStream + "5;name=value\r\nhello\r\n0;last\r\nX-Checksum: 42\r\nX-Other: a\r\n\r\n", 0},
		{"trailers arriving later", goEventStream + "5\r\nhello\r\n0\r\nX-Checksum: 42\r\n\r\n", len(goEventStream) + 14},
		{"a truncated trailer", goEventStream + "5\r\nhello\r\n0\r\nX-Checksum: 4", 0},
		{"no end after the last chunk", goEventStream + "5\r\nhello\r\n0\r\n", 0},
		{"a chunk longer than said", goEventStream + "3\r\nhello\r\n0\r\n\r\n", 0},
		{"a bad chunk size", goEventStream + "x\r\nhello\r\n0\r\n\r\n", 0},
		{"a truncated chunk", goEventStream + "50\r\nhello", 0},
		{"JSON", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Sun, 29 Nov 2026 18:00:00 GMT\r\nContent-Length: 27\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1}\n  ", 0},
		{"JSON, Node", "HTTP/1.1 200 OK\r\nX-Powered-By: Express\r\ncontent-type: application/json\r\nmcp-session-id: abc\r\nContent-Length: 2\r\nETag: W/\"2-l9Fw4VUO7kr8CvBlt4zaMCqXZ0w\"\r\nDate: Sun, 29 Nov 2026 18:00:00 GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n{}", 0},
		{"202 Accepted", "HTTP/1.1 202 Accepted\r\nDate: Sun, 29 Nov 2026 18:00:00 GMT\r\nContent-Length: 0\r\n\r\n", 0},
		{"a length of zeros", "HTTP/1.1 202 Accepted\r\nContent-Length: 000\r\n\r\n", 0},
		{"400", "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nDate: Sun, 29 Nov 2026 18:00:00 GMT\r\nContent-Length: 24\r\n\r\nBad Request: no session\n", 0},
		{"404 closing", "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 10\r\n\r\nnot found\n", 0},
		{"500", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nfails", 0},
		{"an unknown status", "HTTP/1.1 299 Whatever It Is\r\nContent-Length: 1\r\n\r\nx", 0},
		{"a reason with spaces around", "HTTP/1.1 200  OK \r\nContent-Length: 0\r\n\r\n", 0},
		{"the body split across reads", "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", 45},
		{"a truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nhello", 0},
		{"the next response after the body", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0},
		{"the next response after chunks", goEventStream + "0\r\n\r\nHTTP/1.1 200 OK\r\n", 0},
		{"spaces and tabs around values", "HTTP/1.1 200 OK\r\nX-A:\t a b \t\r\nX-B:   \r\nX-C:\r\nContent-Length:  2 \r\n\r\nok", 0},
		{"values of other bytes", "HTTP/1.1 200 OK\r\nX-Name: caf\xc3\xa9 \xff: ~\r\nContent-Length: 0\r\n\r\n", 0},
		{"names of all token bytes", "HTTP/1.1 200 OK\r\nx-1a_B.c!#$%&'*+^`|~: 1\r\nCONTENT-type: text/plain\r\nwww-authenticate: Bearer\r\nContent-Length: 0\r\n\r\n", 0},
		{"a long name", "HTTP/1.1 200 OK\r\n" + strings.Repeat("ab-", 40) + "c: 1\r\nContent-Length: 0\r\n\r\n", 0},
		{"Connection: close, chunked", "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !compare(t, tt.data, tt.split, post) {
				t.Errorf("%q was left to http.ReadResponse", tt.data)
			}
		})
	}
	t.Run("no request", func(t *testing.T) {
		if !compare(t, goEventStream+chunk(event)+"0\r\n\r\n", 0, nil) {
			t.Error("the head was left to http.ReadResponse")
		}
	})
	t.Run("nothing before the end", func(t *testing.T) {
		compare(t, "", 0, post)
	})
}

// TestGoServerHeads: the heads net/http's server writes (the Go SDK's
// servers) are simple.
func TestGoServerHeads(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "7XK3QH5ZJ2M4")
		io.WriteString(w, event)
		w.(http.Flusher).Flush()
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	mux.HandleFunc("/accepted", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Bad Request: no session", http.StatusBadRequest)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	nc, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReaderSize(nc, readBufferSize)
	for _, path := range []string{"/sse", "/json", "/accepted", "/error"} {
		fmt.Fprintf(nc, "POST %s HTTP/1.1\r\nHost: upstream\r\nContent-Length: 0\r\n\r\n", path)
		resp, err := readSimpleResponse(br, post)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatalf("%s: the body: %v", path, err)
		}
	}
}

// TestNotSimple: every head outside the simple ones is left to
// http.ReadResponse, nothing of it consumed; for each, what net/http does
// that a plain reading would not shows why.
func TestNotSimple(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\n"
	head, _ := http.NewRequest("HEAD", "http://upstream/", nil)
	failed := func(_ *http.Response, err error) bool { return err != nil }
	tests := []struct {
		name, data string
		split      int
		req        *http.Request
		netHTTP    func(*http.Response, error) bool // what it does that is special
	}{
		{"HEAD: no body whatever the head says", ok + "Content-Length: 5\r\n\r\n", 0, head,
			func(r *http.Response, _ error) bool { return r.Body == http.NoBody && r.ContentLength == 5 }},
		{"head incomplete after the first read: more is read", ok + "Content-Length: 2\r\n\r\nok", 20, post,
			func(r *http.Response, _ error) bool { return r.ContentLength == 2 }},
		{"head longer than the buffer: more is read", ok + "X-Long: " + strings.Repeat("a", readBufferSize) + "\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return len(r.Header.Get("X-Long")) == readBufferSize }},
		{"bare LF line ends are lines", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 0, post,
			func(r *http.Response, _ error) bool { return r.ContentLength == 2 }},
		{"a bare LF in the status line ends it", "HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok", 0, post,
			func(r *http.Response, _ error) bool { return r.ContentLength == 2 }},
		{"a CR before the CRLF: in the value, an error", ok + "X-A: a\r\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"HTTP/1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, post,
			func(r *http.Response, _ error) bool { return r.Close && r.ProtoMinor == 0 }},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, post,
			func(r *http.Response, _ error) bool { return r.ProtoMinor == 2 }},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Status == "200" }},
		{"two spaces before the status, trimmed", "HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Status == "200 OK" }},
		{"a control byte in the reason, kept", "HTTP/1.1 200 O\x01K\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Status == "200 O\x01K" }},
		{"a signed status", "HTTP/1.1 +99 X\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.StatusCode == 99 }},
		{"1xx: no body, another head follows", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 2\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Body == http.NoBody && r.ContentLength == 0 }},
		{"204: no body", "HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\nok", 0, post,
			func(r *http.Response, _ error) bool { return r.Body == http.NoBody && r.ContentLength == 0 }},
		{"304: no body", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Body == http.NoBody }},
		{"600", "HTTP/1.1 600 Beyond\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.StatusCode == 600 }},
		{"obs-fold joins lines", ok + "X-A: a\r\n b\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Header.Get("X-A") == "a b" }},
		{"a space before the first field, an error", ok + " X-A: a\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"a space before the colon: the name kept as it is", ok + "x-a : a\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Header["x-a "] != nil }},
		{"a line without colon, an error", ok + "X-A\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"an empty name, an error", ok + ": a\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"a name of other bytes, an error", ok + "X(A): a\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"a control byte in a value, an error", ok + "X-A: a\x01b\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"DEL in a value, an error", ok + "X-A: a\x7fb\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"a field repeated: its values listed", ok + "Vary: Origin\r\nSet-Cookie: a=1\r\nvary: Accept\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return len(r.Header["Vary"]) == 2 }},
		{"two equal lengths, merged", ok + "Content-Length: 2\r\nContent-Length: 2\r\n\r\nok", 0, post,
			func(r *http.Response, _ error) bool { return len(r.Header["Content-Length"]) == 1 }},
		{"two lengths, an error", ok + "Content-Length: 2\r\nContent-Length: 3\r\n\r\nok", 0, post, failed},
		{"an empty length, an error", ok + "Content-Length: \r\n\r\n", 0, post, failed},
		{"a signed length, an error", ok + "Content-Length: +2\r\n\r\nok", 0, post, failed},
		{"a length of other bytes, an error", ok + "Content-Length: 0x2\r\n\r\nok", 0, post, failed},
		{"a length of 19 digits", ok + "Content-Length: 1000000000000000000\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.ContentLength == 1e18 }},
		{"a length past 2^63-1, an error", ok + "Content-Length: 9223372036854775808\r\n\r\n", 0, post, failed},
		{"gzip, chunked: an error", ok + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0, post, failed},
		{"identity: an error", ok + "Transfer-Encoding: identity\r\nContent-Length: 0\r\n\r\n", 0, post, failed},
		{"two Transfer-Encoding fields, an error", ok + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, post, failed},
		{"Chunked in capitals is chunked", ok + "Transfer-Encoding: Chunked\r\n\r\n0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool {
				return r.ContentLength == -1 && r.TransferEncoding[0] == "chunked"
			}},
		{"chunked and a length: the length removed", ok + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool {
				return r.ContentLength == -1 && r.Header["Content-Length"] == nil
			}},
		{"neither: a body until the connection closes", ok + "Content-Type: text/plain\r\n\r\nall of it", 0, post,
			func(r *http.Response, _ error) bool { return r.Close && r.ContentLength == -1 }},
		{"Connection: keep-alive, close: the token found", ok + "Connection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Close && r.Header["Connection"] == nil }},
		{"Connection: CLOSE, in any case", ok + "Connection: CLOSE\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Close }},
		{"two Connection fields: the token found in either", ok + "Connection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Close && r.Header["Connection"] == nil }},
		{"Trailer: moved to resp.Trailer", ok + "Trailer: X-Checksum\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Header["Trailer"] == nil && r.Trailer != nil }},
		{"a forbidden Trailer, an error", ok + "Trailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, post, failed},
		{"Pragma: no-cache adds Cache-Control", ok + "Pragma: no-cache\r\nContent-Length: 0\r\n\r\n", 0, post,
			func(r *http.Response, _ error) bool { return r.Header.Get("Cache-Control") == "no-cache" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if compare(t, tt.data, tt.split, tt.req) {
				t.Fatalf("%q was taken by the fast path", tt.data)
			}
			resp, err := http.ReadResponse(reader(tt.data, tt.split), tt.req)
			if !tt.netHTTP(resp, err) {
				t.Errorf("net/http does not do what the case says: %+v, %v", resp, err)
			}
		})
	}
}

// wouldBlock is a connection read without waiting: after its data it
// returns errWouldBlock.
type wouldBlock struct{ data []byte }

func (r *wouldBlock) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errWouldBlock
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestBodyWouldBlock: a body read without waiting (a released one's rest,
// see conn.finishTail) returns errWouldBlock where its data stops, at once
// and from then on.
func TestBodyWouldBlock(t *testing.T) {
	for _, tt := range []struct{ name, data, read string }{
		{"in a chunk", goEventStream + chunk("hello") + "8\r\ndata: tw", "hellodata: tw"},
		{"before a chunk size", goEventStream + chunk("hello"), "hello"},
		{"in a chunk size", goEventStream + chunk("hello") + "1", "hello"},
		{"before the trailer section", goEventStream + chunk("hello") + "0\r\n", "hello"},
		{"in the trailer section", goEventStream + chunk("hello") + "0\r\nX-A: 1\r\n", "hello"},
		{"in a body of known length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "hello"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(&wouldBlock{data: []byte(tt.data)}, readBufferSize)
			resp, err := readSimpleResponse(br, post)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			p := make([]byte, 3)
			for range 100 {
				n, err := resp.Body.Read(p)
				got = append(got, p[:n]...)
				if err != nil {
					if err != errWouldBlock {
						t.Errorf("read error %v, want errWouldBlock", err)
					}
					break
				}
			}
			if string(got) != tt.read {
				t.Errorf("read %q, want %q", got, tt.read)
			}
			if n, err := resp.Body.Read(p); n != 0 || err != errWouldBlock {
				t.Errorf("read again: %d, %v; want 0, errWouldBlock", n, err)
			}
		})
	}
}

// TestReleasedRest: the rest of a released chunked body, read without
// waiting by the connection's next request (conn.finishTail), is read to
// the end of the response when all of it has arrived, and fails when only
// part of it has.
func TestReleasedRest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads without waiting only on Linux")
	}
	for _, tt := range []struct {
		name, rest string
		want       int
	}{
		{"the end", "0\r\n\r\n", tailRead},
		{"another event and the end", chunk(event) + "0\r\n\r\n", tailRead},
		{"the end with trailers", "0\r\nX-Checksum: 42\r\n\r\n", tailRead},
		{"part of an event", "8\r\ndata: tw", tailFailed},
		{"the last chunk, not the end", "0\r\n", tailFailed},
		{"part of the trailers", "0\r\nX-Checksum: 42\r\n", tailFailed},
		{"nothing", "", tailPending},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { server.Close() })
			c := newConn("upstream:80", client)
			t.Cleanup(c.close)

			io.WriteString(server, goEventStream+chunk(event))
			resp, err := c.readResponse(post)
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := io.ReadFull(resp.Body, make([]byte, len(event))); err != nil {
				t.Fatalf("the event: %d bytes, %v", ev, err)
			}
			c.tail = resp.Body // as body.Release does
			if tt.rest != "" {
				io.WriteString(server, tt.rest)
				waitArrived(t, c)
			}
			if got := c.finishTail(); got != tt.want {
				t.Errorf("finishTail: %d, want %d", got, tt.want)
			}
			if tt.want == tailRead && c.br.Buffered() != 0 {
				t.Errorf("%d bytes buffered after the response", c.br.Buffered())
			}
		})
	}
}

// waitArrived waits until c's socket has data to read.
func waitArrived(t *testing.T, c *conn) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for peek(c.nc) != hasData {
		if time.Now().After(deadline) {
			t.Fatal("the rest did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
}

// FuzzReadResponse: whatever bytes the fast path takes, it reads as
// http.ReadResponse does.
func FuzzReadResponse(f *testing.F) {
	seeds := []string{
		goEventStream + chunk(event) + "0\r\n\r\n",
		nodeEventStream + chunk(event) + "0\r\n\r\n",
		goEventStream + "5;name=value\r\nhello\r\n0;last\r\nX-Checksum: 42\r\n\r\n",
		goEventStream + "5\r\nhel",
		goEventStream + "0\r\nX-A: 1\r\nX-A: 2\r\n\r\nHTTP/1.1 200 OK\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 10\r\n\r\nnot found\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(len(s)-7))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		compare(t, string(data), int(split), post)
	})
}

// BenchmarkReadResponse reads an SSE response of one event, head and body,
// with the fast path and with http.ReadResponse.
func BenchmarkReadResponse(b *testing.B) {
	data := []byte(goEventStream + chunk(event) + "0\r\n\r\n")
	for _, bb := range []struct {
		name string
		read func(*bufio.Reader, *http.Request) (*http.Response, error)
	}{
		{"simple", readSimpleResponse},
		{"net-http", http.ReadResponse},
	} {
		b.Run(bb.name, func(b *testing.B) {
			r := bytes.NewReader(data)
			br := bufio.NewReaderSize(r, readBufferSize)
			p := make([]byte, 512)
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(data)
				br.Reset(r)
				resp, err := bb.read(br, post)
				if err != nil {
					b.Fatal(err)
				}
				for err == nil {
					_, err = resp.Body.Read(p)
				}
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
			}
		})
	}
}
