package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/test/nginx"
)

// Sandbox platforms reach the gateway through a reverse proxy. These tests
// put real ones in front of the real binary (nginx as a platform configures
// it for streaming, and Go's httputil.ReverseProxy) and run the flows whose
// streaming a proxy can break: replies as SSE with progress before them, a
// server's request to the client on the call's own stream, the GET stream,
// DELETE.

// nginxBinary returns the nginx to run, skipping the test when there is
// none, except in CI (CI=true), where .ci/run installs it and its absence
// is a failure.
func nginxBinary(t *testing.T) string {
	t.Helper()
	bin, err := nginx.Binary()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; .ci/run installs it", err)
	}
	t.Skipf("%v; in CI this fails", err)
	return ""
}

// startNginx runs nginx in the foreground in front of the gateway's port,
// configured as a platform puts it in front of a streaming server, and
// returns its /mcp URL; the test's cleanup stops it.
func startNginx(t *testing.T, gatewayPort int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := nginx.Start(ctx, nginx.Config{
		Upstream: gatewayPort,
		Location: slices.Concat(nginx.Streaming, []string{"proxy_cache off", "proxy_send_timeout 1h"}),
		AsRoot:   os.Geteuid() == 0,
		Dir:      t.TempDir(),
		Bin:      nginxBinary(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("nginx said:\n%s", p.Output())
		}
	})
	return p.URL + "/mcp"
}

// startGoProxy runs an httputil.ReverseProxy in front of the gateway's
// port, as a Go platform would: full duplex (so a response streamed before
// the request body ends is not cut, golang/go#40747) and every write
// flushed at once.
func startGoProxy(t *testing.T, gatewayPort int) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", gatewayPort)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestBehindReverseProxies runs the same flows through nginx and through
// httputil.ReverseProxy, in front of one gateway serving the npm memory and
// everything servers.
func TestBehindReverseProxies(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}, "memory": {"runCmd": %q}}`,
		filepath.Join(npmBin, "mcp-server-everything"), filepath.Join(npmBin, "mcp-server-memory")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	waitForTools(ctx, t, g, "trigger-elicitation-request", "trigger-long-running-operation", "get-roots-list", "create_entities")
	cancel()
	for _, p := range []struct {
		name  string
		start func(*testing.T, int) string
	}{
		{"nginx", startNginx},
		{"httputil.ReverseProxy", startGoProxy},
	} {
		t.Run(p.name, func(t *testing.T) {
			proxied := *g
			proxied.t = t
			proxied.url = p.start(t, g.port)
			proxyFlows(t, &proxied)
		})
	}
}

// proxyFlows runs the end-to-end flows against g.url, a proxy's URL; the
// raw ones first, whose reads are bounded, so a proxy that holds a stream
// back fails there with a clear message.
func proxyFlows(t *testing.T, g *gw) {
	t.Run("progress streamed as SSE before the reply", func(t *testing.T) {
		c := newRawClient(t, g)
		resp := c.post(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":3},"_meta":{"progressToken":"p-proxy"}}}`)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("status %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, ct)
		}
		var got []string
		br := bufio.NewReader(resp.Body)
		for {
			msg, err := readEvent(br)
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Token    string  `json:"progressToken"`
					Progress float64 `json:"progress"`
				} `json:"params"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(msg), &m); err != nil {
				t.Fatalf("event %q: %v", msg, err)
			}
			if m.Method == "notifications/progress" {
				got = append(got, fmt.Sprintf("%s:%v", m.Params.Token, m.Params.Progress))
				continue
			}
			if string(m.ID) != "10" || !strings.Contains(string(m.Result), longRunText(1, 3)) {
				t.Fatalf("the reply %s", msg)
			}
			break
		}
		if want := []string{"p-proxy:1", "p-proxy:2", "p-proxy:3"}; !slices.Equal(got, want) {
			t.Errorf("progress before the reply: %v, want %v", got, want)
		}
	})

	// The server's request reaches the client on the call's own SSE stream
	// while the call waits for the answer: a proxy that held the stream back
	// would leave the call waiting (until the client's deadline: a failure).
	t.Run("a server's request on the call's stream, answered mid-call", func(t *testing.T) {
		c := newRawClient(t, g)
		resp := c.post(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}`)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("status %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, ct)
		}
		br := bufio.NewReader(resp.Body)
		msg, err := readEvent(br)
		if err != nil {
			t.Fatalf("waiting for the elicitation on the call's stream: %v", err)
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(msg), &req); req.Method != "elicitation/create" || req.ID == nil {
			t.Fatalf("the call's stream carried %s first, want the server's elicitation/create", msg)
		}
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada","check":true,"integer":7}}}`, req.ID)
		if resp := c.post(answer); resp.StatusCode != 202 {
			t.Fatalf("answering elicitation/create: status %d", resp.StatusCode)
		}
		msg, err = readEvent(br)
		if err != nil {
			t.Fatalf("waiting for the reply: %v", err)
		}
		if !strings.Contains(msg, `"id":20`) || !strings.Contains(msg, `- Name: Ada\n`) {
			t.Errorf("the reply %s, want the call's result with the answer", msg)
		}
	})

	// A server's request with no call in flight goes on the GET stream: the
	// client says its roots changed, the everything server asks for them.
	// Then DELETE ends the session, which ends the GET stream too.
	t.Run("GET stream, then DELETE", func(t *testing.T) {
		c := newRawClient(t, g)
		get := c.do("GET", "")
		defer get.Body.Close()
		if ct := get.Header.Get("Content-Type"); get.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("GET: status %d, Content-Type %q", get.StatusCode, ct)
		}
		if resp := c.post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); resp.StatusCode != 202 {
			t.Fatalf("notifications/roots/list_changed: status %d", resp.StatusCode)
		}
		br := bufio.NewReader(get.Body)
		msg, err := readEvent(br)
		if err != nil {
			t.Fatalf("reading the GET stream: %v", err)
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(msg), &req); req.Method != "roots/list" || req.ID == nil {
			t.Fatalf("the GET stream carried %s, want the server's roots/list", msg)
		}
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///proxied","name":"proxied"}]}}`, req.ID)
		if resp := c.post(answer); resp.StatusCode != 202 {
			t.Errorf("answering roots/list: status %d", resp.StatusCode)
		}

		del := c.do("DELETE", "")
		del.Body.Close()
		if del.StatusCode != 200 {
			t.Errorf("DELETE: status %d, want 200", del.StatusCode)
		}
		// The stream ends: EOF, after any events still queued.
		for {
			if _, err := readEvent(br); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("the GET stream after DELETE: %v, want its end", err)
				}
				break
			}
		}
		if resp := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 404 {
			t.Errorf("a call in the deleted session: status %d, want 404", resp.StatusCode)
		}
	})

	t.Run("initialize, tools/list, tools/call of memory and everything", func(t *testing.T) {
		for _, era := range bothEras {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, _ := recordingClient(ctx, t, g, era, "A")
			names := toolNames(ctx, t, cs)
			for _, want := range []string{"create_entities", "read_graph", "echo", "trigger-long-running-operation"} {
				if !slices.Contains(names, want) {
					t.Errorf("%s: tools/list through the proxy lacks %q: %v", era, want, names)
				}
			}
			entity := "proxied-" + strings.ReplaceAll(era, "-", "")
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_entities", Arguments: map[string]any{
				"entities": []any{map[string]any{"name": entity, "entityType": "test", "observations": []any{"through a proxy"}}},
			}}); err != nil {
				t.Fatalf("%s: create_entities: %v", era, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
			if err != nil || !strings.Contains(text(res), entity) {
				t.Errorf("%s: read_graph = %v, %v; want it to hold %q", era, res, err, entity)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through " + era}})
			if err != nil || text(res) != "Echo: through "+era {
				t.Errorf("%s: echo = %v, %v", era, res, err)
			}
		}
	})

	// The server's request reaches the client on the call's stream while the
	// call waits for the answer: a proxy that held the stream back would
	// leave the call waiting forever (until ctx ends: the test fails).
	t.Run("elicitation on the call's stream", func(t *testing.T) {
		for _, era := range bothEras {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, rec := recordingClient(ctx, t, g, era, "A")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-elicitation-request"})
			checkElicitedAnswer(t, era, rec, callResult{res, err})
		}
	})

}

// rawClient speaks streamable HTTP by hand, for what a proxy must pass
// exactly: status codes, content types, SSE events as they come.
type rawClient struct {
	t   *testing.T
	g   *gw
	ctx context.Context // bounds every request and the reading of its body
	sid string
}

// newRawClient initializes a session-era session declaring roots and elicitation.
func newRawClient(t *testing.T, g *gw) *rawClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := &rawClient{t: t, g: g, ctx: ctx}
	resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.sid = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || c.sid == "" {
		t.Fatalf("initialize through the proxy: status %d, session %q, body %s", resp.StatusCode, c.sid, b)
	}
	if resp := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
	return c
}

// post sends one message; a 202's body is closed here, any other's is the caller's.
func (c *rawClient) post(body string) *http.Response {
	resp := c.do("POST", body)
	if resp.StatusCode == 202 || resp.StatusCode == 404 {
		resp.Body.Close()
	}
	return resp
}

func (c *rawClient) do(method, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.ctx, method, c.g.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.g.token)
	switch method {
	case "POST":
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case "GET":
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s through the proxy: %v", method, err)
	}
	return resp
}

// readEvent returns the data of the next SSE event that carries a message.
func readEvent(br *bufio.Reader) (string, error) {
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line != "" {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			// An event with empty data is the gateway's priming event (an
			// id and a retry for resuming), which carries no message.
			if d := strings.Join(data, "\n"); d != "" {
				return d, nil
			}
			data = data[:0]
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}
