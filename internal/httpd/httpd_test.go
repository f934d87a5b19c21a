package httpd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// start serves h on a loopback port and returns its address.
func start(t *testing.T, h http.Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Path: "/mcp", ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// pathOf answers "fast" or "net/http": which path served the request.
func pathOf(w http.ResponseWriter) string {
	if _, ok := w.(*response); ok {
		return "fast"
	}
	return "net/http"
}

// echo answers with the path that served it, the method, and the body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Path", pathOf(w))
	fmt.Fprintf(w, "%s %s %s host=%s auth=%s body=%s", r.Method, r.URL.Path, r.Proto, r.Host, r.Header.Get("Authorization"), b)
})

func TestRequestsReachTheRightPath(t *testing.T) {
	_, addr := start(t, echo)
	client := &http.Client{}
	cases := []struct {
		name, method, path string
		body               io.Reader
		chunked            bool
		want, wantPath     string
	}{
		{"POST /mcp", "POST", "/mcp", strings.NewReader(`{"a":1}`), false, `POST /mcp HTTP/1.1 host=` + addr + ` auth=Bearer t body={"a":1}`, "fast"},
		{"empty body", "POST", "/mcp", http.NoBody, false, `POST /mcp HTTP/1.1 host=` + addr + ` auth=Bearer t body=`, "fast"},
		{"chunked body", "POST", "/mcp", strings.NewReader(`{"b":2}`), true, `POST /mcp HTTP/1.1 host=` + addr + ` auth=Bearer t body={"b":2}`, "net/http"},
		{"GET /mcp", "GET", "/mcp", nil, false, `GET /mcp HTTP/1.1 host=` + addr + ` auth=Bearer t body=`, "net/http"},
		{"other path", "POST", "/health", strings.NewReader(`x`), false, `POST /health HTTP/1.1 host=` + addr + ` auth=Bearer t body=x`, "net/http"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, "http://"+addr+c.path, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if c.chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(req.Body)
			}
			req.Header.Set("Authorization", "Bearer t")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != c.want || resp.Header.Get("X-Path") != c.wantPath {
				t.Errorf("got %q on %s, want %q on %s", got, resp.Header.Get("X-Path"), c.want, c.wantPath)
			}
			if resp.Header.Get("Date") == "" {
				t.Error("no Date header")
			}
		})
	}
}

// TestHandoffMidConnection sends three pipelined requests on one
// connection: the first is served here, the second is not, so it and the
// rest of the connection go to net/http with nothing lost.
func TestHandoffMidConnection(t *testing.T) {
	_, addr := start(t, echo)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\none" +
		"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n" +
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nthree"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, want := range []struct{ body, path string }{
		{"POST /mcp HTTP/1.1 host=h auth= body=one", "fast"},
		{"POST /mcp HTTP/1.1 host=h auth= body=two", "net/http"},
		{"POST /mcp HTTP/1.1 host=h auth= body=three", "net/http"},
	} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != want.body || resp.Header.Get("X-Path") != want.path {
			t.Errorf("got %q on %s, want %q on %s", got, resp.Header.Get("X-Path"), want.body, want.path)
		}
	}
}

// TestBareLineFeeds: a head whose lines end in a bare LF is net/http's to
// read, at once, not after a header timeout.
func TestBareLineFeeds(t *testing.T) {
	_, addr := start(t, echo)
	for _, req := range []string{
		"POST /mcp HTTP/1.1\nHost: h\nContent-Length: 2\n\nlf",
		"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\n\r\nlf",
		"POST /mcp HTTP/1.1\r\nHost: h\nContent-Length: 2\r\n\r\nlf",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "POST /mcp HTTP/1.1 host=h auth= body=lf" || resp.Header.Get("X-Path") != "net/http" {
			t.Errorf("%q: got %q on %s", req, body, resp.Header.Get("X-Path"))
		}
		c.Close()
	}
}

func TestResponseFraming(t *testing.T) {
	big := strings.Repeat("x", flushAt+100)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("X-Case") {
		case "json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		case "accepted":
			w.WriteHeader(http.StatusAccepted)
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: 2\n\n")
		case "big":
			io.WriteString(w, big)
		case "big-declared":
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			io.WriteString(w, big)
		case "pieces", "pieces-declared":
			// A large piece between small ones goes out without being
			// copied (Write of flushAt bytes or more), framed as its body is.
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("X-Case") == "pieces-declared" {
				w.Header().Set("Content-Length", fmt.Sprint(len(big)+2))
			}
			io.WriteString(w, "[")
			io.WriteString(w, big)
			io.WriteString(w, "]")
		case "error":
			http.Error(w, "nope", http.StatusTeapot)
		case "close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}
	})
	_, addr := start(t, h)
	cases := []struct {
		name, status, body, te, contentType string
		length                              int64
		closes                              bool
	}{
		{"json", "200 OK", `{"ok":true}`, "", "application/json", 11, false},
		{"accepted", "202 Accepted", "", "", "", 0, false},
		{"sse", "200 OK", "data: 1\n\ndata: 2\n\n", "chunked", "text/event-stream", -1, false},
		{"big", "200 OK", big, "chunked", "text/plain; charset=utf-8", -1, false},
		{"big-declared", "200 OK", big, "", "text/plain; charset=utf-8", int64(len(big)), false},
		{"pieces", "200 OK", "[" + big + "]", "chunked", "application/json", -1, false},
		{"pieces-declared", "200 OK", "[" + big + "]", "", "application/json", int64(len(big) + 2), false},
		{"error", "418 I'm a teapot", "nope\n", "", "text/plain; charset=utf-8", 5, false},
		{"close", "200 OK", "bye", "", "text/plain; charset=utf-8", 3, true},
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for _, tc := range cases {
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Case: %s\r\nContent-Length: 2\r\n\r\n{}", tc.name)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: body: %v", tc.name, err)
		}
		te := strings.Join(resp.TransferEncoding, ",")
		if resp.Status != tc.status || string(body) != tc.body || te != tc.te || resp.ContentLength != tc.length ||
			resp.Header.Get("Content-Type") != tc.contentType || resp.Close != tc.closes {
			t.Errorf("%s: got %s, %d bytes, te %q, length %d, type %q, close %v; want %s, %d bytes, te %q, length %d, type %q, close %v",
				tc.name, resp.Status, len(body), te, resp.ContentLength, resp.Header.Get("Content-Type"), resp.Close,
				tc.status, len(tc.body), tc.te, tc.length, tc.contentType, tc.closes)
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after Connection: close, read %d bytes, %v; want EOF", n, err)
	}
}

// TestClientGoneCancels: a request whose client goes away is cancelled,
// once it has run long enough to be watched.
func TestClientGoneCancels(t *testing.T) {
	cancelled := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(10 * time.Second):
			cancelled <- nil
		}
	})
	_, addr := start(t, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}")
	time.Sleep(10 * time.Millisecond)
	c.Close()
	if err := <-cancelled; err != context.Canceled {
		t.Fatalf("the handler's context ended with %v, want context.Canceled", err)
	}
}

// TestSlowRequestsKeepPipelinedBytes: requests that outlast watchAfter, with
// the next request already sent, keep every byte of it.
func TestSlowRequestsKeepPipelinedBytes(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		time.Sleep(2 * watchAfter)
		if r.Context().Err() != nil {
			http.Error(w, "cancelled", http.StatusInternalServerError)
			return
		}
		w.Write(b)
	})
	_, addr := start(t, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n%d", i)
	}
	for i := range 3 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != fmt.Sprint(i) {
			t.Errorf("response %d: %s %q", i, resp.Status, body)
		}
	}
}

func TestPanicClosesOnlyItsConnection(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Panic") != "" {
			panic("boom")
		}
		io.WriteString(w, "fine")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Path: "/mcp", ErrorLog: log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), "", 0)}
	go s.Serve(ln)
	defer s.Close()
	addr := ln.Addr().String()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Panic: 1\r\nContent-Length: 0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after a panic, read %d bytes, %v; want EOF", n, err)
	}
	c.Close()
	resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fine" {
		t.Errorf("next connection got %q", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "panic serving") || !strings.Contains(logged.String(), "boom") {
		t.Errorf("log %q does not report the panic", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestShutdown closes idle connections at once and lets a request in
// flight finish.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.Header.Get("X-Wait") != "" {
			<-release
		}
		io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, Path: "/mcp"}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")
	idleR := bufio.NewReader(idle)
	resp, err := http.ReadResponse(idleR, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Wait: 1\r\nContent-Length: 0\r\n\r\n")
	time.Sleep(20 * time.Millisecond)

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idleR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v, want EOF", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	resp, err = http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "done" || !resp.Close {
		t.Errorf("request in flight got %q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; err != http.ErrServerClosed {
		t.Errorf("Serve: %v", err)
	}
}

// TestConcurrentConnections runs many connections at once, with quick and
// watched (slow) requests and clients that go away mid-request, under the
// race detector: every answer a client waits for is its own.
func TestConcurrentConnections(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Slow") != "" {
			select {
			case <-time.After(watchAfter + 10*time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		w.Write(b)
	})
	_, addr := start(t, h)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for i := range 20 {
				body := fmt.Sprintf("g%d-i%d", g, i)
				slow := ""
				if i%7 == 3 {
					slow = "X-Slow: 1\r\n"
				}
				if g%4 == 0 && i == 10 {
					// Go away in the middle of a slow request.
					fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Slow: 1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					return
				}
				fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: h\r\n%sContent-Length: %d\r\n\r\n%s", slow, len(body), body)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- fmt.Errorf("%s: %v", body, err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				if string(got) != body {
					errs <- fmt.Errorf("sent %s, got %q", body, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// flakyListener fails its first Accept with a temporary error, as a
// listener out of file descriptors does.
type flakyListener struct {
	net.Listener
	failed bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptRetriesTemporaryErrors: running out of file descriptors for a
// moment does not stop the server.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: echo, Path: "/mcp", ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan error, 1)
	go func() { served <- s.Serve(&flakyListener{Listener: ln}) }()
	defer func() {
		s.Close()
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post("http://"+ln.Addr().String()+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "body={}") {
		t.Errorf("got %q", body)
	}
}
