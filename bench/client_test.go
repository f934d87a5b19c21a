package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// The lean client against net/http's server: the response shapes the gateway
// and the SDK's server produce, over one keep-alive connection.
func TestClientReadsEveryResponseShape(t *testing.T) {
	var gotAuth, gotSession, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		gotAuth, gotSession, gotBody = r.Header.Get("Authorization"), r.Header.Get("Mcp-Session-Id"), string(body)
		switch r.URL.Query().Get("shape") {
		case "json": // Content-Length
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"c7"}]}}`)
		case "sse": // chunked, a notification first, the data split over two flushes
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,")
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"c7\"}]}}\r\n\r\n")
		case "big": // chunked beyond net/http's buffer
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"c7"}],"pad":"%s"}}`, strings.Repeat("x", 100000))
		case "accepted":
			w.WriteHeader(http.StatusAccepted)
		case "error":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"Unsupported protocol version"}}`)
		case "wrong":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"c8"}]}}`)
		}
	}))
	t.Cleanup(srv.Close)
	ep := &endpoint{addr: strings.TrimPrefix(srv.URL, "http://"), token: "tok"}
	c, err := dial(ep, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &session{era: eraLegacy, headers: "Mcp-Session-Id: abc\r\n", callHeaders: "Mcp-Session-Id: abc\r\n"}
	do := func(shape string) (httpResponse, error) {
		ep.path = "/mcp?shape=" + shape
		return c.do("POST", s.callHeaders, echoBody(nil, s, 7))
	}

	for _, shape := range []string{"json", "sse", "big", "json"} { // the same connection throughout
		r, err := do(shape)
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		if err := checkEcho(r, 7); err != nil {
			t.Errorf("%s: %v", shape, err)
		}
	}
	if gotAuth != "Bearer tok" || gotSession != "abc" {
		t.Errorf("headers sent: Authorization %q, Mcp-Session-Id %q", gotAuth, gotSession)
	}
	if want := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c7"}}}`; gotBody != want {
		t.Errorf("body sent %s, want %s", gotBody, want)
	}
	r, err := do("json")
	if err != nil || r.sessionID != "s-1" {
		t.Errorf("Mcp-Session-Id read %q (%v), want s-1", r.sessionID, err)
	}
	if r, err := do("accepted"); err != nil || r.status != 202 || len(r.body) != 0 {
		t.Errorf("202: status %d, body %q, %v", r.status, r.body, err)
	}
	r, err = do("error")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEcho(r, 7); err == nil || !strings.Contains(err.Error(), "-32022") {
		t.Errorf("an error response checks as %v, want the JSON-RPC error", err)
	}
	r, err = do("wrong")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkEcho(r, 7); err == nil {
		t.Error("a wrong echo checks as correct")
	}
}

func TestModernRequestCarriesMeta(t *testing.T) {
	s := &session{era: eraModern}
	got := string(echoBody(nil, s, 3))
	want := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c3"},` + clientMeta + `}}`
	if got != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i))
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.9, 90}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := percentile(ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

// The soak's lost calls: a call its server never answers fails after the
// call timeout and is counted lost; the other calls go on and succeed.
func TestLoadCountsHungCallsLost(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID int64 `json:"id"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &m)
		if m.ID == 3 { // never answered while the client waits
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"c%d"}]}}`, m.ID, m.ID)
	}))
	defer srv.Close()
	tg := &target{name: "fake", ep: endpoint{addr: strings.TrimPrefix(srv.URL, "http://"), path: "/mcp"}, era: eraLegacy, measured: os.Getpid()}
	s := &session{era: eraLegacy}
	res := loadEach(tg, []*session{s}, 2, 8, time.Minute, 3*time.Second)
	if res.lost != 1 || res.errors != 1 || res.calls != 7 {
		t.Errorf("lost %d, errors %d, answered %d; want 1, 1, 7 (first error: %v)", res.lost, res.errors, res.calls, res.firstErr)
	}
}
