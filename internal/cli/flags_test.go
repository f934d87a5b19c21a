package cli

import (
	"bufio"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/front"
)

// The HTTP flags' defaults are the ones the issue sets, the launcher hands
// them to serve unchanged, and they reach the front's fields.
func TestHTTPFlags(t *testing.T) {
	var g gatewayFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	g.register(fs)
	g.registerHTTP(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := httpFlags{
		readHeaderTimeout: 10 * time.Second, bodyReadTimeout: 10 * time.Second, idleTimeout: 120 * time.Second, maxHeaderBytes: 1 << 20,
		maxConnections: 1024, slowClientTimeout: 10 * time.Second, streamKeepalive: 25 * time.Second, sessionIdleTimeout: 30 * time.Minute, maxSessions: 10000,
		maxSessionsPerTenant: 100, replayBytesPerStream: 1 << 20, replayBytesPerSession: 4 << 20, replayBytes: 64 << 20,
	}
	if g.http != want {
		t.Errorf("defaults = %+v, want %+v", g.http, want)
	}

	var served gatewayFlags
	fs2 := flag.NewFlagSet("serve", flag.ContinueOnError)
	served.register(fs2)
	served.registerHTTP(fs2)
	g.http.maxConnections, g.http.sessionIdleTimeout, g.http.maxSessions = 7, 0, 0
	g.http.maxSessionsPerTenant, g.http.replayBytesPerStream, g.http.replayBytesPerSession, g.http.replayBytes = 3, 10, 20, 30
	if err := fs2.Parse(g.args()); err != nil {
		t.Fatal(err)
	}
	if served.http != g.http {
		t.Errorf("serve got %+v from the launcher's args, want %+v", served.http, g.http)
	}

	var h front.Handler
	logger := slog.New(slog.DiscardHandler)
	want.configure(&h, logger)
	if h.MaxSessionsPerTenant != 100 || h.ReplayBytesPerStream != 1<<20 || h.ReplayBytesPerSession != 4<<20 || h.ReplayBytes != 64<<20 {
		t.Errorf("front.Handler: MaxSessionsPerTenant %d, ReplayBytesPerStream %d, ReplayBytesPerSession %d, ReplayBytes %d", h.MaxSessionsPerTenant, h.ReplayBytesPerStream, h.ReplayBytesPerSession, h.ReplayBytes)
	}
	if h.BodyReadTimeout != want.bodyReadTimeout {
		t.Errorf("front.Handler: BodyReadTimeout %v, want %v", h.BodyReadTimeout, want.bodyReadTimeout)
	}
	if h.StreamKeepalive != 25*time.Second {
		t.Errorf("front.Handler: StreamKeepalive %v, want 25s", h.StreamKeepalive)
	}
	noKeepalive := want
	noKeepalive.streamKeepalive = 0
	var quiet front.Handler
	noKeepalive.configure(&quiet, logger)
	if quiet.StreamKeepalive >= 0 {
		t.Errorf("--stream-keepalive 0 gives front.Handler StreamKeepalive %v, want negative (never)", quiet.StreamKeepalive)
	}
	noBodyLimit := want
	noBodyLimit.bodyReadTimeout = 0
	var unbounded front.Handler
	noBodyLimit.configure(&unbounded, logger)
	if unbounded.BodyReadTimeout >= 0 {
		t.Errorf("--body-read-timeout=0 (no limit) gave the front BodyReadTimeout %v; want a negative one (its 0 is the default)", unbounded.BodyReadTimeout)
	}
	if h.SlowClientTimeout != want.slowClientTimeout || h.SessionIdleTimeout != want.sessionIdleTimeout || h.MaxSessions != want.maxSessions || h.Logger != logger {
		t.Errorf("front.Handler: SlowClientTimeout %v, SessionIdleTimeout %v, MaxSessions %d, Logger set %v", h.SlowClientTimeout, h.SessionIdleTimeout, h.MaxSessions, h.Logger == logger)
	}
	srv, _ := want.server(&h, nil, logger)
	if srv.ReadHeaderTimeout != want.readHeaderTimeout || srv.IdleTimeout != want.idleTimeout || srv.MaxHeaderBytes != want.maxHeaderBytes ||
		srv.WriteTimeout != 0 || srv.ReadTimeout != 0 || srv.ErrorLog == nil {
		t.Errorf("http.Server = %+v; want the flags' timeouts, no read or write timeout (streams), an ErrorLog", srv)
	}

	for _, bad := range [][]string{{"--max-connections=-1"}, {"--read-header-timeout=-1s"}, {"--replay-bytes=-1"}, {"--max-sessions-per-tenant=-1"}, {"--body-read-timeout=-1s"}} {
		var b gatewayFlags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		b.registerHTTP(fs)
		if err := fs.Parse(bad); err != nil {
			t.Fatal(err)
		}
		if b.http.check() == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A client that connects and never finishes its request head is
// disconnected after --read-header-timeout.
func TestReadHeaderTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := httpFlags{readHeaderTimeout: 100 * time.Millisecond, idleTimeout: time.Minute, maxHeaderBytes: 1 << 20, maxConnections: 10}
	logger := slog.New(slog.DiscardHandler)
	srv, sl := f.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ln, logger)
	go srv.Serve(sl)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n"); err != nil { // the head never ends
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang, not a timing
	if n, err := bufio.NewReader(c).Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a client with an unfinished head read %d bytes, %v; want the connection closed (EOF)", n, err)
	}
}
