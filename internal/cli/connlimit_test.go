package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
)

// limitServer serves, under a connection limit of max, GET /health ("ok")
// and GET /block, which answers "released" once release is closed and
// sends on entered when it begins. Each marks its connection
// authenticated, as the front does for a request with a valid token,
// unless its query is "anon".
type limitServer struct {
	addr    string
	limit   *connLimit
	entered chan struct{}
	release chan struct{}
}

func startLimitServer(t *testing.T, max int) *limitServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &limitServer{addr: ln.Addr().String(), entered: make(chan struct{}, 64), release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		s.entered <- struct{}{}
		<-s.release
		io.WriteString(w, "released")
	})
	f := httpFlags{readHeaderTimeout: 10 * time.Second, idleTimeout: time.Minute, maxHeaderBytes: 1 << 20, maxConnections: max}
	marking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "anon" {
			front.MarkAuthenticated(r.Context())
		}
		mux.ServeHTTP(w, r)
	})
	srv, sl := f.server(marking, ln, slog.New(slog.DiscardHandler))
	if srv.ConnState == nil || srv.ConnContext == nil {
		t.Fatal("server() with --max-connections set no ConnState hook: the limit cannot tell idle connections from busy ones")
	}
	s.limit = sl.(*limitListener).l
	s.limit.slowHead = time.Hour // a partial head stays busy unless a test says otherwise
	go srv.Serve(sl)
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		srv.Shutdown(context.Background())
	})
	return s
}

// limitClient is one raw keep-alive connection to the server.
type limitClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialLimit(t *testing.T, addr string) *limitClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a hang, not a timing
	return &limitClient{c: c, br: bufio.NewReader(c)}
}

func (lc *limitClient) send(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(lc.c, "GET "+path+" HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
}

func (lc *limitClient) read(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(lc.br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(body)
}

// get sends GET path on the connection and returns the response, its body read.
func (lc *limitClient) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	lc.send(t, path)
	return lc.read(t)
}

func (lc *limitClient) mustGet(t *testing.T, what string) {
	t.Helper()
	if resp, body := lc.get(t, "/health"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("%s: %s %q, want 200 ok", what, resp.Status, body)
	}
}

// closed reports whether the server closed the connection (EOF) rather
// than leaving it open.
func (lc *limitClient) closed() (bool, error) {
	n, err := lc.br.Read(make([]byte, 1))
	return n == 0 && err == io.EOF, err
}

// Open is the number of connections counted against the limit.
func (l *connLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// anyRead reports whether a waiting connection has read a byte.
func (l *connLimit) anyRead() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if c.phase() == phaseHead {
			return true
		}
	}
	return false
}

// waitWaiting waits until n of the counted connections are waiting for a
// request (net/http reports that on its own time).
func (s *limitServer) waitWaiting(t *testing.T, n int) {
	t.Helper()
	for {
		s.limit.mu.Lock()
		waiting := 0
		for c := range s.limit.conns {
			if c.phase() == phaseWaiting {
				waiting++
			}
		}
		s.limit.mu.Unlock()
		if waiting == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitOpen waits until the limit counts n connections: the server accepts
// on its own time.
func (s *limitServer) waitOpen(t *testing.T, n int) {
	t.Helper()
	for s.limit.Open() != n {
		time.Sleep(time.Millisecond)
	}
}

// At the limit, a new client is served: it evicts the connection that has
// waited longest without a byte, whether it never sent anything or is idle
// between keep-alive requests; the others stay open and served.
func TestConnectionLimitEvictsIdle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oldest func(t *testing.T, lc *limitClient) // what the first connection does
	}{
		{"silent since connecting", func(t *testing.T, lc *limitClient) {}},
		{"idle after a keep-alive request", func(t *testing.T, lc *limitClient) { lc.mustGet(t, "keep-alive request") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 3
			s := startLimitServer(t, limit)
			oldest := dialLimit(t, s.addr)
			tc.oldest(t, oldest)
			s.waitOpen(t, 1)
			// net/http reports a connection idle after the client has
			// its response: wait for that, or a slow server goroutine
			// would leave the oldest busy while the others fill the limit.
			s.waitWaiting(t, 1)
			var others []*limitClient
			for i := 1; i < limit; i++ {
				lc := dialLimit(t, s.addr)
				lc.mustGet(t, "filling the limit")
				others = append(others, lc)
			}

			newcomer := dialLimit(t, s.addr)
			newcomer.mustGet(t, "a new client at the limit")
			if ok, err := oldest.closed(); !ok {
				t.Errorf("the connection idle longest: read %v; want it closed (EOF) to make room", err)
			}
			for i, lc := range others {
				lc.mustGet(t, fmt.Sprintf("connection %d, after the eviction", i+2))
			}
			if n := s.limit.Open(); n != limit {
				t.Errorf("%d connections counted, want %d", n, limit)
			}
		})
	}
}

// At the limit with every connection serving a request, or sending a
// request head, a new connection is answered 503 with Connection: close
// and closed; the requests in flight finish, and a closed connection gives
// its place back.
func TestConnectionLimitAllBusy(t *testing.T) {
	const limit = 3
	s := startLimitServer(t, limit)
	var busy []*limitClient
	for range limit - 1 {
		lc := dialLimit(t, s.addr)
		lc.send(t, "/block")
		<-s.entered
		busy = append(busy, lc)
	}
	// The last one, authenticated on an earlier request, is sending its
	// next head slowly: it has sent bytes, so it is serving a request,
	// not idle.
	partial := dialLimit(t, s.addr)
	partial.mustGet(t, "the request that authenticates")
	if _, err := io.WriteString(partial.c, "GET /health HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	for !s.limit.anyRead() {
		time.Sleep(time.Millisecond)
	}

	extra := dialLimit(t, s.addr)
	resp, body := extra.get(t, "/health")
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || !strings.Contains(body, "too many connections") {
		t.Errorf("connection %d: %s (Connection: %q) %q; want 503 with Connection: close", limit+1, resp.Status, resp.Header.Get("Connection"), body)
	}
	if ok, err := extra.closed(); !ok {
		t.Errorf("connection %d after its 503: read %v; want it closed (EOF)", limit+1, err)
	}

	close(s.release)
	for i, lc := range busy {
		if resp, body := lc.read(t); resp.StatusCode != 200 || body != "released" {
			t.Errorf("busy connection %d: %s %q, want 200 released", i+1, resp.Status, body)
		}
	}
	if _, err := io.WriteString(partial.c, "Host: gateway\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, body := partial.read(t); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("the connection with the slow head: %s %q, want 200 ok", resp.Status, body)
	}

	// A closed connection gives its place back once the server has seen it
	// close, which it does on its own time.
	busy[0].c.Close()
	s.waitOpen(t, limit-1)
	dialLimit(t, s.addr).mustGet(t, "a new client after a connection closed")
}

// A request head that has been trickling in for longer than slowHead is
// evicted when every other connection is serving a request: a client
// sending one byte at a time cannot hold a place.
func TestConnectionLimitEvictsSlowHead(t *testing.T) {
	const limit = 2
	s := startLimitServer(t, limit)
	busy := dialLimit(t, s.addr)
	busy.send(t, "/block")
	<-s.entered
	partial := dialLimit(t, s.addr)
	if _, err := io.WriteString(partial.c, "GET /health HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	for !s.limit.anyRead() {
		time.Sleep(time.Millisecond)
	}
	s.limit.mu.Lock()
	s.limit.slowHead = 0
	s.limit.mu.Unlock()

	dialLimit(t, s.addr).mustGet(t, "a new client while a head trickles in")
	if ok, err := partial.closed(); !ok {
		t.Errorf("the connection with the trickling head: read %v; want it closed (EOF) to make room", err)
	}
	close(s.release)
	if resp, body := busy.read(t); resp.StatusCode != 200 || body != "released" {
		t.Errorf("busy connection: %s %q, want 200 released", resp.Status, body)
	}
}

// The refusals in progress are bounded: with maxRefusing of them under
// way, a connection over the limit is closed without an answer, and no
// goroutine is started for it.
func TestConnectionLimitRefusalsBounded(t *testing.T) {
	const limit = 1
	s := startLimitServer(t, limit)
	busy := dialLimit(t, s.addr)
	busy.send(t, "/block")
	<-s.entered
	s.limit.refusing.Store(maxRefusing)

	extra := dialLimit(t, s.addr)
	extra.send(t, "/health")
	if n, err := extra.br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("a connection over the limit with %d refusals under way: read %d bytes (%v), want it closed without an answer", maxRefusing, n, err)
	}
	if n := s.limit.refusing.Load(); n != maxRefusing {
		t.Errorf("%d refusals counted after closing one unanswered, want %d", n, maxRefusing)
	}
}

// The slow-head rule measures how long a request head has been arriving,
// not how long its connection was idle before: a keep-alive connection
// that waited long and has just begun sending its next head is not
// evicted for it; a new client at the limit is refused instead.
func TestConnectionLimitSlowHeadFromFirstByte(t *testing.T) {
	const limit = 2
	s := startLimitServer(t, limit)
	busy := dialLimit(t, s.addr)
	busy.send(t, "/block")
	<-s.entered
	idle := dialLimit(t, s.addr)
	idle.mustGet(t, "keep-alive request")
	// Once it is idle, it is made to have waited an hour; a head is slow
	// after a minute.
	var lc *limitedConn
	for lc == nil {
		s.limit.mu.Lock()
		for c := range s.limit.conns {
			if c.phase() != phaseBusy {
				lc = c
			}
		}
		s.limit.mu.Unlock()
	}
	lc.since.Store(time.Now().Add(-time.Hour).UnixNano())
	s.limit.mu.Lock()
	s.limit.slowHead = time.Minute
	s.limit.mu.Unlock()
	if _, err := io.WriteString(idle.c, "GET /health HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	for !s.limit.anyRead() {
		time.Sleep(time.Millisecond)
	}

	if resp, _ := dialLimit(t, s.addr).get(t, "/health"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a new client while a head has just begun arriving: %s, want 503", resp.Status)
	}
	if _, err := io.WriteString(idle.c, "Host: gateway\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, body := idle.read(t); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("the connection whose head began after a long wait: %s %q, want 200 ok (not evicted)", resp.Status, body)
	}
}

// TestEvictionClaims: admit's choice is a claim. A connection it claimed
// stays claimed whatever net/http reports next (it is being closed), and
// one that is busy is never claimed.
func TestEvictionClaims(t *testing.T) {
	l := newConnLimit(1, slog.New(slog.DiscardHandler))
	a, b := net.Pipe()
	defer b.Close()
	lc := l.admit(a)
	lc.authenticate()
	l.ConnState(lc, http.StateActive)
	l.mu.Lock()
	if v, _, _ := l.evict(); v != nil {
		t.Error("a busy connection was claimed")
	}
	l.mu.Unlock()
	l.ConnState(lc, http.StateIdle)
	l.mu.Lock()
	v, _, _ := l.evict()
	l.mu.Unlock()
	if v != lc || lc.phase() != phaseEvicted {
		t.Fatalf("the waiting connection was not claimed (phase %d)", lc.phase())
	}
	for _, s := range []http.ConnState{http.StateActive, http.StateIdle, http.StateNew} {
		l.ConnState(lc, s)
		if lc.phase() != phaseEvicted {
			t.Errorf("after %v, a claimed connection is in phase %d", s, lc.phase())
		}
	}
}

// At the limit, the oldest connection that never authenticated goes
// first, even one serving a request while an authenticated one has been
// idle longer; the next goes the same way; only then the existing rules:
// the authenticated connection idle longest. An authenticated request in
// flight is never closed.
func TestConnectionLimitEvictsUnauthenticatedFirst(t *testing.T) {
	const limit = 4
	s := startLimitServer(t, limit)
	idle := dialLimit(t, s.addr)
	idle.mustGet(t, "an authenticated request")
	s.waitWaiting(t, 1)
	busy := dialLimit(t, s.addr)
	busy.send(t, "/block")
	<-s.entered
	anonBusy := dialLimit(t, s.addr)
	anonBusy.send(t, "/block?anon")
	<-s.entered
	anonIdle := dialLimit(t, s.addr)
	if resp, body := anonIdle.get(t, "/health?anon"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("an unauthenticated request: %s %q", resp.Status, body)
	}
	s.waitOpen(t, limit)

	for _, evicted := range []struct {
		what string
		lc   *limitClient
	}{
		{"the oldest unauthenticated connection, serving a request", anonBusy},
		{"the other unauthenticated connection, idle", anonIdle},
		{"the authenticated connection idle longest", idle},
	} {
		dialLimit(t, s.addr).mustGet(t, "a new client at the limit")
		if ok, err := evicted.lc.closed(); !ok {
			t.Errorf("%s: read %v; want it closed (EOF) to make room", evicted.what, err)
		}
	}
	close(s.release)
	if resp, body := busy.read(t); resp.StatusCode != 200 || body != "released" {
		t.Errorf("the authenticated request in flight: %s %q, want 200 released", resp.Status, body)
	}
}

// An unauthenticated connection is claimed whatever its phase; one that
// authenticated is not claimed while busy; a claimed one stays claimed
// when its request authenticates.
func TestEvictionClaimsUnauthenticated(t *testing.T) {
	l := newConnLimit(2, slog.New(slog.DiscardHandler))
	a, b := net.Pipe()
	defer b.Close()
	c, d := net.Pipe()
	defer d.Close()
	authed := l.admit(a)
	authed.authenticate()
	l.ConnState(authed, http.StateActive)
	anon := l.admit(c)
	l.ConnState(anon, http.StateActive)
	l.mu.Lock()
	v, _, why := l.evict()
	l.mu.Unlock()
	if v != anon || anon.phase() != phaseEvicted || !strings.Contains(why, "not authenticated") {
		t.Fatalf("claimed %p (%q), want the unauthenticated busy connection %p", v, why, anon)
	}
	anon.authenticate()
	if anon.phase() != phaseEvicted {
		t.Errorf("a claimed connection left phaseEvicted when it authenticated: phase %d", anon.phase())
	}
	l.mu.Lock()
	v, _, _ = l.evict()
	l.mu.Unlock()
	if v != nil {
		t.Errorf("an authenticated busy connection was claimed")
	}
	if authed.state.Load()&authenticated == 0 {
		t.Error("the authenticated bit was lost")
	}
}
