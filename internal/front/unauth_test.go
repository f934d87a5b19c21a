package front

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawRequest opens a connection to srv, writes raw, and returns the
// response to it (its body read) and the connection's reader.
func rawRequest(t *testing.T, srv *httptest.Server, raw string) (*http.Response, string, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang, not a timing
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return resp, string(body), br
}

// closedByServer reports whether the server closed the connection after
// its response (EOF), rather than keeping it open.
func closedByServer(br *bufio.Reader) (bool, error) {
	n, err := br.Read(make([]byte, 1))
	return n == 0 && err == io.EOF, err
}

// partialPost is a POST /mcp head declaring a body of 1000 bytes followed
// by half of it.
func partialPost(auth string) string {
	head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	return head + "\r\n" + strings.Repeat(" ", 500)
}

// A request without a valid token gets 401 with Connection: close at
// once, and the connection is closed without waiting for the rest of its
// body; so do a request on a loopback listener with a foreign Host (403),
// an anonymous /health with a body, and a body sent to no endpoint.
func TestUnauthenticatedClosedWithoutBody(t *testing.T) {
	srv := httptest.NewServer(&Handler{Gateway: newGateway(), Token: "secret", BodyReadTimeout: time.Hour, Metrics: http.NotFoundHandler()})
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		raw    string
		status int
	}{
		{"no token", partialPost(""), 401},
		{"wrong token", partialPost("Bearer nope"), 401},
		{"wrong token on /metrics", strings.Replace(partialPost("Bearer nope"), "/mcp", "/metrics", 1), 401},
		{"foreign Host", strings.Replace(partialPost("Bearer secret"), "Host: 127.0.0.1", "Host: evil.example", 1), 403},
		{"/health without a token", strings.Replace(partialPost(""), "POST /mcp", "GET /health", 1), 200},
		{"POST /health without a token", strings.Replace(partialPost(""), "POST /mcp", "POST /health", 1), 405},
		{"an unknown path", strings.Replace(partialPost("Bearer secret"), "POST /mcp", "POST /nowhere", 1), 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body, br := rawRequest(t, srv, tc.raw)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %q, want %d", resp.Status, body, tc.status)
			}
			if !resp.Close { // net/http's reader takes "Connection: close" out of the header into Close
				t.Errorf("%s without Connection: close", resp.Status)
			}
			want := `Bearer realm="mcp-gateway"`
			if strings.Contains(tc.raw, "Bearer nope") {
				want = invalidTokenChallenge
			}
			if tc.status == 401 && resp.Header.Get("WWW-Authenticate") != want {
				t.Errorf("401 with WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
			if ok, err := closedByServer(br); !ok {
				t.Errorf("after the %d: read %v; want the server to close the connection (EOF) without the rest of the body", tc.status, err)
			}
		})
	}
}

// A body that stops arriving gets 408 with a JSON-RPC error once the body
// deadline has passed, and its connection is closed.
func TestBodyReadTimeout(t *testing.T) {
	srv := httptest.NewServer(&Handler{Gateway: newGateway(), Token: "secret", BodyReadTimeout: 50 * time.Millisecond})
	defer srv.Close()
	resp, body, br := rawRequest(t, srv, partialPost("Bearer secret"))
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close ||
		!strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "did not arrive within 50ms") {
		t.Errorf("a stalled body: %s (close %v) %s; want 408 with Connection: close and a -32600 naming the timeout", resp.Status, resp.Close, body)
	}
	if ok, err := closedByServer(br); !ok {
		t.Errorf("after the 408: read %v; want the connection closed (EOF)", err)
	}
}

// A request whose token the front accepts calls the connection's mark;
// one it refuses, or /health without a token, does not.
func TestAuthMark(t *testing.T) {
	h := &Handler{Gateway: newGateway(), Token: "secret", Health: func(bool) any { return nil }}
	for _, tc := range []struct {
		name, path, auth string
		marked           bool
	}{
		{"/mcp with the token", "/mcp", "Bearer secret", true},
		{"/mcp without", "/mcp", "", false},
		{"/mcp with another", "/mcp", "Bearer nope", false},
		{"/health with the token", "/health", "Bearer secret", true},
		{"/health without", "/health", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var marks atomic.Int32
			r := httptest.NewRequest("POST", tc.path, strings.NewReader(pingBody))
			if tc.path == "/health" {
				r = httptest.NewRequest("GET", tc.path, nil)
			}
			r = r.WithContext(WithAuthMark(context.Background(), func() { marks.Add(1) }))
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got := marks.Load() > 0; got != tc.marked {
				t.Errorf("marked %v, want %v", got, tc.marked)
			}
		})
	}
}
