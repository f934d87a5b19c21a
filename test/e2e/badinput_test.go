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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Each kind of bad input gets a clear error and disturbs no other client:
// while each case runs, a victim client keeps calling a tool through the
// same gateway, every call on a new connection, and every one of its
// calls must succeed.

// victim calls everything_echo in a loop until stopped, each call on a
// new connection (so it is a new client for the connection limit too).
type victim struct {
	t     *testing.T
	calls atomic.Int64
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	errs  []string
}

func startVictim(ctx context.Context, t *testing.T, g *gw) *victim {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "victim", Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   g.url,
		HTTPClient: &http.Client{Transport: bearer{token: g.token, base: &http.Transport{DisableKeepAlives: true}}},
		MaxRetries: -1,
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connecting the victim: %v\nlog:\n%s", err, g.log())
	}
	v := &victim{t: t, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(v.done)
		defer cs.Close()
		for i := 0; ; i++ {
			select {
			case <-v.stop:
				return
			default:
			}
			msg := fmt.Sprintf("victim call %d", i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything_echo", Arguments: map[string]any{"message": msg}})
			switch {
			case err != nil:
				v.fail(fmt.Sprintf("call %d: %v", i, err))
			case res.IsError || text(res) != "Echo: "+msg:
				v.fail(fmt.Sprintf("call %d: result %q (isError %v), want %q", i, text(res), res.IsError, "Echo: "+msg))
			}
			v.calls.Add(1)
		}
	}()
	return v
}

func (v *victim) fail(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.errs) < 5 {
		v.errs = append(v.errs, s)
	}
}

// after waits until the victim has made n more calls: the bad input was
// there while they ran.
func (v *victim) after(ctx context.Context, n int64) {
	v.t.Helper()
	want := v.calls.Load() + n
	for v.calls.Load() < want {
		select {
		case <-ctx.Done():
			v.t.Fatalf("the victim made %d calls, want %d before the deadline", v.calls.Load(), want)
		case <-v.done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// finish stops the victim and fails the test for any call that failed.
func (v *victim) finish() {
	v.t.Helper()
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		v.t.Errorf("victim: %s", e)
	}
}

// rawSession is a session-era (2025-11-25) client speaking raw HTTP, to
// send what no SDK sends.
type rawSession struct {
	t  *testing.T
	g  *gw
	id string
	hc *http.Client
}

func newRawSession(t *testing.T, g *gw) *rawSession {
	t.Helper()
	s := &rawSession{t: t, g: g, hc: &http.Client{Timeout: 30 * time.Second}}
	resp, body := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.id = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || s.id == "" {
		t.Fatalf("initialize: %s, session %q: %s", resp.Status, s.id, body)
	}
	if resp, body := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s: %s", resp.Status, body)
	}
	return s
}

// post sends body and returns the response and its body, an event
// stream's last message if it is one.
func (s *rawSession) post(body string) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.g.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.g.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("POST: %v\nlog:\n%s", err, s.g.log())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("reading the response: %v", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		b = last
	}
	return resp, b
}

// rpcReply is a JSON-RPC response.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantRPCError checks a response is status with a JSON-RPC error of code
// (any if 0) whose message holds every one of want.
func wantRPCError(t *testing.T, what string, resp *http.Response, body []byte, status, code int, want ...string) {
	t.Helper()
	var r rpcReply
	if resp.StatusCode != status || json.Unmarshal(body, &r) != nil || r.Error == nil {
		t.Errorf("%s: %s %.300s; want %d with a JSON-RPC error", what, resp.Status, body, status)
		return
	}
	if code != 0 && r.Error.Code != code {
		t.Errorf("%s: error code %d (%q), want %d", what, r.Error.Code, r.Error.Message, code)
	}
	for _, w := range want {
		if !strings.Contains(r.Error.Message, w) {
			t.Errorf("%s: error %q does not say %q", what, r.Error.Message, w)
		}
	}
}

// echoCall is a tools/call of everything_echo with the given id; message
// is the raw JSON after "message": (more members may follow it).
func echoCall(id, message string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"everything_echo","arguments":{"message":` + message + `}}}`
}

// checkAlive checks the gateway still answers a plain call.
func checkAlive(t *testing.T, s *rawSession) {
	t.Helper()
	resp, body := s.post(echoCall("99", `"alive?"`))
	var r rpcReply
	if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || r.Result == nil || len(r.Result.Content) == 0 || r.Result.Content[0].Text != "Echo: alive?" {
		t.Errorf("the gateway after the bad input: %s %.300s; want the echo", resp.Status, body)
	}
}

func everythingConfig(extra string) string {
	return fmt.Sprintf(`{"everything": {"runCmd": %q}%s}`, filepath.Join(npmBin, "mcp-server-everything"), extra)
}

// 2 000 connections that never send a byte, at --max-connections 1024:
// each new connection closes the one idle longest, so the victim's new
// connections keep being served rather than refused with 503 until the
// idle ones time out.
func TestBadInputIdleConnections(t *testing.T) {
	const idle = 2000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 2*idle+200 {
		t.Skipf("the open files hard limit is %d; this case needs %d (the test's connections and the gateway's)", lim.Max, 2*idle+200)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			t.Fatalf("raising the open files limit to %d: %v", lim.Max, err)
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
	}

	g := newGW(t)
	// The gateway (Go) raises its own soft limit to the hard one at start.
	g.mustLaunch(everythingConfig(""), "--tool-prefix", "always", "--max-connections", "1024", "--read-header-timeout", "60s")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v := startVictim(ctx, t, g)
	v.after(ctx, 3)

	addr := fmt.Sprintf("127.0.0.1:%d", g.port)
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("opening idle connection %d: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	// The idle connections are held (none times out before 60s) while the
	// victim calls on.
	v.after(ctx, 20)
	v.finish()

	// The gateway closed the idle ones it had to, the oldest first: the
	// first connection is closed, the last is still open.
	if !closedByPeer(conns[0]) {
		t.Errorf("the first idle connection is still open; want it closed to make room")
	}
	s := newRawSession(t, g)
	checkAlive(t, s)
}

// closedByPeer reports whether the peer closed c (EOF or reset), waiting
// at most 30s.
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// The other kinds of bad input, each while the victim calls on.
func TestBadInput(t *testing.T) {
	const maxBody = 1 << 20
	g := newGW(t)
	g.mustLaunch(everythingConfig(fmt.Sprintf(`, "flaky": {"runCmd": %q}`, testServerCmd())),
		"--tool-prefix", "always", "--read-header-timeout", "1s", "--max-body-bytes", fmt.Sprint(maxBody))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newRawSession(t, g)

	run := func(name string, bad func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			v := startVictim(ctx, t, g)
			v.after(ctx, 2)
			bad(t)
			v.after(ctx, 5)
			v.finish()
			checkAlive(t, s)
		})
	}

	run("unfinished head", func(t *testing.T) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", g.port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: x\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang, not a timing
		if b, err := io.ReadAll(bufio.NewReader(c)); err != nil {
			t.Errorf("a head that never ends: read %q, %v; want the gateway to close the connection", b, err)
		}
	})

	run("body over the limit", func(t *testing.T) {
		big := echoCall("1", `"`+strings.Repeat("x", 2*maxBody)+`"`)
		resp, body := s.post(big)
		wantRPCError(t, "a 2 MiB body", resp, body, http.StatusRequestEntityTooLarge, -32600, fmt.Sprint(maxBody))
	})

	run("batch", func(t *testing.T) {
		resp, body := s.post(`[` + echoCall("1", `"a"`) + `,` + echoCall("2", `"b"`) + `]`)
		wantRPCError(t, "a batch", resp, body, http.StatusBadRequest, -32600, "batch")
	})

	run("deep nesting", func(t *testing.T) {
		const depth = 100000
		resp, body := s.post(echoCall("1", `"deep", "x": `+strings.Repeat("[", depth)+strings.Repeat("]", depth)))
		wantRPCError(t, "100 000 nested arrays in params", resp, body, http.StatusBadRequest, 0)
	})

	run("ids", func(t *testing.T) {
		for _, id := range []string{`"abc"`, `""`, `42`, `-7`, `0`} {
			resp, body := s.post(echoCall(id, `"id `+strings.ReplaceAll(id, `"`, `'`)+`"`))
			var r rpcReply
			if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || string(r.ID) != id || r.Result == nil {
				t.Errorf("id %s: %s %.300s; want 200 with the same id and a result", id, resp.Status, body)
			}
		}
		// Needs the strict-input branch (wire.Parse refusing ids that are
		// not a string or a number as -32600): today the front treats an
		// id null as a notification (202) and echoes the others.
		for _, id := range []string{`null`, `true`, `{"a":1}`, `[1]`} {
			resp, body := s.post(echoCall(id, `"bad id"`))
			wantRPCError(t, "id "+id, resp, body, http.StatusBadRequest, 0)
		}
	})

	run("duplicate member", func(t *testing.T) {
		// Needs the strict-input branch (wire.Parse refusing duplicate
		// members): today the last "name" wins.
		resp, body := s.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"everything_echo","name":"flaky_pid","arguments":{"message":"dup"}}}`)
		wantRPCError(t, `duplicate "name" in params`, resp, body, http.StatusBadRequest, -32600, "name")
	})

	run("server writes a line that is not JSON", func(t *testing.T) {
		cs := g.connect(ctx)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "flaky_garbage"})
		if err == nil || !strings.Contains(err.Error(), `"flaky"`) {
			t.Errorf("a call to a server that writes garbage: %v; want an error naming the server", err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "flaky_echo", Arguments: map[string]any{"text": "restarted"}})
		if err != nil || text(res) != "restarted" {
			t.Errorf("flaky_echo after the garbage: %v %v; want the server restarted", res, err)
		}
	})
}

// The host daemon has the same connection limit: idle connections make
// room for a sandbox's new ones.
func TestBadInputHostIdleConnections(t *testing.T) {
	const limit, idle = 16, 64
	h := &hostGW{t: t, state: t.TempDir(), logf: filepath.Join(t.TempDir(), "host.log")}
	h.cmd = exec.Command(gatewayBin, "host", "--state-dir", h.state, "--host", "127.0.0.1", "--port", "0",
		"--max-connections", fmt.Sprint(limit), "--read-header-timeout", "60s")
	logf, err := os.Create(h.logf)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stop)
	for h.url == "" {
		if m := hostReady.FindStringSubmatch(h.log()); m != nil {
			h.url = m[1]
		} else if h.cmd.ProcessState != nil {
			t.Fatalf("the host exited:\n%s", h.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	sb := h.createSandbox("crowded")
	u, err := url.Parse(h.url)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range idle {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatalf("opening idle connection %d: %v", i+1, err)
		}
		conns = append(conns, c)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "crowded", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   sb.url,
		HTTPClient: &http.Client{Transport: bearer{token: sb.token, base: &http.Transport{DisableKeepAlives: true}}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("a sandbox connecting past %d idle connections: %v\nhost log:\n%s", idle, err, h.log())
	}
	defer cs.Close()
	for i := range 5 {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d past %d idle connections: %v", i+1, idle, err)
		}
	}
	if !closedByPeer(conns[0]) {
		t.Errorf("the first idle connection is still open; want it closed to make room")
	}
}

// wantDenied checks body is a tools/call the policy refused: an isError
// result whose text and _meta["io.github.mcp-gateway/denied"] (code
// -32010) say each of want (docs/policy.md, "Refusals").
func wantDenied(t *testing.T, what string, resp *http.Response, body []byte, want ...string) {
	t.Helper()
	var r struct {
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Meta struct {
				Denied *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"io.github.mcp-gateway/denied"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || r.Result == nil || !r.Result.IsError ||
		len(r.Result.Content) == 0 || r.Result.Meta.Denied == nil || r.Result.Meta.Denied.Code != -32010 {
		t.Errorf("%s: %s %.300s; want 200 with an isError result carrying the denial (-32010)", what, resp.Status, body)
		return
	}
	for _, w := range want {
		if !strings.Contains(r.Result.Content[0].Text, w) || !strings.Contains(r.Result.Meta.Denied.Message, w) {
			t.Errorf("%s: denial %q does not say %q", what, r.Result.Content[0].Text, w)
		}
	}
}
