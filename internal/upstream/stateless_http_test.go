package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// statelessServer is a remote server of the 2026-07-28 era only: it refuses
// initialize, answers server/discover, and checks every request for the
// era's _meta and the Mcp-Method / Mcp-Name headers.
func statelessServer(t *testing.T) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var problems []string
	bad := func(format string) { mu.Lock(); problems = append(problems, format); mu.Unlock() }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Mcp-Method") != msg.Method {
			bad("Mcp-Method " + r.Header.Get("Mcp-Method") + " for " + msg.Method)
		}
		if msg.Method == "initialize" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"initialize is gone; use server/discover"}}`)
			return
		}
		if r.Header.Get("MCP-Protocol-Version") != StatelessVersion || msg.Params.Meta["io.modelcontextprotocol/protocolVersion"] != StatelessVersion ||
			msg.Params.Meta["io.modelcontextprotocol/clientCapabilities"] == nil {
			bad("no 2026-07-28 version or _meta on " + msg.Method)
		}
		if r.Header.Get("Mcp-Session-Id") != "" {
			bad("a session id on " + msg.Method)
		}
		var result string
		switch msg.Method {
		case "server/discover":
			result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}`
		case "tools/list":
			result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			if r.Header.Get("Mcp-Name") != msg.Params.Name {
				bad("Mcp-Name " + r.Header.Get("Mcp-Name"))
			}
			result = `{"content":[{"type":"text","text":"modern hello"}]}`
		default:
			result = `{}`
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &problems
}

func TestRemoteStatelessServer(t *testing.T) {
	srv, problems := statelessServer(t)
	h := NewHTTP(HTTPOptions{Name: "modern", URL: srv.URL + "/mcp", Capabilities: json.RawMessage(`{"roots":{}}`)})
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if !h.Stateless() || !strings.Contains(string(h.InitializeResult()), `"protocolVersion":"2026-07-28"`) || !strings.Contains(string(h.InitializeResult()), `"name":"modern"`) {
		t.Fatalf("modern %v, initialize result %s", h.Stateless(), h.InitializeResult())
	}
	if _, err := h.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	resp, err := h.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{}}`))
	if err != nil || !strings.Contains(string(resp.Result), "modern hello") {
		t.Fatalf("call: %v %s", err, resp.Result)
	}
	if len(*problems) > 0 {
		t.Fatalf("the server saw: %v", *problems)
	}
}

// A tool's x-mcp-header parameters are mirrored in Mcp-Param-* headers of
// its calls (SEP-2243), encoded when not plain ASCII, left out when null;
// the list is shared by the upstreams of one server.
func TestRemoteParamHeaders(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		msg := readRPC(r)
		w.Header().Set("Content-Type", "application/json")
		var result string
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"q","inputSchema":{"type":"object","properties":{` +
				`"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},` +
				`"flag":{"type":"boolean","x-mcp-header":"Flag"},"text":{"type":"string","x-mcp-header":"Text"},` +
				`"gone":{"type":"string","x-mcp-header":"Gone"},"bad":{"type":"string","x-mcp-header":"has space"},"plain":{"type":"string"}}}}]}`
		case "tools/call":
			got <- r.Header.Clone()
			result = `{"content":[]}`
		case "":
			w.WriteHeader(http.StatusAccepted)
			return
		default:
			result = `{}`
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
	}))
	defer srv.Close()
	shared := &ParamHeaders{}
	lister := NewHTTP(HTTPOptions{Name: "h", URL: srv.URL, ParamHeaders: shared, NoListen: true})
	defer lister.Close()
	caller := NewHTTP(HTTPOptions{Name: "h", URL: srv.URL, ParamHeaders: shared, NoListen: true})
	defer caller.Close()
	ctx := context.Background()
	if _, err := lister.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := caller.Call(ctx, "tools/call", json.RawMessage(`{"name":"q","arguments":{"region":"us-west1","n":42,"flag":true,"text":" Hello, 世界","gone":null,"bad":"x","plain":"p"}}`)); err != nil {
		t.Fatal(err)
	}
	h := <-got
	want := map[string]string{
		"Mcp-Method": "tools/call", "Mcp-Name": "q",
		"Mcp-Param-Region": "us-west1", "Mcp-Param-N": "42", "Mcp-Param-Flag": "true",
		"Mcp-Param-Text": "=?base64?IEhlbGxvLCDkuJbnlYw=?=", "Mcp-Param-Gone": "",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, h.Get(k), v)
		}
	}
	for k := range h {
		if strings.HasPrefix(k, "Mcp-Param-") && want[k] == "" {
			t.Errorf("unexpected header %s", k)
		}
	}
}

// A server's era with and without DiscoverFirst: a server that speaks both
// eras is spoken to in the session era by default and in 2026-07-28 when
// asked server/discover first; a session-era server asked server/discover
// first refuses it and is initialized as before.
func TestRemoteDiscoverFirst(t *testing.T) {
	serve := func(discover, rejectFirst bool) (*httptest.Server, *[]string) {
		var mu sync.Mutex
		var methods []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			msg := readRPC(r)
			mu.Lock()
			methods = append(methods, msg.Method)
			first := len(methods) == 1
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if first && rejectFirst {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`)
				return
			}
			var result string
			switch msg.Method {
			case "initialize":
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"dual","version":"1"}}`
			case "server/discover":
				if !discover {
					io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`)
					return
				}
				result = `{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}}}`
			case "notifications/initialized":
				w.WriteHeader(http.StatusAccepted)
				return
			default:
				result = `{"tools":[]}`
			}
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
		}))
		t.Cleanup(srv.Close)
		return srv, &methods
	}
	for _, c := range []struct {
		name                   string
		dualEra, discoverFirst bool
		rejectFirst            bool
		wantStateless          bool
		wantFirst              string
	}{
		{"dual-era server, initialize first (the default)", true, false, false, false, "initialize"},
		{"dual-era server, discover first", true, true, false, true, "server/discover"},
		{"session-era server, discover first", false, true, false, false, "server/discover"},
		{"dual-era server refusing the first request's version (-32022)", true, true, true, true, "server/discover"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, methods := serve(c.dualEra, c.rejectFirst)
			h := NewHTTP(HTTPOptions{Name: "dual", URL: srv.URL, NoListen: true, DiscoverFirst: c.discoverFirst})
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.Start(ctx); err != nil {
				t.Fatalf("start: %v", err)
			}
			if _, err := h.Call(ctx, "tools/list", nil); err != nil {
				t.Fatal(err)
			}
			if h.Stateless() != c.wantStateless || (*methods)[0] != c.wantFirst {
				t.Fatalf("modern %v, requests %v; want modern %v, first %s", h.Stateless(), *methods, c.wantStateless, c.wantFirst)
			}
		})
	}
}

// Every request carries the configured headers, the session's and its
// own (Mcp-Method, Mcp-Name; Last-Event-ID when it resumes a call's
// stream, which carries the call's headers too), in one map built for it:
// the session's prepared headers, shared by its requests, stay as they
// were.
func TestRemoteRequestHeaders(t *testing.T) {
	type seen struct {
		method, host string
		header       http.Header
	}
	got := make(chan seen, 16)
	callID := make(chan json.RawMessage, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.Host, r.Header.Clone()}
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: e2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(<-callID)+",\"result\":{}}\n\n")
			return
		}
		msg := readRPC(r)
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"h","version":"1"}}}`)
		case "tools/call":
			// The stream ends before the answer: the client resumes it.
			callID <- msg.ID
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: e1\nretry: 1\ndata: \n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	up := NewHTTP(HTTPOptions{Name: "h", URL: srv.URL, NoListen: true, Transport: TransportStreamable,
		Headers: map[string]string{"X-Api-Key": "k", "Mcp-Method": "configured"}})
	defer up.Close()
	ctx := context.Background()
	if err := up.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"initialize", "notifications/initialized"} {
		if r := <-got; r.header.Get("Mcp-Method") != want {
			t.Errorf("handshake: Mcp-Method %q, want %q", r.header.Get("Mcp-Method"), want)
		}
	}
	s := up.sess.Load()
	before := s.headers()
	post, get := before.post.Clone(), before.get.Clone()
	if _, err := up.Call(ctx, "tools/call", json.RawMessage(`{"name":"q","arguments":{}}`)); err != nil {
		t.Fatal(err)
	}
	call := <-got
	if want := strings.TrimPrefix(srv.URL, "http://"); call.host != want {
		t.Errorf("POST Host %q, want %q", call.host, want)
	}
	for k, v := range map[string]string{
		"X-Api-Key": "k", "Mcp-Method": "tools/call", "Mcp-Name": "q", "Mcp-Session-Id": "s-1",
		"Mcp-Protocol-Version": "2025-11-25", "Content-Type": "application/json", "Accept": acceptPOST,
	} {
		if got := call.header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("POST %s: %q, want %q", k, got, v)
		}
	}
	resumed := <-got
	if resumed.method != http.MethodGet {
		t.Fatalf("second request: %s, want the GET resuming the stream", resumed.method)
	}
	for k, v := range map[string]string{"Last-Event-Id": "e1", "Mcp-Method": "tools/call", "Mcp-Name": "q", "Accept": acceptSSE, "X-Api-Key": "k"} {
		if got := resumed.header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("GET %s: %q, want %q", k, got, v)
		}
	}
	if s.headers() != before || !reflect.DeepEqual(before.post, post) || !reflect.DeepEqual(before.get, get) {
		t.Errorf("the session's prepared headers changed:\n%v\n%v\nwant %v\n%v", before.post, before.get, post, get)
	}
}

// The headers of a call of a tool or prompt are built once per name and
// shared by the session's requests; those of other messages (a resource's
// URI, a notification) are not kept, nor more than maxPostHeaders.
func TestPostHeadersKept(t *testing.T) {
	hs := &sessionHeaders{post: http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"s-1"}}}
	post := hs.post.Clone()
	call := func(method, name string) http.Header {
		mh := messageHeaders{method: method, name: name}
		return hs.postHeaders(&mh)
	}
	a := call("tools/call", "a")
	want := http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"s-1"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"a"}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("headers %v, want %v", a, want)
	}
	same := func(x, y http.Header) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(call("tools/call", "a"), a) {
		t.Error("the headers of a second call of the tool were built again")
	}
	if b := call("tools/call", "b"); same(b, a) || b.Get("Mcp-Name") != "b" {
		t.Errorf("another tool's call: %v", b)
	}
	if r := call("resources/read", "file:///x"); same(r, call("resources/read", "file:///x")) {
		t.Error("the headers of a resource's URI were kept")
	}
	if n := call("notifications/initialized", ""); same(n, call("notifications/initialized", "")) || n.Get("Mcp-Method") != "notifications/initialized" {
		t.Errorf("a notification's headers were kept, or wrong: %v", n)
	}
	for i := range 2 * maxPostHeaders {
		if h := call("prompts/get", fmt.Sprint(i)); h.Get("Mcp-Name") != fmt.Sprint(i) {
			t.Fatalf("prompt %d: %v", i, h)
		}
	}
	if n := len(*hs.posts.Load()); n != maxPostHeaders {
		t.Errorf("%d headers kept, want %d", n, maxPostHeaders)
	}
	if !reflect.DeepEqual(hs.post, post) {
		t.Errorf("the session's POST headers changed: %v", hs.post)
	}
}

// The request _meta built once is the one statelessMeta would build, byte
// for byte, and params with a _meta of their own are completed as before.
func TestStatelessParams(t *testing.T) {
	h := NewHTTP(HTTPOptions{Name: "h", URL: "http://127.0.0.1:1/mcp", Capabilities: json.RawMessage(`{"sampling":{}}`)})
	defer h.Close()
	for _, params := range []string{"", `{}`, `{"name":"echo","arguments":{"a":1}}`, `{"_meta":null}`,
		`{"name":"x","_meta":{"progressToken":1}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`} {
		var in json.RawMessage
		if params != "" {
			in = json.RawMessage(params)
		}
		got, want := h.statelessParams(in), statelessMeta(in, h.opts.ClientInfo, h.opts.Capabilities)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", params, got, want)
		}
	}
}

// rpcHead is the id and method of a JSON-RPC message a test server read.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// readRPC reads a request's body as a JSON-RPC message's id and method.
func readRPC(r *http.Request) rpcHead {
	body, _ := io.ReadAll(r.Body)
	var msg rpcHead
	json.Unmarshal(body, &msg) //nolint:errcheck // a test server's: a bad body reads as no method
	return msg
}
