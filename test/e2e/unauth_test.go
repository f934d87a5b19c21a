package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stalled is a raw connection that sent a request head declaring a body
// of 1000 bytes, and half of it, then stopped.
type stalled struct {
	c  net.Conn
	br *bufio.Reader
}

// stall opens a connection to port and sends method path with auth ("" for
// none), Content-Length: 1000 and 500 bytes of the body, in one write.
func stall(t *testing.T, port int, method, path, auth string) *stalled {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second)) // turns a hang into a failure; no timing is asserted
	head := method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if auth != "" {
		head += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"+strings.Repeat(" ", 500)); err != nil {
		t.Fatal(err)
	}
	return &stalled{c: c, br: bufio.NewReader(c)}
}

// response reads the response the gateway wrote, its body included.
func (s *stalled) response(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		t.Fatalf("reading the response to a request with half its body: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response's body: %v", err)
	}
	return resp, string(body)
}

// closed reports whether the gateway closed the connection (EOF, or a
// reset), rather than keeping it open until the test's deadline.
func (s *stalled) closed() (bool, error) {
	_, err := s.br.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, err
	}
	return err != nil, err
}

// keepAliveVictim is a Go SDK client with the valid token on its own
// keep-alive transport.
func keepAliveVictim(ctx context.Context, t *testing.T, g *gw, name string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   g.url,
		HTTPClient: &http.Client{Transport: bearer{token: g.token, base: tr}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("%s connecting: %v\nlog:\n%s", name, err, g.log())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mustEcho(ctx context.Context, t *testing.T, cs *mcp.ClientSession, msg string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": msg}})
	if err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if res.IsError || text(res) != msg {
		t.Fatalf("%s: result %q (isError %v), want %q", msg, text(res), res.IsError, msg)
	}
}

// Peers without a token that send a request head and half its body, as
// many as --max-connections, then more: the gateway answers 401 (or, on
// /health, its anonymous view) with Connection: close and closes each at
// once (it used to wait for the body for ever, holding the place). And at
// the limit the connections that never authenticated are the first
// closed, before a client's idle kept-alive one. Meanwhile a client with
// the token keeps calling, and new clients with it connect.
func TestUnauthPeersCostNothing(t *testing.T) {
	const limit = 16
	s := startServe(t, fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()), "--max-connections", fmt.Sprint(limit))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	victim := keepAliveVictim(ctx, t, s.gw, "victim")
	mustEcho(ctx, t, victim, "before")

	t.Run("stalled POSTs get 401 and are closed", func(t *testing.T) {
		for round := range 3 {
			var peers []*stalled
			for range limit {
				p := stall(t, s.port, "POST", "/mcp", "")
				resp, body := p.response(t)
				if resp.StatusCode != http.StatusUnauthorized || !resp.Close || resp.Header.Get("WWW-Authenticate") != `Bearer realm="mcp-gateway"` {
					t.Fatalf("round %d: a POST without a token and half its body: %s (Connection: close %v) %q; want 401 with Connection: close and WWW-Authenticate",
						round, resp.Status, resp.Close, body)
				}
				peers = append(peers, p)
			}
			p := stall(t, s.port, "GET", "/health", "")
			if resp, body := p.response(t); resp.StatusCode != http.StatusOK || !resp.Close || !strings.Contains(body, `"status":"ok"`) {
				t.Fatalf("round %d: GET /health without a token and half its body: %s (Connection: close %v) %q; want 200 with Connection: close", round, resp.Status, resp.Close, body)
			}
			peers = append(peers, p)
			mustEcho(ctx, t, victim, fmt.Sprintf("victim call after round %d", round))
			mustEcho(ctx, t, keepAliveVictim(ctx, t, s.gw, fmt.Sprintf("newcomer %d", round)), fmt.Sprintf("newcomer call after round %d", round))
			for i, p := range peers {
				if ok, err := p.closed(); !ok {
					t.Errorf("round %d, peer %d: read %v after its 401; want the gateway to have closed the connection", round, i+1, err)
				}
			}
		}
	})

	t.Run("connections that never authenticated are closed first", func(t *testing.T) {
		// A client with the token, on one kept-alive connection that
		// waits idle during the attack: the longest-waiting connection.
		var dials atomic.Int32
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
		t.Cleanup(tr.CloseIdleConnections)
		client := mcp.NewClient(&mcp.Implementation{Name: "idle victim", Version: "1"}, nil)
		idle, err := client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: s.url, HTTPClient: &http.Client{Transport: bearer{token: s.token, base: tr}}, MaxRetries: -1,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer idle.Close()
		mustEcho(ctx, t, idle, "idle victim, before")
		before := dials.Load()

		// Twice the limit of peers that send an unfinished request head
		// and nothing more: younger than a second, such a head used to
		// count as a request being served, never closed to make room.
		var peers []*stalled
		for range 2 * limit {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
				t.Fatal(err)
			}
			peers = append(peers, &stalled{c: c, br: bufio.NewReader(c)})
		}
		// The later half made room by closing the first half, oldest first.
		for i, p := range peers[:limit] {
			if ok, err := p.closed(); !ok {
				t.Fatalf("unauthenticated peer %d: read %v; want it closed to make room", i+1, err)
			}
		}
		mustEcho(ctx, t, idle, "idle victim, after the peers")
		if n := dials.Load() - before; n != 0 {
			t.Errorf("the idle victim dialled %d new connections: its kept-alive one was closed to make room for peers that never authenticated", n)
		}
		mustEcho(ctx, t, keepAliveVictim(ctx, t, s.gw, "newcomer among unauthenticated peers"), "newcomer among unauthenticated peers")
		if log := s.serveLog(); !strings.Contains(log, "closing the oldest connection that has not authenticated to make room") {
			t.Errorf("the log does not say an unauthenticated connection was closed to make room:\n%s", log)
		}
	})
}

// An authenticated request whose body stops arriving gets 408 once
// --body-read-timeout has passed, and its connection is closed; a call
// whose answer takes longer than that deadline is not cut by it.
func TestUnauthBodyReadTimeout(t *testing.T) {
	s := startServe(t, fmt.Sprintf(`{"one": {"runCmd": %q, "timeout": 3}}`, testServerCmd()), "--body-read-timeout", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p := stall(t, s.port, "POST", "/mcp", "Bearer "+s.token)
	resp, body := p.response(t)
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &msg)
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || msg.Error.Code != -32600 ||
		msg.Error.Message != "the request body did not arrive within 1s of its head; send the whole body without pausing" {
		t.Errorf("an authenticated POST whose body stalls: %s (Connection: close %v) %s; want 408 with Connection: close and a -32600 naming the deadline", resp.Status, resp.Close, body)
	}
	if ok, err := p.closed(); !ok {
		t.Errorf("after the 408: read %v; want the connection closed", err)
	}

	// The slow tool answers only when cancelled: the server's 3s timeout
	// ends it, after the 1s body deadline, on the same connection.
	for _, era := range []string{"", "2025-11-25"} {
		cs := s.connectEra(ctx, era)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		if err == nil || !strings.Contains(err.Error(), `mcp server "one" did not answer tools/call within 3s`) {
			t.Errorf("era %q: a call answered after the body deadline: %v; want the server's timeout error, not a cut connection", era, err)
		}
	}
}

// The host's /health without a sandbox's token says only that the host is
// up: no sandbox names, no servers; with a sandbox's token, every sandbox.
func TestUnauthHostHealth(t *testing.T) {
	h := startHost(t, t.TempDir())
	const name = "private-sandbox-name"
	sb := h.createSandbox(name)
	get := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", strings.TrimSuffix(h.url, "/mcp")+"/health", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, token := range []string{"", "not-a-sandbox-token"} {
		code, body := get(token)
		if code != http.StatusOK || strings.TrimSpace(body) != `{"status":"ok"}` || strings.Contains(body, name) {
			t.Errorf("/health with token %q: %d %s; want 200 {\"status\":\"ok\"} and no sandbox", token, code, body)
		}
	}
	code, body := get(sb.token)
	var doc struct {
		Status    string
		Sandboxes map[string]struct{ Mode string }
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || code != http.StatusOK || doc.Status != "ok" || doc.Sandboxes[name].Mode == "" {
		t.Errorf("/health with the sandbox's token: %d %s (%v); want every sandbox with its mode", code, body, err)
	}
}
