package httpd

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"reflect"
	"testing"
)

var heads = []string{
	"POST /mcp HTTP/1.1\r\nHost: localhost:5\r\nContent-Length: 2\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nhost: a\r\ncontent-length: 0\r\nmcp-session-id: x\r\nauthorization: Bearer  t \r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nAccept: a\r\nAccept: b\r\nX-Odd_Name: v\r\nConnection: keep-alive, close\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nX-Empty:\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
	// Left to net/http:
	"GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"POST /mcp HTTP/1.0\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a b\r\nContent-Length: 0\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nX-Folded: a\r\n b\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nBad Name: a\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nX: a\x00b\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nNoColon\r\n\r\n",
	"POST  /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
}

// TestParseHeadAgreesWithNetHTTP: every head this package serves is read
// exactly as net/http reads it; the others are left to net/http.
func TestParseHeadAgreesWithNetHTTP(t *testing.T) {
	served := 0
	for _, h := range heads {
		if checkHead(t, []byte(h)) {
			served++
		}
	}
	if served != 4 {
		t.Errorf("served %d of the heads, want the first 4", served)
	}
}

func FuzzParseHead(f *testing.F) {
	for _, h := range heads {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		i := bytes.Index(head, headEnd)
		if i < 0 {
			return
		}
		checkHead(t, head[:i+len(headEnd)])
	})
}

// checkHead reports whether parseHead serves head, failing t if what it
// reads differs from net/http's reading.
func checkHead(t *testing.T, head []byte) bool {
	t.Helper()
	s := &Server{Path: "/mcp", MaxBodyBytes: 1 << 20}
	p, ok := s.parseHead(head)
	if !ok {
		return false
	}
	want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		t.Fatalf("served %q, which net/http refuses: %v", head, err)
	}
	got := s.newRequest(context.Background(), &conn{remoteAddr: "192.0.2.1:1"}, &p)
	if got.Method != want.Method || got.URL.String() != want.URL.String() || got.Proto != want.Proto ||
		got.Host != want.Host || got.ContentLength != want.ContentLength || got.Close != want.Close ||
		got.RequestURI != want.RequestURI || !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("%q:\n got %s %s %s host %q length %d close %v header %v\nwant %s %s %s host %q length %d close %v header %v", head,
			got.Method, got.URL, got.Proto, got.Host, got.ContentLength, got.Close, got.Header,
			want.Method, want.URL, want.Proto, want.Host, want.ContentLength, want.Close, want.Header)
	}
	return true
}
