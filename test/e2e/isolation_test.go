package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that stops reading its response holds up only itself: client A
// starts a call that streams many progress notifications and never reads
// its response, with a tiny receive buffer; client B's echo calls to the
// same server all succeed meanwhile, and the gateway closes A's stream,
// saying so in its log.
func TestIsolationSlowClient(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// A: a session, then the call on a raw socket it never reads.
	sid := rawInitialize(ctx, t, g)
	a := dialSmallBuffer(t, g.port)
	defer a.Close()
	// About 1000 progress notifications a second for 50 s: several MB, more
	// than the kernel's socket buffers hold (before the streams had queues
	// of their own, B's calls hung once they were full, after some 25 s).
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trigger-long-running-operation",` +
		`"arguments":{"duration":50,"steps":50000},"_meta":{"progressToken":"a-progress"}}}`
	req := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + g.token +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: " + sid +
		"\r\nMcp-Protocol-Version: " + sessionEra + fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", len(call)) + call
	if _, err := io.WriteString(a, req); err != nil {
		t.Fatal(err)
	}

	// B: echo calls until A's stream is closed, and a few after.
	b := g.connectEra(ctx, sessionEra)
	const closedLine = "closed a slow client's stream"
	echo := func(i int) {
		t.Helper()
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second) // a hang, not a speed, fails the test
		defer cancel()
		msg := fmt.Sprintf("b-%d", i)
		res, err := b.CallTool(callCtx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil || res.IsError || text(res) != "Echo: "+msg {
			t.Fatalf("B's echo call %d while A does not read: %v %+v", i, err, res)
		}
	}
	calls := 0
	for ; !strings.Contains(g.log(), closedLine); calls++ {
		if ctx.Err() != nil {
			t.Fatalf("the gateway never closed A's stream; log:\n%s", g.log())
		}
		echo(calls)
		time.Sleep(20 * time.Millisecond)
	}
	var line string
	for _, l := range strings.Split(g.log(), "\n") {
		if strings.Contains(l, closedLine) {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "session=" + sid[:8], "stream=p", "request=2", "reason="} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line %q lacks %q", line, want)
		}
	}

	// A's response ends, once its call has, without the call's answer: its
	// stream was closed, not completed. B's calls go on succeeding all along.
	type drain struct {
		got []byte
		err error
	}
	drained := make(chan drain, 1)
	go func() {
		_ = a.SetReadDeadline(time.Now().Add(2 * time.Minute))
		got, err := io.ReadAll(a)
		drained <- drain{got, err}
	}()
	var d drain
	for waiting := true; waiting; {
		select {
		case d = <-drained:
			waiting = false
		default:
			echo(calls)
			calls++
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("B made %d echo calls while A did not read; %s", calls, line)
	got, err := d.got, d.err
	if err != nil {
		t.Fatalf("reading what A was sent: %v", err)
	}
	if !bytes.Contains(got, []byte("notifications/progress")) || bytes.Contains(got, []byte("Long running operation completed")) {
		t.Errorf("A got %d bytes ending %q; want progress notifications and no answer", len(got), got[max(0, len(got)-300):])
	}
}

// rawInitialize opens a session-era session with plain HTTP and returns its id.
func rawInitialize(ctx context.Context, t *testing.T, g *gw) string {
	t.Helper()
	post := func(sid, body string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, "POST", g.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", sessionEra)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+sessionEra+`","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, sid)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", resp.Status)
	}
	return sid
}

// dialSmallBuffer connects with a receive buffer as small as the kernel
// allows, so a client that does not read stops the sender soon.
func dialSmallBuffer(t *testing.T, port int) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// /health tells anyone the status and each server's state, and only a
// caller with the token the error texts (which quote servers' stderr); a
// loopback listener refuses a foreign Host, as on /mcp.
func TestHealthDetailNeedsToken(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "never")
	s := startServe(t, fmt.Sprintf(`{"healthy": {"runCmd": %q}, "late": {"runCmd": %q, "envs": {"E2E_SERVER_REQUIRES": %q}}}`,
		testServerCmd(), testServerCmd(), marker))
	get := func(auth, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/health", s.port), nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name, auth, host string
		status           int
		detail           bool
	}{
		{"no token", "", "", http.StatusOK, false},
		{"wrong token", "Bearer wrong", "", http.StatusOK, false},
		{"the token", "Bearer " + s.token, "", http.StatusOK, true},
		{"foreign Host", "Bearer " + s.token, "evil.example", http.StatusForbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(tt.auth, tt.host)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			if status != http.StatusOK {
				return
			}
			var h health
			if err := json.Unmarshal([]byte(body), &h); err != nil {
				t.Fatal(err)
			}
			if h.Status != "ok" || h.Upstreams["late"].State != "failed" || h.Upstreams["healthy"].State != "ready" || h.Upstreams["healthy"].Tools == 0 {
				t.Errorf("health = %s, want status, states and tool counts", body)
			}
			if got := strings.Contains(body, "is missing"); got != tt.detail || strings.Contains(body, `"lastError"`) != tt.detail {
				t.Errorf("error text shown = %v, want %v: %s", got, tt.detail, body)
			}
		})
	}
}

// A session-era call whose connection is cut goes on: a GET with the last
// event id received gets the rest of its events and its answer, each once.
func TestResumeCutCall(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid := rawInitialize(ctx, t, g)
	request := func(method, body string, headers ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, g.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+g.token)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", sessionEra)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s: %s %s %s", method, resp.Status, resp.Header.Get("Content-Type"), b)
		}
		return resp
	}
	resp := request("POST", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trigger-long-running-operation",`+
		`"arguments":{"duration":3,"steps":6},"_meta":{"progressToken":"p"}}}`)
	events := newSSEReader(resp.Body)
	var ids []string
	var got []string   // the data of the events received, the priming event's excluded
	for len(got) < 2 { // the priming event and two progress notifications, then the cut
		id, data, err := events.next()
		if err != nil {
			t.Fatalf("reading the call's stream: %v (ids so far %v)", err, ids)
		}
		if id == "" {
			t.Fatalf("an event without an id: %q", data)
		}
		ids = append(ids, id)
		if data != "" {
			got = append(got, data)
		}
	}
	if !strings.HasSuffix(ids[0], "-0") {
		t.Errorf("first event id %q: want the priming event's", ids[0])
	}
	resp.Body.Close()

	resumed := request("GET", "", "Last-Event-ID", ids[len(ids)-1])
	defer resumed.Body.Close()
	events = newSSEReader(resumed.Body)
	for {
		id, data, err := events.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the resumed stream: %v", err)
		}
		ids = append(ids, id)
		got = append(got, data)
	}
	var progress []float64
	for _, d := range got[:len(got)-1] {
		var n struct {
			Method string
			Params struct{ Progress float64 }
		}
		if err := json.Unmarshal([]byte(d), &n); err != nil || n.Method != "notifications/progress" {
			t.Fatalf("event %q: want a progress notification", d)
		}
		progress = append(progress, n.Params.Progress)
	}
	if fmt.Sprint(progress) != "[1 2 3 4 5 6]" {
		t.Errorf("progress before and after the cut: %v, want 1..6 once each", progress)
	}
	if last := got[len(got)-1]; !strings.Contains(last, `"id":7`) || !strings.Contains(last, "Long running operation completed") {
		t.Errorf("last event %q: want the call's answer", last)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("event id %s twice in %v", id, ids)
		}
		seen[id] = true
	}
}

// sseReader reads SSE events one at a time.
type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	return &sseReader{sc}
}

// next returns the next event's id and data; io.EOF when the stream ends.
func (r *sseReader) next() (id, data string, err error) {
	seen := false
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if seen {
				return id, data, nil
			}
		case strings.HasPrefix(line, "id:"):
			id, seen = strings.TrimSpace(line[3:]), true
		case strings.HasPrefix(line, "data:"):
			data, seen = strings.TrimSpace(line[5:]), true
		default:
			seen = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", io.EOF
}
