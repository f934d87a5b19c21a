package httpc_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/httpc"
)

// prompt bounds what must happen at once: a cancellation, a Close.
const prompt = 2 * time.Second

// server is an httptest server counting its connections.
type server struct {
	*httptest.Server
	opened, closed atomic.Int32
	idled          atomic.Int32 // responses written to their end
}

func newServer(t *testing.T, h http.Handler, configure ...func(*http.Server)) *server {
	t.Helper()
	s := &server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateIdle:
			s.idled.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed.Add(1)
		}
	}
	for _, f := range configure {
		f(s.Config)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// waitClosed waits until the server has seen n connections end.
func (s *server) waitClosed(t *testing.T, n int32) {
	t.Helper()
	deadline := time.Now().Add(prompt)
	for s.closed.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %d connections end, want %d", s.closed.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dialer counts the connections a Transport makes.
type dialer struct {
	n    atomic.Int32
	last atomic.Pointer[flakyConn]
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// dialFlaky makes connections whose writes can be made to fail; they are
// no sockets, so the Transport cannot peek at them.
func (d *dialer) dialFlaky(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := &flakyConn{Conn: nc}
	d.last.Store(c)
	return c, nil
}

type flakyConn struct {
	net.Conn
	failWrites atomic.Bool
	writes     atomic.Int32
}

func (c *flakyConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	if c.failWrites.Load() {
		return 0, errors.New("broken pipe (test)")
	}
	return c.Conn.Write(p)
}

// fallback counts the requests handed to it.
type fallback struct {
	rt        http.RoundTripper
	n         atomic.Int32
	closeIdle atomic.Int32
}

func (f *fallback) RoundTrip(req *http.Request) (*http.Response, error) {
	f.n.Add(1)
	if f.rt == nil {
		closeBodyOf(req)
		return nil, errors.New("the fallback was not expected to be used")
	}
	return f.rt.RoundTrip(req)
}

func (f *fallback) CloseIdleConnections() { f.closeIdle.Add(1) }

func closeBodyOf(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// newTransport returns a Transport dialling through d and failing any
// request it hands to its fallback.
func newTransport(t *testing.T) (*httpc.Transport, *dialer, *fallback) {
	d, fb := &dialer{}, &fallback{}
	tr := &httpc.Transport{Dial: d.dial, Fallback: fb}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if n := fb.n.Load(); n != 0 {
			t.Errorf("%d requests went to the fallback, want none", n)
		}
	})
	return tr, d, fb
}

// checkNotReused makes one more request and checks it took a second
// connection: the first, cancelled or closed, must not be reused.
func checkNotReused(t *testing.T, tr *httpc.Transport, srv *server, d *dialer, what string) {
	t.Helper()
	roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", ""))
	if srv.opened.Load() != 2 || d.n.Load() != 2 {
		t.Errorf("%d connections (%d dialled), want 2: the %s one must not be reused", srv.opened.Load(), d.n.Load(), what)
	}
}

func request(t *testing.T, ctx context.Context, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// roundTrip sends a request and returns its response's body, read whole.
func roundTrip(t *testing.T, tr http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	return resp, string(data)
}

// seen is a request as the server saw it.
type seen struct {
	method, host, uri string
	contentLength     int64
	header            http.Header
	body              string
}

func recorder(ch chan<- seen) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.Host, r.RequestURI, r.ContentLength, r.Header.Clone(), string(data)}
		w.Header().Set("X-Answer", "yes")
		fmt.Fprintf(w, "%s %s", r.Method, data)
	}
}

func TestRequestAsTheServerSeesIt(t *testing.T) {
	ch := make(chan seen, 1)
	srv := newServer(t, recorder(ch))
	tr, _, _ := newTransport(t)
	addr := srv.Listener.Addr().String()

	tests := []struct {
		name, method, path, body, host string
		header                         http.Header
		wantLength                     []string // the Content-Length header sent
		wantUA                         string
	}{
		{name: "GET", method: "GET", path: "/mcp?x=1&y=%20", header: http.Header{"X-Custom": {"a", "b"}, "Authorization": {"Bearer t"}}, wantUA: "Go-http-client/1.1"},
		{name: "POST", method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0"}`, header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}, wantLength: []string{"17"}, wantUA: "Go-http-client/1.1"},
		{name: "POST without a body", method: "POST", path: "/", wantLength: []string{"0"}, wantUA: "Go-http-client/1.1"},
		{name: "DELETE", method: "DELETE", path: "/mcp", header: http.Header{"Mcp-Session-Id": {"s1"}, "User-Agent": {"mcp-gateway"}}, wantUA: "mcp-gateway"},
		{name: "Host given", method: "GET", path: "/", host: "example.test", wantUA: "Go-http-client/1.1"},
		{
			name: "headers the transport writes itself", method: "POST", path: "/", body: "hello",
			header:     http.Header{"Host": {"evil.test"}, "Content-Length": {"99"}, "Transfer-Encoding": {"chunked"}, "Connection": {"keep-alive"}},
			wantLength: []string{"5"}, wantUA: "Go-http-client/1.1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(t, t.Context(), tt.method, srv.URL+tt.path, tt.body)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			req.Host = tt.host
			resp, body := roundTrip(t, tr, req)
			got := <-ch

			if resp.StatusCode != 200 || resp.Header.Get("X-Answer") != "yes" || body != tt.method+" "+tt.body {
				t.Errorf("response %d %v %q; want 200, X-Answer: yes, %q", resp.StatusCode, resp.Header, body, tt.method+" "+tt.body)
			}
			if resp.Request != req {
				t.Error("resp.Request is not the request")
			}
			wantHost := addr
			if tt.host != "" {
				wantHost = tt.host
			}
			if got.method != tt.method || got.host != wantHost || got.uri != tt.path || got.body != tt.body || got.contentLength != int64(len(tt.body)) {
				t.Errorf("the server saw %s %s Host %s, Content-Length %d, body %q; want %s %s Host %s, %d, %q",
					got.method, got.uri, got.host, got.contentLength, got.body, tt.method, tt.path, wantHost, len(tt.body), tt.body)
			}
			if l := got.header["Content-Length"]; !slices.Equal(l, tt.wantLength) {
				t.Errorf("Content-Length headers %q, want %q", l, tt.wantLength)
			}
			if ua := got.header["User-Agent"]; len(ua) != 1 || ua[0] != tt.wantUA {
				t.Errorf("User-Agent headers %q, want %q", ua, tt.wantUA)
			}
			for k, v := range tt.header {
				switch k {
				case "Host", "Content-Length", "Transfer-Encoding", "Connection", "User-Agent":
					continue
				}
				if !slices.Equal(got.header[k], v) {
					t.Errorf("header %s: the server saw %q, want %q", k, got.header[k], v)
				}
			}
			for k, v := range got.header {
				if len(v) > 1 && k != "X-Custom" {
					t.Errorf("header %s sent %d times: %q", k, len(v), v)
				}
			}
			for _, k := range []string{"Accept-Encoding", "Transfer-Encoding", "Connection"} {
				if v, ok := got.header[k]; ok {
					t.Errorf("header %s sent: %q", k, v)
				}
			}
		})
	}
}

// TestRequestOnTheWire checks the bytes sent, written with one Write.
func TestRequestOnTheWire(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	received := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		body := make([]byte, 7)
		io.ReadFull(br, body)
		received <- head.String() + string(body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}()

	d := &dialer{}
	tr := &httpc.Transport{Dial: d.dialFlaky, Fallback: &fallback{}}
	defer tr.CloseIdleConnections()
	req := request(t, t.Context(), "POST", "http://"+ln.Addr().String()+"/mcp/?q=1", "{\"a\":1}")
	req.Header.Set("Content-Type", "application/json")
	req.Header["X-Spaced"] = []string{"  value\t"}
	req.Close = true
	_, body := roundTrip(t, tr, req)
	if body != "ok" {
		t.Errorf("body %q, want ok", body)
	}
	got := strings.Split(<-received, "\r\n")
	want := []string{
		"POST /mcp/?q=1 HTTP/1.1",
		"Host: " + ln.Addr().String(),
		"User-Agent: Go-http-client/1.1",
		"Connection: close",
		"Content-Type: application/json",
		"X-Spaced: value",
		"Content-Length: 7",
		"",
		`{"a":1}`,
	}
	// Header order is free but for the request line first and the body last.
	slices.Sort(got[1 : len(got)-2])
	slices.Sort(want[1 : len(want)-2])
	if !slices.Equal(got, want) {
		t.Errorf("request sent:\n%q\nwant:\n%q", got, want)
	}
	if n := d.last.Load().writes.Load(); n != 1 {
		t.Errorf("the request took %d writes, want 1", n)
	}
}

func TestResponseFraming(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/length", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "11")
		io.WriteString(w, "with length")
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "first ")
		w.(http.Flusher).Flush()
		io.WriteString(w, "second")
		w.Header().Set("X-Checksum", "42")
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("/until-close", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end")
		c.Close()
	})
	srv := newServer(t, mux)

	tests := []struct {
		path, want string
		status     int
		chunked    bool
		reused     bool // the next request goes on the same connection
		trailer    string
	}{
		{path: "/length", want: "with length", status: 200, reused: true},
		{path: "/chunked", want: "first second", status: 200, chunked: true, reused: true, trailer: "42"},
		{path: "/empty", want: "", status: 202, reused: true},
		{path: "/until-close", want: "until the end", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.path[1:], func(t *testing.T) {
			tr, d, _ := newTransport(t)
			tr.Dial = d.dialFlaky // no peeking: the response alone says whether to reuse
			before := srv.opened.Load()
			resp, body := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+tt.path, ""))
			if resp.StatusCode != tt.status || body != tt.want {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.status, tt.want)
			}
			if chunked := slices.Equal(resp.TransferEncoding, []string{"chunked"}); chunked != tt.chunked {
				t.Errorf("TransferEncoding %q, chunked want %v", resp.TransferEncoding, tt.chunked)
			}
			if got := resp.Trailer.Get("X-Checksum"); got != tt.trailer {
				t.Errorf("trailer X-Checksum %q, want %q", got, tt.trailer)
			}
			if resp.Close == tt.reused {
				t.Errorf("resp.Close %v", resp.Close)
			}
			roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/length", ""))
			wantConns := int32(2)
			if tt.reused {
				wantConns = 1
			}
			if got := srv.opened.Load() - before; got != wantConns || d.n.Load() != wantConns {
				t.Errorf("two requests took %d connections (%d dialled), want %d", got, d.n.Load(), wantConns)
			}
		})
	}
}

// TestEventStream reads an event stream event by event while its handler
// still runs.
func TestEventStream(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 1\ndata: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(2 * prompt):
			return
		}
		io.WriteString(w, "id: 2\ndata: second\n\n")
	}))
	tr, _, _ := newTransport(t)
	resp, err := tr.RoundTrip(request(t, t.Context(), "GET", srv.URL, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)

	first := make(chan string, 1)
	go func() { first <- readEvent(br) }()
	select {
	case ev := <-first:
		if ev != "id: 1\ndata: first\n" {
			t.Errorf("first event %q", ev)
		}
	case <-time.After(prompt):
		t.Fatal("the first event did not arrive while the handler was running")
	}
	close(release)
	if ev := readEvent(br); ev != "id: 2\ndata: second\n" {
		t.Errorf("second event %q", ev)
	}
	if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
		t.Errorf("after the events: %q, %v; want the end", rest, err)
	}
}

// readEvent reads the lines of one event, up to the blank line ending it.
func readEvent(br *bufio.Reader) string {
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\n" {
			return ev.String()
		}
		ev.WriteString(line)
	}
}

func TestKeepAlive(t *testing.T) {
	ch := make(chan seen, 1)
	srv := newServer(t, recorder(ch))
	tr, d, _ := newTransport(t)
	client := &http.Client{Transport: tr}
	for i := range 10 {
		method, body := "GET", ""
		if i%2 == 1 {
			method, body = "POST", fmt.Sprintf(`{"n":%d}`, i)
		}
		resp, err := client.Do(request(t, t.Context(), method, srv.URL, body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := <-ch; string(data) != method+" "+body || got.body != body {
			t.Errorf("request %d: the server saw %q and answered %q", i, got.body, data)
		}
	}
	if srv.opened.Load() != 1 || d.n.Load() != 1 {
		t.Errorf("10 requests took %d connections (%d dialled), want 1", srv.opened.Load(), d.n.Load())
	}
}

// TestServerClosedIdleConnection: a connection the server closed while it
// was idle is not used; the request goes on a new one.
func TestServerClosedIdleConnection(t *testing.T) {
	ch := make(chan seen, 1)
	srv := newServer(t, recorder(ch), func(s *http.Server) { s.IdleTimeout = 50 * time.Millisecond })
	tr, d, _ := newTransport(t)
	for i, method := range []string{"GET", "POST", "POST", "GET"} {
		_, body := roundTrip(t, tr, request(t, t.Context(), method, srv.URL, "x"))
		if got := <-ch; body != method+" x" || got.body != "x" {
			t.Errorf("request %d: the server saw %q and answered %q", i, got.body, body)
		}
		srv.waitClosed(t, int32(i+1))
	}
	if srv.opened.Load() != 4 || d.n.Load() != 4 {
		t.Errorf("4 requests took %d connections (%d dialled), want 4", srv.opened.Load(), d.n.Load())
	}
}

func TestConnectionClose(t *testing.T) {
	ch := make(chan seen, 1)
	rec := recorder(ch)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		rec(w, r)
	}))
	for _, tt := range []struct {
		name     string
		path     string
		reqClose bool
	}{
		{name: "the server closes", path: "/close"},
		{name: "the request asks", path: "/", reqClose: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, d, _ := newTransport(t)
			tr.Dial = d.dialFlaky // no peeking: the response alone says whether to reuse
			before := srv.opened.Load()
			for i := range 3 {
				req := request(t, t.Context(), "POST", srv.URL+tt.path, "body")
				req.Close = tt.reqClose
				resp, body := roundTrip(t, tr, req)
				<-ch
				if body != "POST body" || !resp.Close {
					t.Errorf("request %d: %q, Close %v; want %q, true", i, body, resp.Close, "POST body")
				}
			}
			if got := srv.opened.Load() - before; got != 3 || d.n.Load() != 3 {
				t.Errorf("3 requests took %d connections (%d dialled), want 3", got, d.n.Load())
			}
		})
	}
}

// blocking serves /block, which writes an event if asked (?event=1) and
// waits for its client to go, and /ok.
func blocking(t *testing.T) (h http.Handler, arrived, gone chan struct{}) {
	arrived, gone = make(chan struct{}, 1), make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // net/http watches the connection once the body is read
		if r.URL.Query().Get("event") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
		}
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-time.After(2 * prompt): // the client did not go: the test fails
		case <-t.Context().Done():
		}
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux, arrived, gone
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(prompt):
		t.Fatalf("%s did not happen within %v", what, prompt)
	}
}

func TestCancelWaitingForTheHead(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			h, arrived, gone := blocking(t)
			srv := newServer(t, h)
			tr, d, _ := newTransport(t)
			roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", "")) // an idle connection to reuse

			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				<-arrived
				cancel()
			}()
			start := time.Now()
			resp, err := tr.RoundTrip(request(t, ctx, method, srv.URL+"/block", "{}"))
			if !errors.Is(err, context.Canceled) || resp != nil {
				t.Fatalf("got %v, %v; want an error wrapping context.Canceled", resp, err)
			}
			if took := time.Since(start); took > prompt {
				t.Errorf("RoundTrip returned %v after the cancellation", took)
			}
			waitFor(t, gone, "the server seeing the connection close")
			checkNotReused(t, tr, srv, d, "cancelled")
		})
	}
}

func TestCancelReadingTheBody(t *testing.T) {
	h, arrived, gone := blocking(t)
	srv := newServer(t, h)
	tr, d, _ := newTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp, err := tr.RoundTrip(request(t, ctx, "GET", srv.URL+"/block?event=1", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-arrived
	br := bufio.NewReader(resp.Body)
	if ev := readEvent(br); ev != "data: one\n" {
		t.Errorf("event %q", ev)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err = br.ReadByte()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("reading after the cancellation: %v; want an error wrapping context.Canceled", err)
	}
	if took := time.Since(start); took > prompt {
		t.Errorf("the read returned after %v", took)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("reading again: %v; want the same error", err)
	}
	waitFor(t, gone, "the server seeing the connection close")
	checkNotReused(t, tr, srv, d, "cancelled")
}

func TestDeadline(t *testing.T) {
	h, _, gone := blocking(t)
	srv := newServer(t, h)
	tr, _, _ := newTransport(t)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := (&http.Client{Transport: tr}).Do(request(t, ctx, "POST", srv.URL+"/block", "{}"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want an error wrapping context.DeadlineExceeded", err)
	}
	waitFor(t, gone, "the server seeing the connection close")
}

func TestCancelledBeforeTheRequest(t *testing.T) {
	srv := newServer(t, http.NotFoundHandler())
	tr, d, _ := newTransport(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("the upstream is closed")
	cancel(cause)
	_, err := tr.RoundTrip(request(t, ctx, "POST", srv.URL, "{}"))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("got %v, want an error wrapping context.Canceled and its cause", err)
	}
	if d.n.Load() != 0 {
		t.Errorf("%d connections dialled, want none", d.n.Load())
	}
}

func TestCloseMidStream(t *testing.T) {
	gone := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		end := time.After(2 * prompt) // the client did not go: the test fails
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				gone <- struct{}{}
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				gone <- struct{}{}
				return
			case <-end:
				return
			}
		}
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := newServer(t, mux)
	tr, d, _ := newTransport(t)
	resp, err := tr.RoundTrip(request(t, t.Context(), "GET", srv.URL+"/endless", ""))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		if ev := readEvent(br); ev != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q", i, ev)
		}
	}
	closed := make(chan struct{})
	go func() {
		resp.Body.Close()
		close(closed)
	}()
	waitFor(t, closed, "Body.Close returning")
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("reading after Close: %v, want http.ErrBodyReadAfterClose", err)
	}
	waitFor(t, gone, "the server seeing the connection close")
	checkNotReused(t, tr, srv, d, "closed")
}

// TestCloseDuringRead: Close from another goroutine ends a blocked Read.
func TestCloseDuringRead(t *testing.T) {
	h, arrived, gone := blocking(t)
	srv := newServer(t, h)
	tr, _, _ := newTransport(t)
	resp, err := tr.RoundTrip(request(t, t.Context(), "GET", srv.URL+"/block?event=1", ""))
	if err != nil {
		t.Fatal(err)
	}
	<-arrived
	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		readDone <- err
	}()
	time.Sleep(20 * time.Millisecond)
	resp.Body.Close()
	select {
	case err := <-readDone:
		if !errors.Is(err, http.ErrBodyReadAfterClose) {
			t.Errorf("the blocked read ended with %v, want http.ErrBodyReadAfterClose", err)
		}
	case <-time.After(prompt):
		t.Fatal("Close did not end the blocked read")
	}
	waitFor(t, gone, "the server seeing the connection close")
}

func TestConcurrentRequests(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		w.Write(data)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		n := r.URL.Query().Get("n")
		for i := range 3 {
			fmt.Fprintf(w, "data: %s.%d\n\n", n, i)
			w.(http.Flusher).Flush()
		}
	})
	srv := newServer(t, mux)
	tr, d, _ := newTransport(t)
	tr.MaxIdleConnsPerHost = 4

	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 25 {
				id := fmt.Sprintf("%d-%d", g, i)
				switch i % 3 {
				case 0, 1:
					body := strings.Repeat(id, i+1)
					resp, err := tr.RoundTrip(request(t, t.Context(), "POST", srv.URL+"/echo", body))
					if err != nil {
						t.Error(err)
						return
					}
					data, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || string(data) != body {
						t.Errorf("echo %s: %q, %v", id, data, err)
					}
				case 2:
					ctx, cancel := context.WithCancel(t.Context())
					resp, err := tr.RoundTrip(request(t, ctx, "GET", srv.URL+"/stream?n="+id, ""))
					if err != nil {
						cancel()
						t.Error(err)
						return
					}
					br := bufio.NewReader(resp.Body)
					if ev := readEvent(br); ev != "data: "+id+".0\n" {
						t.Errorf("stream %s: %q", id, ev)
					}
					if g%2 == 0 {
						cancel() // abandon the rest
					} else {
						io.Copy(io.Discard, br)
					}
					resp.Body.Close()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if srv.opened.Load() != d.n.Load() {
		t.Errorf("the server saw %d connections, %d were dialled", srv.opened.Load(), d.n.Load())
	}
	t.Logf("%d connections for 800 requests", d.n.Load())
}

func TestEarlyHints(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("X-Final", "yes")
		io.WriteString(w, "final")
	}))
	tr, d, _ := newTransport(t)
	for range 2 {
		resp, body := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL, ""))
		if resp.StatusCode != 200 || body != "final" || resp.Header.Get("X-Final") != "yes" || resp.Header.Get("Link") != "" {
			t.Errorf("got %d %v %q; want the final response 200 with X-Final and its body", resp.StatusCode, resp.Header, body)
		}
	}
	if d.n.Load() != 1 {
		t.Errorf("%d connections dialled, want 1", d.n.Load())
	}
}

func TestHTTPSGoesToTheFallback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	t.Cleanup(srv.Close)
	d := &dialer{}
	fb := &fallback{rt: srv.Client().Transport}
	tr := &httpc.Transport{Dial: d.dial, Fallback: fb}
	resp, body := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL, ""))
	if resp.StatusCode != 200 || body != "HTTP/1.1" || resp.TLS == nil {
		t.Errorf("got %d %q TLS %v", resp.StatusCode, body, resp.TLS != nil)
	}
	if fb.n.Load() != 1 || d.n.Load() != 0 {
		t.Errorf("%d requests to the fallback, %d connections dialled; want 1, 0", fb.n.Load(), d.n.Load())
	}
	tr.CloseIdleConnections()
	if fb.closeIdle.Load() != 1 {
		t.Error("CloseIdleConnections was not forwarded to the fallback")
	}
}

func TestRequestsForTheFallback(t *testing.T) {
	ch := make(chan seen, 1)
	srv := newServer(t, recorder(ch))
	large := strings.Repeat("x", 2<<20)
	tests := []struct {
		name string
		req  func() *http.Request
		body string
	}{
		{"unknown length", func() *http.Request {
			req := request(t, t.Context(), "POST", srv.URL, "")
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader("streamed")), -1
			return req
		}, "streamed"},
		{"over 1 MiB", func() *http.Request { return request(t, t.Context(), "POST", srv.URL, large) }, large},
		{"Expect", func() *http.Request {
			req := request(t, t.Context(), "PUT", srv.URL, "expecting")
			req.Header.Set("Expect", "100-continue")
			return req
		}, "expecting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &dialer{}
			fb := &fallback{rt: &http.Transport{}}
			tr := &httpc.Transport{Dial: d.dial, Fallback: fb}
			defer fb.rt.(*http.Transport).CloseIdleConnections()
			roundTrip(t, tr, tt.req())
			if got := <-ch; got.body != tt.body {
				t.Errorf("the server saw a body of %d bytes, want %d", len(got.body), len(tt.body))
			}
			if fb.n.Load() != 1 || d.n.Load() != 0 {
				t.Errorf("%d requests to the fallback, %d connections dialled; want 1, 0", fb.n.Load(), d.n.Load())
			}
		})
	}

	t.Run("invalid header", func(t *testing.T) {
		d := &dialer{}
		fb := &fallback{rt: &http.Transport{}}
		tr := &httpc.Transport{Dial: d.dial, Fallback: fb}
		req := request(t, t.Context(), "POST", srv.URL, "body")
		req.Header.Set("X-Injected", "a\r\nX-Evil: 1")
		if _, err := tr.RoundTrip(req); err == nil {
			t.Error("a header value with CR LF was sent")
		}
		if fb.n.Load() != 1 {
			t.Errorf("%d requests to the fallback, want 1 (net/http refuses it)", fb.n.Load())
		}
	})
}

func TestDialError(t *testing.T) {
	refused := errors.New("refused by policy (test)")
	tr := &httpc.Transport{
		Dial:     func(context.Context, string, string) (net.Conn, error) { return nil, refused },
		Fallback: &fallback{},
	}
	req := request(t, t.Context(), "POST", "http://127.0.0.1:1/mcp", "{}")
	body := &closeCounter{Reader: req.Body}
	req.Body = body
	if _, err := tr.RoundTrip(req); !errors.Is(err, refused) {
		t.Errorf("got %v, want the dial error", err)
	}
	if body.closed.Load() != 1 {
		t.Errorf("the request body was closed %d times, want 1", body.closed.Load())
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closed.Add(1)
	return nil
}

// TestRetryAfterAFailedWrite: a request whose write fails on a reused
// connection, nothing sent, goes on a new one.
func TestRetryAfterAFailedWrite(t *testing.T) {
	ch := make(chan seen, 2)
	srv := newServer(t, recorder(ch))
	d := &dialer{}
	tr := &httpc.Transport{Dial: d.dialFlaky, Fallback: &fallback{}}
	defer tr.CloseIdleConnections()
	roundTrip(t, tr, request(t, t.Context(), "POST", srv.URL, "first"))
	<-ch
	d.last.Load().failWrites.Store(true)
	_, body := roundTrip(t, tr, request(t, t.Context(), "POST", srv.URL, "second"))
	if got := <-ch; body != "POST second" || got.body != "second" {
		t.Errorf("the server saw %q and answered %q", got.body, body)
	}
	if len(ch) != 0 || d.n.Load() != 2 {
		t.Errorf("%d more requests seen, %d connections dialled; want 0, 2", len(ch), d.n.Load())
	}
}

// TestNoRetryOnceWritten: a connection dropped after the request was
// written loses a POST (it may have run) but not a GET, sent again.
func TestNoRetryOnceWritten(t *testing.T) {
	for _, tt := range []struct {
		method  string
		wantErr bool
		wantRun int32
	}{
		{method: "POST", wantErr: true, wantRun: 1},
		{method: "GET", wantRun: 2},
	} {
		t.Run(tt.method, func(t *testing.T) {
			var runs atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
			mux.HandleFunc("/drop", func(w http.ResponseWriter, r *http.Request) {
				if runs.Add(1) == 1 {
					c, _, _ := http.NewResponseController(w).Hijack()
					c.Close()
					return
				}
				io.WriteString(w, "answered")
			})
			srv := newServer(t, mux)
			tr, d, _ := newTransport(t)
			roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", ""))
			body := ""
			if tt.method == "POST" {
				body = "{}"
			}
			resp, err := tr.RoundTrip(request(t, t.Context(), tt.method, srv.URL+"/drop", body))
			if err == nil {
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(data) != "answered" {
					t.Errorf("body %q", data)
				}
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("error %v, want one: %v", err, tt.wantErr)
			}
			if runs.Load() != tt.wantRun || d.n.Load() != tt.wantRun {
				t.Errorf("the handler ran %d times, %d connections dialled; want %d", runs.Load(), d.n.Load(), tt.wantRun)
			}
		})
	}
}

func TestIdleConnections(t *testing.T) {
	release := make(chan struct{})
	var inFlight sync.WaitGroup
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			inFlight.Done()
			<-release
		}
		io.WriteString(w, "ok")
	}))
	tr, d, fb := newTransport(t)
	tr.MaxIdleConnsPerHost = 2
	tr.IdleConnTimeout = time.Hour

	// Three at once, then kept: two.
	inFlight.Add(3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/wait", "")) })
	}
	inFlight.Wait()
	close(release)
	wg.Wait()
	srv.waitClosed(t, 1)
	for range 5 {
		wg.Go(func() { roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/", "")) })
		wg.Go(func() { roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/", "")) })
		wg.Wait()
	}
	if d.n.Load() != 3 {
		t.Errorf("%d connections dialled, want 3: pairs of requests use the two kept", d.n.Load())
	}

	tr.CloseIdleConnections()
	srv.waitClosed(t, 3)
	if fb.closeIdle.Load() != 1 {
		t.Error("CloseIdleConnections was not forwarded to the fallback")
	}

	// Idle too long: closed, not reused.
	tr.IdleConnTimeout = 30 * time.Millisecond
	roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/", ""))
	time.Sleep(60 * time.Millisecond)
	roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/", ""))
	if d.n.Load() != 5 {
		t.Errorf("%d connections dialled, want 5: one idle past IdleConnTimeout is not reused", d.n.Load())
	}
	srv.waitClosed(t, 4)
}

// BenchmarkRoundTrip compares the Transport with net/http's on the
// exchange of a tool call, a POSTed JSON-RPC request and its JSON answer,
// 16 at a time as in the gateway's benchmark. Client and server share the
// process: compare allocations and CPU (user+sys of the whole run) more
// than ns/op, which is mostly how soon threads are woken.
func BenchmarkRoundTrip(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Session-Id": {"0123456789abcdef"}}
	for _, tt := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"httpc", &httpc.Transport{}},
		{"net-http", &http.Transport{MaxIdleConnsPerHost: 128}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			client := &http.Client{Transport: tt.rt}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				ctx, cancel := context.WithCancel(b.Context())
				defer cancel()
				for pb.Next() {
					req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, bytes.NewReader(body))
					req.Header = header
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

// released reads the first event of an SSE response to GET path and
// releases the body (as internal/upstream does once it has its answer).
func released(t *testing.T, tr *httpc.Transport, ctx context.Context, url string) {
	t.Helper()
	resp, err := tr.RoundTrip(request(t, ctx, "GET", url, ""))
	if err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(bufio.NewReaderSize(resp.Body, 16)); ev != "data: one\n" {
		t.Fatalf("event %q", ev)
	}
	r, ok := resp.Body.(interface{ Release() })
	if !ok {
		t.Fatalf("the body (%T) has no Release", resp.Body)
	}
	r.Release()
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("a released body could still be read")
	}
}

// oneEvent answers /sse with an SSE stream of one event. With gone set,
// /sse?hold=1 keeps the stream open until hold is closed or the client goes
// (then said on gone); /sse?more=1 also sends part of a second event first
// (said on more).
func oneEvent(hold <-chan struct{}, gone, more chan<- struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("more") != "" {
			io.WriteString(w, "data: tw")
			w.(http.Flusher).Flush()
			more <- struct{}{}
		}
		if r.URL.RawQuery != "" {
			select {
			case <-hold:
			case <-r.Context().Done():
				gone <- struct{}{}
			}
		}
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func waitIdled(t *testing.T, srv *server, n int32) {
	t.Helper()
	deadline := time.Now().Add(prompt)
	for srv.idled.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server finished %d responses, want %d", srv.idled.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A released body's rest, arrived by the next request, is read then: the
// connection is reused, and the next response is read right.
func TestReleaseReusesTheConnection(t *testing.T) {
	srv := newServer(t, oneEvent(nil, nil, nil))
	tr, d, _ := newTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	released(t, tr, ctx, srv.URL+"/sse")
	cancel() // the request's context ending after Release leaves the connection alone
	waitIdled(t, srv, 1)
	for range 3 {
		if _, got := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", "")); got != "ok" {
			t.Fatalf("the next response: %q", got)
		}
	}
	if srv.opened.Load() != 1 || d.n.Load() != 1 {
		t.Errorf("%d connections (%d dialled), want 1: the released one reused", srv.opened.Load(), d.n.Load())
	}
}

// A released body none of whose rest has arrived by the next request:
// that request takes another connection and leaves the released one idle,
// which the one after it reuses once the rest is in.
func TestReleaseBeforeTheEnd(t *testing.T) {
	hold, gone := make(chan struct{}), make(chan struct{}, 1)
	srv := newServer(t, oneEvent(hold, gone, nil))
	tr, d, _ := newTransport(t)
	released(t, tr, t.Context(), srv.URL+"/sse?hold=1")
	if _, got := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", "")); got != "ok" {
		t.Fatalf("the next response: %q", got)
	}
	if srv.opened.Load() != 2 || d.n.Load() != 2 {
		t.Errorf("%d connections (%d dialled), want 2: the released one still streaming", srv.opened.Load(), d.n.Load())
	}
	select {
	case <-gone:
		t.Fatal("the released connection was closed while its rest had not arrived")
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	waitIdled(t, srv, 2)
	// Two requests at once take both idle connections.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), prompt)
			defer cancel()
			resp, err := tr.RoundTrip(request(t, ctx, "GET", srv.URL+"/ok", ""))
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond) // hold the connection: the other request takes the other one
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if srv.opened.Load() != 2 {
		t.Errorf("%d connections, want 2: the released one reused once its rest was in", srv.opened.Load())
	}
}

// A released body only part of whose rest has arrived: the connection is
// closed, and the next request takes another.
func TestReleaseWithPartOfTheRest(t *testing.T) {
	gone, more := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := newServer(t, oneEvent(nil, gone, more))
	tr, d, _ := newTransport(t)
	released(t, tr, t.Context(), srv.URL+"/sse?more=1")
	<-more
	time.Sleep(20 * time.Millisecond) // the part written reaches the client's socket
	if _, got := roundTrip(t, tr, request(t, t.Context(), "GET", srv.URL+"/ok", "")); got != "ok" {
		t.Fatalf("the next response: %q", got)
	}
	if srv.opened.Load() != 2 || d.n.Load() != 2 {
		t.Errorf("%d connections (%d dialled), want 2", srv.opened.Load(), d.n.Load())
	}
	waitFor(t, gone, "the server seeing the released connection close")
}
