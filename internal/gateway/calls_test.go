package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func TestStripStatelessMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{ // a 2026-07-28 request for a session-era server: its own _meta stays, in order
			`{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
				`"progressToken":7,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
				`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","acme/trace":"x"}}`,
			`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7,"io.modelcontextprotocol/clientCapabilities":{},"acme/trace":"x"}}`,
		},
		{ // nothing of the era: unchanged
			`{"name":"echo","_meta":{"progressToken":"p"}}`,
			`{"name":"echo","_meta":{"progressToken":"p"}}`,
		},
		{`{"name":"echo"}`, `{"name":"echo"}`},
	} {
		if got := stripStatelessMeta([]byte(c.in)); string(got) != c.want {
			t.Errorf("stripStatelessMeta(%s)\n = %s\nwant %s", c.in, got, c.want)
		}
	}
}

// scripted is a fake upstream whose tools/call, prompts/get and other
// requests run a function of the test's, with the call's context: what a
// server does while a call is in flight (progress, requests to the client,
// waiting to be cancelled). A unit-test fake; test/e2e runs real servers.
type scripted struct {
	fakeUpstream
	caps    string // the capabilities object of its initialize result
	prompts []string
	handle  func(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error)

	mu   sync.Mutex
	seen []string // method + " " + params of every request but the lists
}

func (f *scripted) InitializeResult() json.RawMessage {
	caps := f.caps
	if caps == "" {
		caps = `{"tools":{},"prompts":{},"resources":{"subscribe":true},"logging":{},"completions":{}}`
	}
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"serverInfo":{"name":"f","version":"1"}}`)
}

func (f *scripted) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "tools/list":
		return f.fakeUpstream.Call(ctx, method, params)
	case "prompts/list":
		defs := make([]string, len(f.prompts))
		for i, n := range f.prompts {
			defs[i] = `{"name":"` + n + `"}`
		}
		return &wire.Response{Result: json.RawMessage(`{"prompts":[` + strings.Join(defs, ",") + `]}`)}, nil
	case "resources/list":
		return &wire.Response{Result: json.RawMessage(`{"resources":[{"uri":"mem://` + f.name + `","name":"r"}]}`)}, nil
	case "resources/templates/list":
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[]}`)}, nil
	}
	f.mu.Lock()
	f.seen = append(f.seen, method+" "+string(params))
	f.mu.Unlock()
	if f.handle != nil {
		return f.handle(ctx, method, params)
	}
	return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
}

func (f *scripted) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// gatewayWith starts a gateway in front of the given fakes.
func gatewayWith(t *testing.T, opts RouterOptions, ups ...Upstream) *Gateway {
	t.Helper()
	r := NewRouter(opts)
	g := New(r, Info{Name: "gw", Version: "t"})
	for _, up := range ups {
		r.Add(up)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	return g
}

// sessionWith initializes a session-era client declaring caps.
func sessionWith(t *testing.T, g *Gateway, caps string) *Session {
	t.Helper()
	s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"c","version":"1"}}`))
	if werr != nil {
		t.Fatal(werr)
	}
	return s
}

func msg(id, method, params string) *wire.Message {
	m := &wire.Message{Method: method, Params: json.RawMessage(params)}
	if id != "" {
		m.ID = json.RawMessage(id)
	}
	return m
}

// TestForwarding: what a server answers reaches the client as the right
// kind of answer, under the name the server knows.
func TestForwarding(t *testing.T) {
	serverErr := `{"code":-32602,"message":"bad arguments","data":{"field":"x"}}`
	tests := []struct {
		name       string
		method     string
		params     string
		respond    func(ctx context.Context) (*wire.Response, error)
		wantSeen   string // what the server received, "" for nothing
		wantResult string
		wantError  string // a substring of the raw JSON-RPC error
	}{
		{
			name: "a tool failure stays an isError result", method: "tools/call", params: `{"name":"b_echo"}`,
			respond: func(context.Context) (*wire.Response, error) {
				return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"no"}],"isError":true}`)}, nil
			},
			wantSeen: `tools/call {"name":"echo"}`, wantResult: `{"content":[{"type":"text","text":"no"}],"isError":true}`,
		},
		{
			name: "a server's JSON-RPC error passes unchanged", method: "tools/call", params: `{"name":"b_echo"}`,
			respond: func(context.Context) (*wire.Response, error) {
				return &wire.Response{Error: json.RawMessage(serverErr)}, nil
			},
			wantSeen: `tools/call {"name":"echo"}`, wantError: serverErr,
		},
		{
			name: "a transport failure is an internal error naming it", method: "tools/call", params: `{"name":"b_echo"}`,
			respond: func(context.Context) (*wire.Response, error) {
				return nil, errors.New(`mcp server "b": connection reset`)
			},
			wantSeen: `tools/call {"name":"echo"}`, wantError: `{"code":-32603,"message":"mcp server \"b\": connection reset"}`,
		},
		{
			name: "refused credentials are a tool error the agent reads", method: "tools/call", params: `{"name":"b_echo"}`,
			respond: func(context.Context) (*wire.Response, error) {
				return nil, fmt.Errorf(`mcp server "b": %w`, wire.ErrCredentials)
			},
			wantSeen: `tools/call {"name":"echo"}`, wantResult: `{"content":[{"text":"mcp server \"b\": mcp server refused the credentials","type":"text"}],"isError":true}`,
		},
		{
			name: "refused credentials outside tools/call are an error", method: "prompts/get", params: `{"name":"b_greet"}`,
			respond: func(context.Context) (*wire.Response, error) {
				return nil, fmt.Errorf(`mcp server "b": %w`, wire.ErrCredentials)
			},
			wantSeen: `prompts/get {"name":"greet"}`, wantError: `"code":-32603`,
		},
		{
			name: "a renamed prompt is asked for by its own name", method: "prompts/get", params: `{"name":"b_greet","arguments":{"who":"b_greet"}}`,
			wantSeen: `prompts/get {"name":"greet","arguments":{"who":"b_greet"}}`, wantResult: `{"content":[]}`,
		},
		{
			name: "completion of a renamed prompt names it as the server does", method: "completion/complete",
			params:   `{"ref":{"type":"ref/prompt","name":"b_greet"},"argument":{"name":"who","value":"a"}}`,
			wantSeen: `completion/complete {"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`, wantResult: `{"content":[]}`,
		},
		{
			name: "an unknown prompt is refused here", method: "prompts/get", params: `{"name":"nope"}`,
			wantError: `{"code":-32602,"message":"Unknown prompt: nope"}`,
		},
		{
			name: "a resource goes to the server listing it", method: "resources/read", params: `{"uri":"mem://b"}`,
			wantSeen: `resources/read {"uri":"mem://b"}`, wantResult: `{"content":[]}`,
		},
		{
			name: "an unknown resource is the era's not-found error", method: "resources/read", params: `{"uri":"mem://zzz"}`,
			wantError: `{"code":-32002,"message":"Resource not found: mem://zzz","data":{"uri":"mem://zzz"}}`,
		},
		{
			name: "the call's timeout cancels it at the server", method: "tools/call", params: `{"name":"b_echo"}`,
			respond: func(ctx context.Context) (*wire.Response, error) {
				select {
				case <-ctx.Done(): // the server is told: the fake's context ends
					return nil, ctx.Err()
				case <-time.After(10 * time.Second):
					return nil, errors.New("never cancelled")
				}
			},
			wantSeen: `tools/call {"name":"echo"}`, wantError: `mcp server \"b\" did not answer tools/call within 1ms; the call was cancelled at the server`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo")}}, prompts: []string{"greet"}}
			b := &scripted{fakeUpstream: fakeUpstream{name: "b", tools: []string{tool("echo")}}, prompts: []string{"greet"}}
			if tt.respond != nil {
				b.handle = func(ctx context.Context, _ string, _ json.RawMessage) (*wire.Response, error) {
					return tt.respond(ctx)
				}
			}
			g := gatewayWith(t, RouterOptions{}, a, b)
			g.Router.SetCallTimeout("b", time.Millisecond)
			if !strings.Contains(tt.name, "timeout") {
				g.Router.SetCallTimeout("b", 0)
			}
			s := sessionWith(t, g, `{}`)
			reply := s.Handle(context.Background(), msg(`1`, tt.method, tt.params), &recorder{})
			if got := string(reply.Result); tt.wantResult != "" && got != tt.wantResult {
				t.Errorf("result %s, want %s", got, tt.wantResult)
			}
			if got := string(reply.Error); (tt.wantError == "") != (got == "") || !strings.Contains(got, tt.wantError) {
				t.Errorf("error %s, want %s", got, tt.wantError)
			}
			var want []string
			if tt.wantSeen != "" {
				want = []string{tt.wantSeen}
			}
			if got := b.requests(); !slices.Equal(got, want) {
				t.Errorf("b received %q, want %q", got, want)
			}
			if got := a.requests(); len(got) != 0 {
				t.Errorf("a received %q", got)
			}
		})
	}
}

// TestProgressTokens: the server sees a gateway token in place of the
// client's, and the client gets its own token back, of its own JSON type,
// only while its call is in flight.
func TestProgressTokens(t *testing.T) {
	for _, tt := range []struct {
		name, params string
		wantToClient []string
	}{
		{"a number", `{"name":"echo","_meta":{"progressToken":7}}`,
			[]string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":2}}`}},
		{"a string", `{"name":"echo","_meta":{"progressToken":"tok","other":1}}`,
			[]string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1,"total":2}}`}},
		{"no token: params unchanged, nothing sent", `{"name":"echo","arguments":{}}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var serverToken json.RawMessage
			f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo")}}}
			g := gatewayWith(t, RouterOptions{}, f)
			hooks := hooksOf(g, "a")
			f.handle = func(ctx context.Context, _ string, params json.RawMessage) (*wire.Response, error) {
				serverToken = wire.Get(wire.Get(params, "_meta"), "progressToken")
				if serverToken != nil {
					hooks.OnNotification("notifications/progress", json.RawMessage(`{"progressToken":`+string(serverToken)+`,"progress":1,"total":2}`))
				}
				hooks.OnNotification("notifications/progress", json.RawMessage(`{"progressToken":"gw-progress-999","progress":1}`)) // nobody's
				return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
			}
			s := sessionWith(t, g, `{}`)
			rec := &recorder{}
			if reply := s.Handle(context.Background(), msg(`1`, "tools/call", tt.params), rec); reply.Error != nil {
				t.Fatal(string(reply.Error))
			}
			if !slices.Equal(rec.msgs, tt.wantToClient) {
				t.Errorf("the client got %v, want %v", rec.msgs, tt.wantToClient)
			}
			seen := f.requests()
			clientToken := wire.Get(wire.Get(json.RawMessage(tt.params), "_meta"), "progressToken")
			switch {
			case clientToken == nil:
				if want := "tools/call " + tt.params; !slices.Equal(seen, []string{want}) {
					t.Errorf("the server saw %v, want the params unchanged", seen)
				}
			case !strings.HasPrefix(string(serverToken), `"gw-progress-`):
				t.Errorf("the server saw the token %s, want a gateway token", serverToken)
			case strings.Contains(tt.params, `"other":1`) && !strings.Contains(seen[0], `"other":1`):
				t.Errorf("the rest of _meta was lost: %s", seen[0])
			}
			// After the call, the gateway token means nothing any more.
			if serverToken != nil {
				hooks.OnNotification("notifications/progress", json.RawMessage(`{"progressToken":`+string(serverToken)+`,"progress":2,"total":2}`))
				if len(rec.msgs) != len(tt.wantToClient) {
					t.Errorf("a progress after the call reached the client: %v", rec.msgs)
				}
			}
		})
	}
}

// blockingServer's tools/call waits until its context ends (the client
// cancels, the session closes) and reports that it did.
func blockingServer(name string) (*scripted, <-chan struct{}, <-chan error) {
	started, ended := make(chan struct{}, 4), make(chan error, 4)
	f := &scripted{fakeUpstream: fakeUpstream{name: name, tools: []string{tool("wait")}}}
	f.handle = func(ctx context.Context, _ string, _ json.RawMessage) (*wire.Response, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
	return f, started, ended
}

// TestCancellation: a client's notifications/cancelled ends its own call
// at the server (its context), and only that one; closing the session ends
// what it still has in flight.
func TestCancellation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		cancel func(s *Session)
	}{
		{"notifications/cancelled with the request id", func(s *Session) {
			s.HandleNotification(context.Background(), msg("", "notifications/cancelled", `{"requestId":"call-1","reason":"user"}`))
		}},
		{"the session closes", func(s *Session) { s.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, started, ended := blockingServer("a")
			g := gatewayWith(t, RouterOptions{}, f)
			s, other := sessionWith(t, g, `{}`), sessionWith(t, g, `{}`)
			replies := make(chan Reply, 2)
			go func() {
				replies <- s.Handle(context.Background(), msg(`"call-1"`, "tools/call", `{"name":"wait"}`), &recorder{})
			}()
			<-started
			// The other client cancelling its own request of the same id changes nothing.
			other.HandleNotification(context.Background(), msg("", "notifications/cancelled", `{"requestId":"call-1"}`))
			s.HandleNotification(context.Background(), msg("", "notifications/cancelled", `{"requestId":"call-2"}`))
			select {
			case err := <-ended:
				t.Fatalf("the call ended (%v) before its client cancelled it", err)
			default:
			}
			tt.cancel(s)
			select {
			case err := <-ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the server's context ended with %v, want cancelled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call is still in flight at its server 10 s after it was cancelled")
			}
			if r := <-replies; r.Error == nil {
				t.Errorf("a cancelled call answered %s", r.Result)
			}
		})
	}
}

// answeringStream is a client's call stream: it answers each request the
// gateway sends on it, as the client would, by HandleResponse.
type answeringStream struct {
	s      *Session
	answer string // the result
	mu     sync.Mutex
	got    []string
}

func (a *answeringStream) Send(m []byte) error {
	a.mu.Lock()
	a.got = append(a.got, string(m))
	a.mu.Unlock()
	if id := wire.Get(m, "id"); id != nil {
		go a.s.HandleResponse(&wire.Message{ID: id, Result: json.RawMessage(a.answer)})
	}
	return nil
}

func (a *answeringStream) methods() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, m := range a.got {
		method, _ := wire.GetString(json.RawMessage(m), "method")
		out = append(out, method)
	}
	return out
}

// TestServerRequestRouting: a server's request reaches the client whose
// call is in flight on that server, on that call's stream, or is refused
// with a reason when the gateway cannot tell or the client cannot answer.
func TestServerRequestRouting(t *testing.T) {
	const sampling = `{"messages":[],"maxTokens":5}`
	tests := []struct {
		name      string
		method    string
		params    string
		callerCap string // the calling client's capabilities
		otherCall bool   // a second client has a call in flight on the server too
		want      string // the server's result, or ...
		wantErr   string // ... a substring of its error
		wantAsked bool   // the caller's stream carried the request
	}{
		{name: "sampling to the caller, on its call's stream", method: "sampling/createMessage", params: sampling,
			callerCap: `{"sampling":{}}`, want: `{"role":"assistant"}`, wantAsked: true},
		{name: "elicitation in form mode", method: "elicitation/create", params: `{"message":"name?","requestedSchema":{"type":"object"}}`,
			callerCap: `{"elicitation":{}}`, want: `{"role":"assistant"}`, wantAsked: true},
		{name: "a client without the capability is not asked", method: "sampling/createMessage", params: sampling,
			callerCap: `{}`, wantErr: `"code":-32601,"message":"sampling/createMessage refused: the client did not declare the sampling capability"`},
		{name: "url elicitation needs the url mode", method: "elicitation/create", params: `{"mode":"url","url":"https://x","message":"m","elicitationId":"e"}`,
			callerCap: `{"elicitation":{"form":{}}}`, wantErr: `the client did not declare the elicitation.url capability`},
		{name: "calls of two clients in flight: refused, never guessed", method: "sampling/createMessage", params: sampling,
			callerCap: `{"sampling":{}}`, otherCall: true, wantErr: `"code":-32600,"message":"sampling/createMessage refused: calls of several clients are in flight on mcp server \"a\"`},
		{name: "ping is answered by the gateway", method: "ping", params: `{}`, callerCap: `{}`, want: `{}`},
		{name: "an unknown method is not found", method: "tasks/whatever", params: `{}`, callerCap: `{}`, wantErr: `"code":-32601`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("ask"), tool("wait")}}}
			g := gatewayWith(t, RouterOptions{}, f)
			hooks := hooksOf(g, "a")
			waiting, release := make(chan struct{}), make(chan struct{})
			f.handle = func(ctx context.Context, _ string, params json.RawMessage) (*wire.Response, error) {
				if name, _ := wire.GetString(params, "name"); name == "wait" {
					close(waiting)
					<-release
					return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
				}
				res, werr := hooks.OnRequest(ctx, tt.method, json.RawMessage(tt.params))
				if werr != nil {
					return &wire.Response{Result: json.RawMessage(`{"error":` + string(werr.Marshal()) + `}`)}, nil
				}
				return &wire.Response{Result: json.RawMessage(`{"answer":` + string(res) + `}`)}, nil
			}
			caller := sessionWith(t, g, tt.callerCap)
			if tt.otherCall {
				other := sessionWith(t, g, tt.callerCap)
				done := make(chan struct{})
				go func() {
					other.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"wait"}`), &recorder{})
					close(done)
				}()
				<-waiting
				defer func() { close(release); <-done }()
			}
			stream := &answeringStream{s: caller, answer: `{"role":"assistant"}`}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a request nobody answers fails the test
			defer cancel()
			reply := caller.Handle(ctx, msg(`1`, "tools/call", `{"name":"ask"}`), stream)
			if reply.Error != nil {
				t.Fatal(string(reply.Error))
			}
			if tt.want != "" && string(wire.Get(reply.Result, "answer")) != tt.want {
				t.Errorf("the server got %s, want the answer %s", reply.Result, tt.want)
			}
			if got := string(wire.Get(reply.Result, "error")); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("the server got the error %s, want %s", got, tt.wantErr)
			}
			if asked := slices.Contains(stream.methods(), tt.method); asked != tt.wantAsked {
				t.Errorf("the caller's stream carried %v; asked = %v, want %v", stream.methods(), asked, tt.wantAsked)
			}
		})
	}
}

// TestServerRequestWithoutACall: with no call in flight, a server's request
// goes to the GET stream of the gateway's only client; with several clients
// it is refused; roots/list goes to the client that just announced new roots.
func TestServerRequestWithoutACall(t *testing.T) {
	for _, tt := range []struct {
		name     string
		method   string
		clients  int
		announce bool // client 0 sends notifications/roots/list_changed first
		want     int  // the client asked (on its GET stream), -1 for none
		wantErr  string
	}{
		{"the only client", "sampling/createMessage", 1, false, 0, ""},
		{"two clients: refused", "sampling/createMessage", 2, false, -1, "no client call is in flight on mcp server \"a\""},
		{"roots/list after a client's roots change goes to it", "roots/list", 2, true, 0, ""},
		{"roots/list without an announcement, two clients: refused", "roots/list", 2, false, -1, "no client call is in flight"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}
			g := gatewayWith(t, RouterOptions{}, f)
			var sessions []*Session
			for range tt.clients {
				sessions = append(sessions, sessionWith(t, g, `{"sampling":{},"roots":{"listChanged":true}}`))
			}
			if tt.announce {
				sessions[0].HandleNotification(context.Background(), msg("", "notifications/roots/list_changed", `{}`))
			}
			// The client asked answers from its GET stream.
			for i, s := range sessions {
				go func() {
					select {
					case m := <-s.Outbox():
						s.HandleResponse(&wire.Message{ID: wire.Get(m, "id"), Result: json.RawMessage(fmt.Sprintf(`{"client":%d}`, i))})
					case <-s.Done():
					}
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, werr := hooksOf(g, "a").OnRequest(ctx, tt.method, json.RawMessage(`{}`))
			if tt.want >= 0 {
				if werr != nil || string(res) != fmt.Sprintf(`{"client":%d}`, tt.want) {
					t.Errorf("answer %s, error %v; want client %d's", res, werr, tt.want)
				}
				return
			}
			if werr == nil || !strings.Contains(werr.Message, tt.wantErr) {
				t.Errorf("answer %s, error %v; want refused with %q", res, werr, tt.wantErr)
			}
		})
	}
}

// TestLogMessageRouting: a server's log message goes to the client whose
// call is in flight on it, on that call's stream, else to every client,
// each filtered by its own level.
func TestLogMessageRouting(t *testing.T) {
	f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}
	g := gatewayWith(t, RouterOptions{}, f)
	hooks := hooksOf(g, "a")
	debugClient, errorClient, unset := sessionWith(t, g, `{}`), sessionWith(t, g, `{}`), sessionWith(t, g, `{}`)
	for _, c := range []struct {
		s     *Session
		level string
	}{{debugClient, "debug"}, {errorClient, "error"}} {
		if r := c.s.Handle(context.Background(), msg(`1`, "logging/setLevel", `{"level":"`+c.level+`"}`), nil); r.Error != nil {
			t.Fatal(string(r.Error))
		}
	}
	// A less verbose level after a more verbose one changes nothing at the server.
	if got := f.requests(); !slices.Equal(got, []string{`logging/setLevel {"level":"debug"}`}) {
		t.Errorf("the server was asked %v, want the most verbose level once", got)
	}
	info := `{"level":"info","data":"hello"}`
	wantMsg := `{"jsonrpc":"2.0","method":"notifications/message","params":` + info + `}`

	// No call in flight: every client that wants it.
	hooks.OnNotification("notifications/message", json.RawMessage(info))
	for _, c := range []struct {
		name string
		s    *Session
		want bool
	}{{"debug", debugClient, true}, {"error", errorClient, false}, {"unset", unset, true}} {
		select {
		case m := <-c.s.Outbox():
			if !c.want || string(m) != wantMsg {
				t.Errorf("%s client got %s", c.name, m)
			}
		default:
			if c.want {
				t.Errorf("%s client got nothing", c.name)
			}
		}
	}

	// A call of debugClient in flight: its stream alone.
	f.handle = func(ctx context.Context, _ string, _ json.RawMessage) (*wire.Response, error) {
		hooks.OnNotification("notifications/message", json.RawMessage(info))
		return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}
	rec := &recorder{}
	debugClient.Handle(context.Background(), msg(`2`, "tools/call", `{"name":"x"}`), rec)
	if !slices.Equal(rec.msgs, []string{wantMsg}) {
		t.Errorf("the caller's stream got %v, want the message", rec.msgs)
	}
	for _, s := range []*Session{debugClient, errorClient, unset} {
		select {
		case m := <-s.Outbox():
			t.Errorf("a GET stream got %s while the message belonged to a call", m)
		default:
		}
	}
}

// TestSubscriptions: the server hears resources/subscribe for the first
// subscriber of a URI and resources/unsubscribe after the last; updates go
// to the subscribers only.
func TestSubscriptions(t *testing.T) {
	f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}
	g := gatewayWith(t, RouterOptions{}, f)
	s1, s2, none := sessionWith(t, g, `{}`), sessionWith(t, g, `{}`), sessionWith(t, g, `{}`)
	sub := `{"uri":"mem://a"}`
	for i, s := range []*Session{s1, s2} {
		if r := s.Handle(context.Background(), msg(fmt.Sprint(i+1), "resources/subscribe", sub), nil); r.Error != nil || string(r.Result) != `{}` {
			t.Fatalf("subscribe: %s %s", r.Result, r.Error)
		}
	}
	if got := f.requests(); !slices.Equal(got, []string{"resources/subscribe " + sub}) {
		t.Errorf("after two subscribers the server saw %v, want one subscribe", got)
	}
	hooksOf(g, "a").OnNotification("notifications/resources/updated", json.RawMessage(sub))
	want := `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":` + sub + `}`
	for name, s := range map[string]*Session{"s1": s1, "s2": s2} {
		select {
		case m := <-s.Outbox():
			if string(m) != want {
				t.Errorf("%s got %s", name, m)
			}
		default:
			t.Errorf("%s, a subscriber, got no update", name)
		}
	}
	select {
	case m := <-none.Outbox():
		t.Errorf("a client that did not subscribe got %s", m)
	default:
	}
	s1.Handle(context.Background(), msg(`3`, "resources/unsubscribe", sub), nil)
	if got := f.requests(); len(got) != 1 {
		t.Errorf("the server saw %v after one of two unsubscribed", got)
	}
	s2.Close() // a closing session's subscriptions go too
	if got := f.requests(); !slices.Equal(got, []string{"resources/subscribe " + sub, "resources/unsubscribe " + sub}) {
		t.Errorf("after the last subscriber left the server saw %v", got)
	}
}

// TestLostServerIsUnavailable: a call that finds its server cannot be
// started takes the server's tools out of the view, and a later call of
// one of them says why instead of "unknown tool".
func TestLostServerIsUnavailable(t *testing.T) {
	f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}
	f.handle = func(context.Context, string, json.RawMessage) (*wire.Response, error) {
		return nil, fmt.Errorf(`mcp server "a": exited: %w`, wire.ErrStart)
	}
	g := gatewayWith(t, RouterOptions{RetryMin: time.Hour}, f)
	s := sessionWith(t, g, `{}`)
	if r := s.Handle(context.Background(), msg(`1`, "tools/call", `{"name":"x"}`), nil); r.Error == nil {
		t.Fatalf("the failed call answered %s", r.Result)
	}
	if n := g.Router.ToolCount(); n != 0 {
		t.Errorf("%d tools still listed after the server was lost", n)
	}
	if st := g.Router.Status()["a"]; st.State != "failed" || !strings.Contains(st.LastError, "exited") {
		t.Errorf("status %+v", st)
	}
	r := s.Handle(context.Background(), msg(`2`, "tools/call", `{"name":"x"}`), nil)
	if e := wire.DecodeError(r.Error); e == nil || !strings.Contains(e.Message, `Unknown tool: x: mcp server "a", which offers it, is unavailable and being restarted`) {
		t.Errorf("a call of its tool: %s", r.Error)
	}
}

// statelessScripted is a scripted server of the 2026-07-28 era.
type statelessScripted struct{ scripted }

func (*statelessScripted) Stateless() bool { return true }

// TestBridgingInputRequired: a session-era client's call to a 2026-07-28
// server carries the client's identity in _meta; the server's input
// requests are asked of the client on the call's stream and the call is
// retried with its answers and the server's requestState.
func TestBridgingInputRequired(t *testing.T) {
	const inputRequired = `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}},"requestState":"st-1"}`
	tests := []struct {
		name       string
		clientCaps string
		always     bool // the server asks again on every retry
		wantResult string
		wantErr    string
		wantCalls  int
	}{
		{name: "asked, answered, retried", clientCaps: `{"elicitation":{}}`, wantResult: `{"content":[{"type":"text","text":"hello"}]}`, wantCalls: 2},
		{name: "a client without the capability is not asked", clientCaps: `{}`,
			wantErr: `mcp server \"m\" needs the client capability \"elicitation\" for elicitation/create, which the client did not declare`, wantCalls: 1},
		{name: "a server that never stops asking is given up on", clientCaps: `{"elicitation":{}}`, always: true,
			wantErr: `mcp server \"m\" asked for input 16 times in a row; giving up`, wantCalls: 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &statelessScripted{scripted{fakeUpstream: fakeUpstream{name: "m", tools: []string{tool("greet")}}}}
			f.handle = func(_ context.Context, _ string, params json.RawMessage) (*wire.Response, error) {
				if wire.Get(params, "inputResponses") == nil || tt.always {
					return &wire.Response{Result: json.RawMessage(inputRequired)}, nil
				}
				return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`)}, nil
			}
			g := gatewayWith(t, RouterOptions{}, f)
			s := sessionWith(t, g, tt.clientCaps)
			if r := s.Handle(context.Background(), msg(`0`, "logging/setLevel", `{"level":"info"}`), nil); r.Error != nil {
				t.Fatal(string(r.Error))
			}
			stream := &answeringStream{s: s, answer: `{"action":"accept","content":{"name":"Ada"}}`}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			reply := s.Handle(ctx, msg(`1`, "tools/call", `{"name":"greet","_meta":{"progressToken":3}}`), stream)
			if tt.wantResult != "" && string(reply.Result) != tt.wantResult {
				t.Errorf("result %s (error %s), want %s", reply.Result, reply.Error, tt.wantResult)
			}
			if got := string(reply.Error); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("error %s, want %s", got, tt.wantErr)
			}
			calls := f.requests()
			if len(calls) != tt.wantCalls {
				t.Fatalf("the server got %d calls, want %d: %v", len(calls), tt.wantCalls, calls)
			}
			first := json.RawMessage(strings.TrimPrefix(calls[0], "tools/call "))
			meta := wire.Get(first, "_meta")
			for key, want := range map[string]string{
				MetaProtocolVersion:    `"2026-07-28"`,
				MetaClientInfo:         `{"name":"c","version":"1"}`,
				MetaClientCapabilities: tt.clientCaps,
				MetaLogLevel:           `"info"`,
			} {
				if got := string(wire.Get(meta, key)); got != want {
					t.Errorf("_meta %s = %s, want %s (the client's own)", key, got, want)
				}
			}
			if tt.wantCalls == 2 {
				retry := json.RawMessage(strings.TrimPrefix(calls[1], "tools/call "))
				if got := string(wire.Get(retry, "inputResponses")); got != `{"who":{"action":"accept","content":{"name":"Ada"}}}` {
					t.Errorf("the retry's inputResponses %s", got)
				}
				if got := string(wire.Get(retry, "requestState")); got != `"st-1"` {
					t.Errorf("the retry's requestState %s, want the server's", got)
				}
				if got := stream.methods(); !slices.Equal(got, []string{"elicitation/create"}) {
					t.Errorf("the client's stream carried %v, want the elicitation", got)
				}
			}
		})
	}
}
