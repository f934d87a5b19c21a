package cli

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
	return &limitClient{c: c, br: bufio.NewReader(c)}
}

// get sends GET /health on the connection and returns the response, its
// body read.
func (lc *limitClient) get(t *testing.T) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(lc.c, "GET /health HTTP/1.1\r\nHost: gateway\r\n\r\n"); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
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

// Beyond --max-connections, a new connection is answered 503 with
// Connection: close and closed; the connections already open keep being
// served, and a closed one gives its place back.
func TestConnectionLimit(t *testing.T) {
	const limit = 3
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := httpFlags{readHeaderTimeout: 10 * time.Second, idleTimeout: time.Minute, maxHeaderBytes: 1 << 20, maxConnections: limit}
	logger := slog.New(slog.DiscardHandler)
	srv := f.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), logger)
	go srv.Serve(f.listener(ln, logger))
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	addr := ln.Addr().String()

	var open []*limitClient
	for i := range limit {
		lc := dialLimit(t, addr)
		if resp, body := lc.get(t); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("connection %d of %d: %s %q, want 200 ok", i+1, limit, resp.Status, body)
		}
		open = append(open, lc)
	}

	extra := dialLimit(t, addr)
	resp, body := extra.get(t)
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || !strings.Contains(body, "too many connections") {
		t.Errorf("connection %d: %s (Connection: %q) %q; want 503 with Connection: close", limit+1, resp.Status, resp.Header.Get("Connection"), body)
	}
	if n, err := extra.br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection %d after its 503: read %d bytes, %v; want it closed (EOF)", limit+1, n, err)
	}

	for i, lc := range open {
		if resp, body := lc.get(t); resp.StatusCode != 200 || body != "ok" {
			t.Errorf("connection %d, second request after the refusal: %s %q, want 200 ok", i+1, resp.Status, body)
		}
	}

	// A closed connection gives its place back once the server has seen it
	// close, which it does on its own time: try until the test's deadline.
	open[0].c.Close()
	for {
		lc := dialLimit(t, addr)
		resp, _ := lc.get(t)
		if resp.StatusCode == 200 {
			break
		}
		lc.c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}
