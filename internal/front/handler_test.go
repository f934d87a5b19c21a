package front

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
const pingBody = `{"jsonrpc":"2.0","id":2,"method":"ping"}`

func newGateway() *gateway.Gateway {
	return gateway.New(gateway.NewRouter(gateway.RouterOptions{Logger: slog.New(slog.DiscardHandler)}), gateway.Info{Name: "t", Version: "1"})
}

// do serves one request; headers are name, value pairs.
func do(h http.Handler, method, body string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
	if method == "POST" {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func initSession(t *testing.T, h http.Handler, headers ...string) string {
	t.Helper()
	w := do(h, "POST", initBody, headers...)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	return sid
}

// poll waits until cond holds; the bound only turns a hang into a failure.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An idle session ends: its id gets 404, its gateway session is closed,
// and the log says so.
func TestSessionIdleTimeout(t *testing.T) {
	logs := &logBuffer{}
	h := &Handler{Gateway: newGateway(), SessionIdleTimeout: 30 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	defer h.Close()
	sid := initSession(t, h)
	h.mu.Lock()
	gs := h.sessions[sid].gs
	h.mu.Unlock()
	poll(t, "the session to expire", func() bool { return !h.has(sid) }) // a ping would keep it alive
	if w := do(h, "POST", pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusNotFound {
		t.Errorf("ping with the expired id: %d, want 404", w.Code)
	}
	select {
	case <-gs.Done():
	default:
		t.Error("the expired session's gateway session is not closed")
	}
	if log := logs.String(); !strings.Contains(log, "session expired") || !strings.Contains(log, "session="+sid[:8]) {
		t.Errorf("log = %q, want the expiry of session %s", log, sid[:8])
	}
	if sid2 := initSession(t, h); sid2 == sid {
		t.Error("a new initialize got the expired id")
	}
}

// An open GET stream keeps its session alive while it is connected; once
// it closes, the session expires.
func TestSessionOpenGETKeepsAlive(t *testing.T) {
	timeout := 50 * time.Millisecond
	h := &Handler{Gateway: newGateway(), SessionIdleTimeout: timeout}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sid string
	var resp *http.Response
	for { // on a loaded machine the session may expire before its GET: then again
		sid = initSession(t, h)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Accept", "text/event-stream")
		var err error
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			break
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET: %s", resp.Status)
		}
	}
	// The priming event of the GET stream.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "id: g") {
		t.Fatalf("first line of the GET stream %q, %v; want its priming event's id", line, err)
	}
	time.Sleep(20 * timeout) // many janitor rounds
	if w := do(h, "POST", pingBody, "Mcp-Session-Id", sid); w.Code != http.StatusOK {
		t.Fatalf("ping while the GET stream is open: %d %s", w.Code, w.Body)
	}
	cancel()
	resp.Body.Close()
	poll(t, "the session to expire once its GET stream closed", func() bool { return !h.has(sid) })
}

func (h *Handler) has(sid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sid] != nil
}

// Beyond MaxSessions an initialize whose tenant's sessions all have a call
// in progress gets 503 with a JSON-RPC error; ending a session makes room.
// (An idle one would have been evicted: TestMaxSessionsFairShare.)
func TestMaxSessions(t *testing.T) {
	h := &Handler{Gateway: newGateway(), MaxSessions: 2}
	defer h.Close()
	first := initSession(t, h)
	h.busy(t, first)
	h.busy(t, initSession(t, h))
	w := do(h, "POST", initBody)
	var msg struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil || w.Code != http.StatusServiceUnavailable || msg.ID != 1 ||
		!strings.Contains(msg.Error.Message, "limit of 2 sessions") || w.Header().Get("Mcp-Session-Id") != "" {
		t.Fatalf("third initialize: %d %s (%v), want 503 with the limit", w.Code, w.Body, err)
	}
	if w := do(h, "DELETE", "", "Mcp-Session-Id", first); w.Code != http.StatusOK {
		t.Fatalf("DELETE: %d", w.Code)
	}
	initSession(t, h)
}

// /health: the detail only for a valid token (any tenant's), or with
// authentication off; a foreign Host on a loopback listener gets 403.
func TestHealth(t *testing.T) {
	gw := newGateway()
	var gotDetail bool
	health := func(detail bool) any { gotDetail = detail; return map[string]bool{"detail": detail} }
	single := &Handler{Gateway: gw, Token: "secret", Health: health}
	open := &Handler{Gateway: gw, Health: health}
	tenants := &Handler{Health: health, Tenants: func(tok string) *gateway.Gateway {
		if tok == "sandbox-a" {
			return gw
		}
		return nil
	}}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50005}
	tests := []struct {
		name   string
		h      *Handler
		auth   string
		host   string
		status int
		detail bool
	}{
		{"no token", single, "", "", 200, false},
		{"wrong token", single, "Bearer nope", "", 200, false},
		{"the token", single, "Bearer secret", "", 200, true},
		{"auth off", open, "", "", 200, true},
		{"tenant token", tenants, "Bearer sandbox-a", "", 200, true},
		{"unknown tenant", tenants, "Bearer sandbox-b", "", 200, false},
		{"foreign Host on loopback", single, "Bearer secret", "evil.example", 403, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotDetail = false
			r := httptest.NewRequest("GET", "/health", nil)
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, loopback))
			r.Host = "127.0.0.1:50005"
			if tt.host != "" {
				r.Host = tt.host
			}
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			tt.h.ServeHTTP(w, r)
			if w.Code != tt.status || gotDetail != tt.detail {
				t.Errorf("status %d, detail %v; want %d, %v (%s)", w.Code, gotDetail, tt.status, tt.detail, w.Body)
			}
		})
	}
}

// The front's own answers: authentication, methods, sessions, sizes,
// malformed messages and versions, in both eras.
func TestServeMCPDecisions(t *testing.T) {
	h := &Handler{Gateway: newGateway(), Token: "secret", MaxBodyBytes: 1024}
	defer h.Close()
	auth := []string{"Authorization", "Bearer secret"}
	sid := initSession(t, h, auth...)
	session := append(auth, "Mcp-Session-Id", sid)
	stateless := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	tests := []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		code    int    // JSON-RPC error code; 0: none expected
		has     string // in the body
	}{
		{"no token", "POST", pingBody, nil, 401, 0, "Unauthorized"},
		{"wrong token", "POST", pingBody, []string{"Authorization", "Bearer x"}, 401, 0, "Unauthorized"},
		{"PUT", "PUT", "", auth, 405, 0, ""},
		{"no session id", "POST", pingBody, auth, 400, -32600, "missing Mcp-Session-Id"},
		{"unknown session", "POST", pingBody, append(auth, "Mcp-Session-Id", "nope"), 404, -32600, "session not found"},
		{"ping", "POST", pingBody, session, 200, 0, `"result":{}`},
		{"too big", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, session, 413, -32600, "exceeds 1024 bytes"},
		{"malformed", "POST", `{"jsonrpc":`, session, 400, -32700, "malformed"},
		{"batch", "POST", `[` + pingBody + `]`, session, 400, -32600, "malformed"},
		{"unsupported session version", "POST", pingBody, append(session, "Mcp-Protocol-Version", "1999-01-01"), 400, -32022, "Unsupported protocol version 1999-01-01"},
		{"notification", "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session, 202, 0, ""},
		{"GET without session", "GET", "", auth, 400, -32600, "missing Mcp-Session-Id"},
		{"DELETE unknown", "DELETE", "", append(auth, "Mcp-Session-Id", "nope"), 404, -32600, ""},
		{"resume an unknown stream", "GET", "", append(session, "Last-Event-ID", "p9-1"), 400, -32600, "names no stream"},
		{"stateless request", "POST", stateless, append(auth, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"), 200, 0, `"tools":[]`},
		{"stateless, header mismatch", "POST", stateless, append(auth, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "prompts/list"), 400, -32020, "Header mismatch"},
		{"stateless, no method header", "POST", stateless, append(auth, "Mcp-Protocol-Version", "2026-07-28"), 400, -32020, "Mcp-Method"},
		{"stateless response", "POST", `{"jsonrpc":"2.0","id":1,"result":{}}`, append(auth, "Mcp-Protocol-Version", "2026-07-28"), 400, -32600, "no JSON-RPC responses"},
		{"stateless notification", "POST", `{"jsonrpc":"2.0","method":"notifications/x"}`, append(auth, "Mcp-Protocol-Version", "2026-07-28"), 202, 0, ""},
		{"future version", "POST", strings.Replace(stateless, "2026-07-28", "2099-01-01", 1), append(auth, "Mcp-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/list"), 400, -32022, "Unsupported protocol version 2099-01-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, tt.method, tt.body, tt.headers...)
			body, _ := io.ReadAll(w.Body)
			if w.Code != tt.status || !strings.Contains(string(body), tt.has) {
				t.Fatalf("%d %s; want %d with %q", w.Code, body, tt.status, tt.has)
			}
			if tt.code != 0 {
				var msg struct {
					Error struct{ Code int } `json:"error"`
				}
				if err := json.Unmarshal(body, &msg); err != nil || msg.Error.Code != tt.code {
					t.Errorf("error code %d (%v), want %d: %s", msg.Error.Code, err, tt.code, body)
				}
			}
		})
	}
}
