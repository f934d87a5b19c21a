package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// fakeUpstream serves a fixed tool list and records calls. A unit-test fake:
// the real servers are exercised in test/e2e.
type fakeUpstream struct {
	name     string
	tools    []string // raw tool definitions
	pageSize int      // 0: one page
	gen      atomic.Uint64
	startErr error
	calls    []string // raw params of tools/call
	onCall   func(params string)
}

func (f *fakeUpstream) Name() string { return f.name }
func (f *fakeUpstream) Start(ctx context.Context) error {
	f.gen.Add(1)
	return f.startErr
}
func (f *fakeUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"1"}}`)
}
func (f *fakeUpstream) Generation() uint64 { return f.gen.Load() }
func (f *fakeUpstream) Close() error       { return nil }
func (f *fakeUpstream) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return nil
}
func (f *fakeUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "tools/list":
		start := 0
		if c, ok := wire.GetString(params, "cursor"); ok {
			fmt.Sscan(c, &start)
		}
		end := len(f.tools)
		if f.pageSize > 0 {
			end = min(start+f.pageSize, len(f.tools))
		}
		res := `{"tools":[` + strings.Join(f.tools[start:end], ",") + `]`
		if end < len(f.tools) {
			res += fmt.Sprintf(`,"nextCursor":"%d"`, end)
		}
		return &wire.Response{Result: json.RawMessage(res + "}")}, nil
	case "tools/call":
		f.calls = append(f.calls, string(params))
		if f.onCall != nil {
			f.onCall(string(params))
		}
		return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"from ` + f.name + `"}],"x-extra":1}`)}, nil
	}
	return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
}

func tool(name string) string {
	return `{"name":"` + name + `","inputSchema":{"type":"object","$defs":{"a":{}},"additionalProperties":false},"annotations":{"readOnlyHint":true},"x-unknown":[1]}`
}

func listAll(t *testing.T, r *Router) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	params := json.RawMessage(nil)
	for range 100 {
		res, werr := r.view(kindTools).page(params)
		if werr != nil {
			t.Fatalf("ListTools: %v", werr)
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			t.Fatalf("page %s: %v", res, err)
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" {
			return all
		}
		params = json.RawMessage(`{"cursor":"` + page.NextCursor + `"}`)
	}
	t.Fatal("pagination does not end")
	return nil
}

func names(defs []json.RawMessage) []string {
	var out []string
	for _, d := range defs {
		n, _ := wire.GetString(d, "name")
		out = append(out, n)
	}
	return out
}

func TestNamingRule(t *testing.T) {
	tests := []struct {
		mode PrefixMode
		want []string
	}{
		{PrefixCollisions, []string{"echo", "search", "github_o_r.js_echo", "fetch", "zeta_echo", "zeta_search"}},
		{PrefixAlways, []string{"a_echo", "a_search", "github_o_r.js_echo", "github_o_r.js_fetch", "zeta_echo", "zeta_search"}},
		{PrefixNever, []string{"echo", "search", "fetch"}},
	}
	for _, tt := range tests {
		r := NewRouter(RouterOptions{Prefix: tt.mode})
		// Added out of order: the router sorts by server name.
		r.Add(&fakeUpstream{name: "zeta", tools: []string{tool("echo"), tool("search")}})
		r.Add(&fakeUpstream{name: "a", tools: []string{tool("echo"), tool("search")}})
		r.Add(&fakeUpstream{name: "github/o/r.js", tools: []string{tool("echo"), tool("fetch")}})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := names(listAll(t, r)); !slices.Equal(got, tt.want) {
			t.Errorf("prefix %q: names %v, want %v", tt.mode, got, tt.want)
		}
	}
}

func TestPrefixedNameStillTakenIsSkipped(t *testing.T) {
	r := NewRouter(RouterOptions{})
	r.Add(&fakeUpstream{name: "a", tools: []string{tool("b_x")}})
	r.Add(&fakeUpstream{name: "b", tools: []string{tool("x"), tool("b_x")}}) // "x" is free; "b_x" taken twice
	r.Add(&fakeUpstream{name: "c", tools: []string{tool("x")}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"b_x", "x", "b_b_x", "c_x"}
	if got := names(listAll(t, r)); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}

func TestDefinitionsPassThroughUnchanged(t *testing.T) {
	r := NewRouter(RouterOptions{})
	r.Add(&fakeUpstream{name: "a", tools: []string{tool("echo")}})
	r.Add(&fakeUpstream{name: "b", tools: []string{tool("echo")}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := listAll(t, r)
	if string(got[0]) != tool("echo") {
		t.Errorf("kept name: definition changed:\n%s\nwant\n%s", got[0], tool("echo"))
	}
	if string(got[1]) != tool("b_echo") {
		t.Errorf("renamed: definition changed beyond its name:\n%s\nwant\n%s", got[1], tool("b_echo"))
	}
}

func TestPagination(t *testing.T) {
	r := NewRouter(RouterOptions{PageSize: 3})
	var want []string
	for _, s := range []string{"a", "b"} {
		f := &fakeUpstream{name: s, pageSize: 2} // the upstream paginates too
		for i := range 4 {
			n := fmt.Sprintf("%s%d", s, i)
			f.tools = append(f.tools, tool(n))
			want = append(want, n)
		}
		r.Add(f)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(listAll(t, r)); !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for _, bad := range []string{`{"cursor":"garbage!"}`, `{"cursor":"` + encodeCursor(2) + `"}`} {
		if _, werr := r.view(kindTools).page(json.RawMessage(bad)); werr == nil || werr.Code != wire.CodeInvalidParams {
			t.Errorf("cursor %s: error %v, want invalid params", bad, werr)
		}
	}
	res, werr := r.view(kindTools).page(json.RawMessage(`{"cursor":"` + encodeCursor(300) + `"}`))
	if werr != nil || string(res) != `{"tools":[]}` {
		t.Errorf("cursor past the end: %s %v, want an empty page", res, werr)
	}
}

// recorder is a Stream that keeps what it is sent.
type recorder struct{ msgs []string }

func (r *recorder) Send(msg []byte) error { r.msgs = append(r.msgs, string(msg)); return nil }

func newSession(t *testing.T, g *Gateway) *Session {
	t.Helper()
	s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
	if werr != nil {
		t.Fatal(werr)
	}
	return s
}

func TestCallToolRewritesOnlyTheName(t *testing.T) {
	a := &fakeUpstream{name: "a", tools: []string{tool("echo")}}
	b := &fakeUpstream{name: "b", tools: []string{tool("echo")}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(a)
	r.Add(b)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	params := `{"name":"b_echo","arguments":{"name":"b_echo","n":1.50}}`
	reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(params)}, &recorder{})
	if reply.Error != nil {
		t.Fatal(string(reply.Error))
	}
	if want := `{"name":"echo","arguments":{"name":"b_echo","n":1.50}}`; len(b.calls) != 1 || b.calls[0] != want {
		t.Errorf("b received %v, want [%s]", b.calls, want)
	}
	if len(a.calls) != 0 {
		t.Errorf("a received %v", a.calls)
	}
	if want := `{"content":[{"type":"text","text":"from b"}],"x-extra":1}`; string(reply.Result) != want {
		t.Errorf("result %s, want %s unchanged", reply.Result, want)
	}

	reply = s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`2`), Method: "tools/call", Params: json.RawMessage(`{"name":"nope"}`)}, &recorder{})
	if e := wire.DecodeError(reply.Error); e.Code != wire.CodeInvalidParams || e.Message != "Unknown tool: nope" {
		t.Errorf("unknown tool: %s", reply.Error)
	}
}

func TestProgressTokenIsMappedPerCall(t *testing.T) {
	f := &fakeUpstream{name: "a", tools: []string{tool("echo")}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(f)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hooks := hooksOf(g, "a")
	s1, s2 := newSession(t, g), newSession(t, g)
	rec1, rec2 := &recorder{}, &recorder{}
	// Both clients use the token 7; the fake reports progress for whatever
	// token it received, while the call is in flight.
	f.onCall = func(params string) {
		tok := string(wire.Get(wire.Get(json.RawMessage(params), "_meta"), "progressToken"))
		hooks.OnNotification("notifications/progress", json.RawMessage(`{"progressToken":`+tok+`,"progress":1}`))
	}
	s1.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","_meta":{"progressToken":7}}`)}, rec1)
	s2.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","_meta":{"progressToken":7}}`)}, rec2)
	if len(f.calls) != 2 || f.calls[0] == f.calls[1] {
		t.Fatalf("the server saw %v: two calls with distinct gateway tokens expected", f.calls)
	}
	want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`
	for i, rec := range []*recorder{rec1, rec2} {
		if len(rec.msgs) != 1 || rec.msgs[0] != want {
			t.Errorf("client %d got %v, want exactly [%s]", i+1, rec.msgs, want)
		}
	}
}

func TestStartReportsEveryFailedServer(t *testing.T) {
	r := NewRouter(RouterOptions{})
	r.Add(&fakeUpstream{name: "ok", tools: []string{tool("x")}})
	r.Add(&fakeUpstream{name: "bad1", startErr: errors.New(`mcp server "bad1": exploded`)})
	r.Add(&fakeUpstream{name: "bad2", startErr: errors.New(`mcp server "bad2": exploded`)})
	err := r.Start(context.Background())
	var se *StartError
	if !errors.As(err, &se) || len(se.Failed) != 2 {
		t.Fatalf("Start error %v, want both failures", err)
	}
	if want := `mcp server "bad1": exploded; mcp server "bad2": exploded`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if r.ToolCount() != 1 {
		t.Errorf("tool count %d: the healthy server's tools should be listed", r.ToolCount())
	}
}

func TestRestartWithOtherToolsNotifiesSessions(t *testing.T) {
	f := &fakeUpstream{name: "a", tools: []string{tool("one")}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{Name: "gw", Version: "t"})
	r.Add(f)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
	if werr != nil {
		t.Fatal(werr)
	}
	if s.ProtocolVersion() != "2025-06-18" {
		t.Errorf("negotiated %s, want the client's supported version", s.ProtocolVersion())
	}
	// The process restarts (generation changes) and offers another tool.
	f.tools = []string{tool("one"), tool("two")}
	f.gen.Add(1)
	if reply := s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"one"}`)}, &recorder{}); reply.Error != nil {
		t.Fatal(string(reply.Error))
	}
	var msg []byte
	select {
	case msg = <-s.Outbox():
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after a restart with other tools")
	}
	if string(msg) != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
		t.Errorf("notification %s", msg)
	}
	if got := names(listAll(t, r)); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("after the re-list: %v", got)
	}
}

// TestDefaultPageSize: with the default options, 64 servers of 100 tools
// each are listed in one page, so a client that reads one page only sees
// them all; past DefaultPageSize the list is paginated.
func TestDefaultPageSize(t *testing.T) {
	for _, tt := range []struct{ servers, tools, pages int }{
		{servers: 64, tools: 100, pages: 1},
		{servers: 2, tools: DefaultPageSize/2 + 1, pages: 2},
	} {
		r := NewRouter(RouterOptions{})
		for s := range tt.servers {
			f := &fakeUpstream{name: fmt.Sprintf("s%d", s)}
			for i := range tt.tools {
				f.tools = append(f.tools, tool(fmt.Sprintf("t%d_%d", s, i)))
			}
			r.Add(f)
		}
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		v := r.view(kindTools)
		if len(v.pages) != tt.pages {
			t.Errorf("%d servers × %d tools: %d pages, want %d", tt.servers, tt.tools, len(v.pages), tt.pages)
		}
		if got := len(listAll(t, r)); got != tt.servers*tt.tools {
			t.Errorf("%d servers × %d tools: %d listed", tt.servers, tt.tools, got)
		}
	}
}
