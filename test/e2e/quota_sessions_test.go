package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// quotaHTTP is a session-era client written by hand, to open sessions,
// abandon streams and resume them exactly as the test needs.
type quotaHTTP struct {
	t     *testing.T
	url   string // the /mcp endpoint
	token string
}

// quotaReply is a JSON-RPC answer as the test reads it.
type quotaReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (c *quotaHTTP) request(ctx context.Context, method, sid, body string, header ...string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	return resp
}

// call sends one message and reads its plain JSON answer.
func (c *quotaHTTP) call(sid, body string, header ...string) (int, http.Header, quotaReply) {
	c.t.Helper()
	resp := c.request(context.Background(), "POST", sid, body, header...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r quotaReply
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r); err != nil {
			c.t.Fatalf("answer %q: %v", b, err)
		}
	}
	return resp.StatusCode, resp.Header, r
}

// initialize opens a session as the client named name; it must succeed.
func (c *quotaHTTP) initialize(name string) string {
	c.t.Helper()
	code, h, r := c.call("", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, name))
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" || r.Error != nil {
		c.t.Fatalf("initialize as %q: %d, session %q, error %+v", name, code, sid, r.Error)
	}
	if code, _, _ := c.call(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %d", code)
	}
	return sid
}

// ping must succeed on a live session.
func (c *quotaHTTP) ping(sid string) {
	c.t.Helper()
	if code, _, r := c.call(sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusOK || r.Error != nil {
		c.t.Fatalf("ping on session %s: %d %+v", sid[:8], code, r.Error)
	}
}

// evicted checks that a session is gone with a 404 saying which limit
// ended it.
func (c *quotaHTTP) evicted(sid, why string) {
	c.t.Helper()
	code, _, r := c.call(sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	want := "session not found: the gateway ended it to make room for a new session (" + why + "); send initialize to start a new one"
	if code != http.StatusNotFound || r.Error == nil || r.Error.Message != want {
		c.t.Errorf("ping on the evicted session %s: %d %+v; want 404 with %q", sid[:8], code, r.Error, want)
	}
}

// quotaConnect opens a session with the Go SDK's client, named name.
func quotaConnect(ctx context.Context, t *testing.T, url, token, name string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}},
		MaxRetries: -1,
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting as %q: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// quotaScrape reads a Prometheus text page (scrape, without a test to fail).
func quotaScrape(url, token string) (string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b), nil
}

// quotaMetric is the value of the series named exactly series (name and
// labels as the page writes them); ok is false when the page lacks it.
func quotaMetric(page, series string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if v, found := strings.CutPrefix(line, series+" "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// Host mode: a sandbox's sessions beyond its quota cost that sandbox its
// own idlest session, and at the daemon's limit the sandbox holding the
// most pays; the other sandbox's client initializes and calls throughout.
// (On main the global pool of --max-sessions is first come, first served:
// sandbox a's sessions lock b out with 503.)
func TestQuotaSessionsPerSandbox(t *testing.T) {
	metricsPort := freePort(t)
	h := startHost(t, filepath.Join(t.TempDir(), "state"), "--max-sessions=4", "--max-sessions-per-tenant=3",
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	a := h.createSandbox("a")
	b := h.createSandbox("b")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ra := &quotaHTTP{t: t, url: h.url, token: a.token}

	var bSessions []*mcp.ClientSession
	victim := func(step string) {
		t.Helper()
		for i, cs := range bSessions {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp-find", Arguments: map[string]any{"query": "knowledge graph"}})
			if err != nil || res.IsError || text(res) == "" {
				t.Fatalf("%s: sandbox b's session %d: mcp-find: %v %v", step, i, err, res)
			}
		}
	}
	newB := func(step string) {
		t.Helper()
		bSessions = append(bSessions, quotaConnect(ctx, t, h.url, b.token, "agent"))
		victim(step)
	}

	newB("b's first session")
	a1, a2, a3 := ra.initialize("agent"), ra.initialize("agent"), ra.initialize("agent") // the daemon is full: 3 + 1
	ra.ping(a1)
	ra.ping(a3) // a2 is a's idlest
	victim("a at its quota")

	a4 := ra.initialize("agent") // a's quota: a's own idlest goes
	ra.evicted(a2, "this sandbox reached its limit of 3 sessions (--max-sessions-per-tenant) and this was its session idle for longest")
	for _, sid := range []string{a1, a3, a4} {
		ra.ping(sid)
	}
	victim("after a's fourth initialize")

	newB("b's second session, the daemon full") // a holds 3 > b's 1: a's idlest (a1) goes
	ra.evicted(a1, "this gateway reached its limit of 4 sessions (--max-sessions) and this was the idlest session of the tenant holding the most")
	ra.ping(a3)
	ra.ping(a4)

	a5 := ra.initialize("agent") // a 2, b 2: a holds no fewer than b, so a pays itself (a3)
	ra.evicted(a3, "this gateway reached its limit of 4 sessions (--max-sessions) and this was the idlest session of the tenant holding the most")
	ra.ping(a4)
	ra.ping(a5)
	victim("after a's fifth initialize")

	page := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "")
	for series, want := range map[string]float64{
		`mcp_gateway_sessions_evicted_total{limit="per_tenant"}`: 1,
		`mcp_gateway_sessions_evicted_total{limit="total"}`:      2,
		`mcp_gateway_sessions{protocol_version="2025-11-25"}`:    4,
	} {
		if got, ok := quotaMetric(page, series); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if _, ok := quotaMetric(page, `mcp_gateway_sessions_refused_total{limit="total"}`); ok {
		t.Error("an initialize was refused")
	}
	if !strings.Contains(h.log(), "session evicted to make room for a new one") {
		t.Errorf("the log does not say a session was evicted:\n%s", h.log())
	}
}

// A sandbox gateway: the tenant is the client identity (clientInfo.name).
// One identity beyond its quota loses its own idlest session, at the
// gateway's limit the identity holding the most pays, and a client
// inventing a new name for every session cannot lock the victim out nor end
// its active session. (On main agent-b gets 503 once agent-a fills the pool.)
func TestQuotaSessionsPerClient(t *testing.T) {
	s := startServe(t, everythingConfig(""), "--max-sessions=4", "--max-sessions-per-tenant=3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ra := &quotaHTTP{t: t, url: s.url, token: s.token}
	calls := 0
	call := func(step string, cs *mcp.ClientSession) {
		t.Helper()
		calls++
		msg := fmt.Sprintf("victim call %d", calls)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil || res.IsError || text(res) != "Echo: "+msg {
			t.Fatalf("%s: agent-b's call: %v %v, want %q", step, err, res, "Echo: "+msg)
		}
	}

	b1 := quotaConnect(ctx, t, s.url, s.token, "agent-b")
	call("agent-b alone", b1)
	a1, a2, a3 := ra.initialize("agent-a"), ra.initialize("agent-a"), ra.initialize("agent-a")
	ra.ping(a1)
	ra.ping(a3)
	a4 := ra.initialize("agent-a")
	ra.evicted(a2, `the client "agent-a" (its clientInfo.name) reached its limit of 3 sessions (--max-sessions-per-tenant) and this was its session idle for longest`)
	ra.ping(a1)
	ra.ping(a3)
	ra.ping(a4)
	call("agent-a at its quota", b1)

	b2 := quotaConnect(ctx, t, s.url, s.token, "agent-b") // agent-a holds 3 > 1: its idlest goes
	call("agent-b's second session", b2)
	call("agent-b's second session", b1)
	ra.evicted(a1, "this gateway reached its limit of 4 sessions (--max-sessions) and this was the idlest session of the tenant holding the most")

	// A client that lies: a fresh name for every session. Each such
	// newcomer takes its place from the tenant holding the most, its
	// idlest session; agent-b, calling in between, keeps its active one.
	b2.Close()
	for i := range 6 {
		ra.initialize(fmt.Sprintf("sybil-%d", i))
		call(fmt.Sprintf("after sybil %d", i), b1)
	}
	page := scrape(t, strings.TrimSuffix(s.url, "/mcp")+"/metrics", s.token)
	if got, _ := quotaMetric(page, `mcp_gateway_sessions_evicted_total{limit="total"}`); got < 6 {
		t.Errorf("sessions evicted at the total limit: %v, want at least 6", got)
	}
	if got, _ := quotaMetric(page, `mcp_gateway_sessions{protocol_version="2025-11-25"}`); got != 4 {
		t.Errorf("open sessions: %v, want the limit, 4", got)
	}
}

// abandonCall posts a tools/call of server-everything's long-running
// operation whose progress notifications carry token, reads the stream's
// priming event and hangs up: the call goes on, its events kept for a
// resume. It returns the stream's id.
func (c *quotaHTTP) abandonCall(sid string, id int, token string) string {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // hangs up
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":40},"_meta":{"progressToken":%q}}}`, id, token)
	resp := c.request(ctx, "POST", sid, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("long-running call: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	stream, ok := strings.CutPrefix(strings.TrimSpace(line), "id: ")
	if err != nil || !ok || !strings.HasSuffix(stream, "-0") {
		c.t.Fatalf("first line of the call's stream %q (%v), want its priming event's id", line, err)
	}
	return strings.TrimSuffix(stream, "-0")
}

// resume GETs a stream from after lastEventID: a 409's error, or the
// events' data of a 200.
func (c *quotaHTTP) resume(sid, lastEventID string) (int, quotaReply, []string) {
	c.t.Helper()
	resp := c.request(context.Background(), "GET", sid, "", "Last-Event-ID", lastEventID, "Accept", "text/event-stream")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r quotaReply
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(b, &r)
		return resp.StatusCode, r, nil
	}
	var data []string
	for _, line := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
			data = append(data, d)
		}
	}
	return resp.StatusCode, r, data
}

// A client abandons streams full of big progress notifications in several
// sessions: the gateway never holds more than --replay-bytes for replay
// (read from /metrics while it happens), a resume past dropped events gets
// 409 naming the limit, one from the oldest kept event gets the rest with
// the answer last, and a victim client's calls succeed meanwhile. (On main
// nothing bounds these bytes, and the resume replays a silent gap.)
func TestQuotaReplayBudget(t *testing.T) {
	const total = 262144
	s := startServe(t, everythingConfig(""), "--replay-bytes-per-stream=65536", "--replay-bytes-per-session=131072",
		fmt.Sprintf("--replay-bytes=%d", total))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	metrics := strings.TrimSuffix(s.url, "/mcp") + "/metrics"
	hog := &quotaHTTP{t: t, url: s.url, token: s.token}
	victim := quotaConnect(ctx, t, s.url, s.token, "victim")

	var (
		mu      sync.Mutex
		most    float64
		calls   int
		failure string
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // the victim calls, and reads the gauge, until the hog is done
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msg := fmt.Sprintf("victim call %d", i)
			res, err := victim.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
			page, serr := quotaScrape(metrics, s.token)
			held, ok := quotaMetric(page, "mcp_gateway_replay_bytes")
			mu.Lock()
			switch {
			case err != nil || res.IsError || text(res) != "Echo: "+msg:
				failure = fmt.Sprintf("victim call %d: %v %v", i, err, res)
			case serr != nil:
				failure = serr.Error()
			case !ok:
				failure = "/metrics has no mcp_gateway_replay_bytes"
			}
			most = max(most, held)
			calls++
			mu.Unlock()
			if failure != "" {
				return
			}
		}
	})

	token := strings.Repeat("t", 8000)
	type abandoned struct {
		sid, stream string
		id          int
	}
	var streams []abandoned
	for i := range 3 {
		sid := hog.initialize("hog")
		for j := range 4 {
			id := 10*i + j + 10
			streams = append(streams, abandoned{sid, hog.abandonCall(sid, id, fmt.Sprintf("%s-%d", token, id)), id})
		}
	}
	// Every call answered: the gateway then holds what it keeps for good.
	for deadline := time.Now().Add(time.Minute); ; {
		v, ok := quotaMetric(scrape(t, metrics, s.token), `mcp_gateway_calls_in_flight{server="everything"}`)
		if ok && v == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hog's calls did not end:\n%s", s.serveLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	page := scrape(t, metrics, s.token)
	held, _ := quotaMetric(page, "mcp_gateway_replay_bytes")
	mu.Lock()
	if failure != "" || calls == 0 {
		t.Fatalf("victim: %s (%d calls)", failure, calls)
	}
	most = max(most, held)
	mu.Unlock()
	if most > total || held == 0 {
		t.Errorf("replay bytes held: up to %v, %v at the end; want at most --replay-bytes=%d, and some", most, held, total)
	}
	t.Logf("12 abandoned streams of about 330 KB each: the gateway held at most %v replay bytes, %v at the end (%d victim calls meanwhile)", most, held, calls)
	if dropped, _ := quotaMetric(page, `mcp_gateway_replay_events_dropped_total{limit="stream"}`); dropped == 0 {
		t.Error("no events dropped by the per-stream budget")
	}

	// The oldest stream and the newest: both lost their first events.
	for _, ab := range []abandoned{streams[0], streams[len(streams)-1]} {
		last := ab.stream + "-0"
		code, r, _ := hog.resume(ab.sid, last)
		if code != http.StatusConflict || r.Error == nil || r.Error.Code != -32600 ||
			!strings.HasPrefix(r.Error.Message, `Last-Event-ID "`+last+`" cannot be resumed: events after it were dropped by the `) ||
			!strings.Contains(r.Error.Message, "(--replay-bytes") {
			t.Fatalf("resume from %s: %d %+v; want 409 naming the replay budget", last, code, r.Error)
		}
		var data struct {
			Limit             string `json:"limit"`
			OldestKeptEventID string `json:"oldestKeptEventId"`
		}
		_ = json.Unmarshal(r.Error.Data, &data)
		flag := map[string]string{"stream": "--replay-bytes-per-stream", "session": "--replay-bytes-per-session", "total": "--replay-bytes"}[data.Limit]
		if flag == "" || !strings.Contains(r.Error.Message, "("+flag+")") {
			t.Errorf("the 409 names limit %q and says %q", data.Limit, r.Error.Message)
		}
		if ab != streams[len(streams)-1] {
			continue
		}
		// Accepting the gap: from just before the oldest event kept.
		i := strings.LastIndexByte(data.OldestKeptEventID, '-')
		n, _ := strconv.Atoi(data.OldestKeptEventID[i+1:])
		code, _, events := hog.resume(ab.sid, fmt.Sprintf("%s-%d", ab.stream, n-1))
		if code != http.StatusOK || len(events) < 2 {
			t.Fatalf("resume from the oldest kept event %s: %d, %d events", data.OldestKeptEventID, code, len(events))
		}
		if !strings.Contains(events[0], `"method":"notifications/progress"`) || !strings.Contains(events[0], token) {
			t.Errorf("first replayed event %.200s, want a progress notification with the client's token", events[0])
		}
		if answer := events[len(events)-1]; !strings.HasPrefix(answer, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":`, ab.id)) || !strings.Contains(answer, "Long running operation completed") {
			t.Errorf("last replayed event %.300s, want the call's answer", answer)
		}
	}
	call := func() {
		res, err := victim.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "after"}})
		if err != nil || text(res) != "Echo: after" {
			t.Errorf("the victim's call after the resumes: %v %v", err, res)
		}
	}
	call()
}
