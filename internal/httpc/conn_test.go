package httpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer answers every request on every connection with the bytes
// answer returns for it, written as they are. It counts its connections.
type rawServer struct {
	ln       net.Listener
	accepted atomic.Int32
}

func newRawServer(t *testing.T, answer func(n int32) []string) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := s.accepted.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					for i, part := range answer(n) {
						if i > 0 {
							time.Sleep(20 * time.Millisecond)
						}
						if _, err := io.WriteString(c, part); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/" }

func get(t *testing.T, tr *Transport, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return string(data), err
}

// TestUnaskedData: a connection on which the server sent more than its
// response, at once or while it was idle, is not reused.
func TestUnaskedData(t *testing.T) {
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	for _, tt := range []struct {
		name  string
		parts []string
	}{
		{"with the response", []string{ok + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra"}},
		{"while idle", []string{ok, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRawServer(t, func(int32) []string { return tt.parts })
			tr := &Transport{}
			defer tr.CloseIdleConnections()
			for i := range 2 {
				if body, err := get(t, tr, srv.url()); body != "ok" || err != nil {
					t.Fatalf("request %d: %q, %v", i, body, err)
				}
				time.Sleep(40 * time.Millisecond) // the rest arrives
			}
			if n := srv.accepted.Load(); n != 2 {
				t.Errorf("%d connections, want 2", n)
			}
		})
	}
}

func TestHeadTooLong(t *testing.T) {
	huge := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("a", 1000)+"\r\n", maxHeadBytes/1000+10) + "Content-Length: 0\r\n\r\n"
	srv := newRawServer(t, func(int32) []string { return []string{huge} })
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	if _, err := get(t, tr, srv.url()); !errors.Is(err, errHeadTooLong) {
		t.Errorf("got %v, want an error wrapping errHeadTooLong", err)
	}
}

func TestTooManyInformationalResponses(t *testing.T) {
	hints := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", max1xx+1) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	srv := newRawServer(t, func(int32) []string { return []string{hints} })
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	if _, err := get(t, tr, srv.url()); err == nil {
		t.Errorf("%d informational responses accepted, want at most %d", max1xx+1, max1xx)
	}
}

// TestIdlePool checks the pool's order, bound and timeout directly.
func TestIdlePool(t *testing.T) {
	newIdle := func() *conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return newConn("host:80", a)
	}
	tr := &Transport{MaxIdleConnsPerHost: 3, IdleConnTimeout: time.Hour}
	conns := []*conn{newIdle(), newIdle(), newIdle(), newIdle()}
	for _, c := range conns {
		tr.putIdle(c)
	}
	// The first was closed to keep 3; the most recently used comes first.
	if _, err := conns[0].nc.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("the longest idle connection past the bound: write %v, want it closed", err)
	}
	for _, want := range []*conn{conns[3], conns[2], conns[1], nil} {
		if got := tr.takeIdle("host:80"); got != want {
			t.Fatalf("takeIdle returned %p, want %p", got, want)
		}
	}

	for _, c := range conns[1:] {
		tr.putIdle(c)
	}
	for _, c := range conns[1:] {
		c.idleAt = c.idleAt.Add(-2 * time.Hour)
	}
	if c := tr.takeIdle("host:80"); c != nil {
		t.Error("a connection idle past IdleConnTimeout was taken")
	}
	if tr.takeIdle("host:80") != nil {
		t.Error("the connections under an expired one were kept")
	}
}

// TestDialCancelled: a dial the context's end interrupted reports the
// context's error, not the dialler's.
func TestDialCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	tr := &Transport{Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		cancel()
		<-ctx.Done()
		return nil, errors.New("dial interrupted (test)")
	}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:1/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want an error wrapping context.Canceled", err)
	}
}
