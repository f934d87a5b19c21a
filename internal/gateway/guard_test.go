package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// denyGuard hides and refuses the items it names ("server/name"),
// counting how often it is asked.
type denyGuard struct {
	mu       sync.Mutex
	denied   map[string]bool
	version  atomic.Uint64
	visible  atomic.Int64
	admitted []GuardCall
	outcomes []Reply
}

func (d *denyGuard) key(it GuardItem) string { return it.Kind + ":" + it.Server + "/" + it.Name }

func (d *denyGuard) Visible(it GuardItem) bool {
	d.visible.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.denied[d.key(it)]
}

func (d *denyGuard) Version() uint64 { return d.version.Load() }

func (d *denyGuard) Admit(_ context.Context, c *GuardCall) (func(Reply), *wire.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.admitted = append(d.admitted, *c)
	if d.denied[d.key(c.GuardItem)] {
		return nil, wire.Errorf(-32010, "denied by test policy")
	}
	return func(r Reply) {
		d.mu.Lock()
		d.outcomes = append(d.outcomes, r)
		d.mu.Unlock()
	}, nil
}

func (d *denyGuard) set(keys ...string) {
	d.mu.Lock()
	d.denied = map[string]bool{}
	for _, k := range keys {
		d.denied[k] = true
	}
	d.mu.Unlock()
	d.version.Add(1)
}

func listNames(t *testing.T, s *Session) []string {
	t.Helper()
	reply := s.Handle(context.Background(), msg("1", "tools/list", `{}`), nil)
	var res struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(reply.Result, &res); err != nil {
		t.Fatal(err)
	}
	return names(res.Tools)
}

func TestGuardFiltersListsAndRefusesCalls(t *testing.T) {
	a := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo"), tool("rm")}}}
	b := &scripted{fakeUpstream: fakeUpstream{name: "b", tools: []string{tool("echo")}}}
	g := gatewayWith(t, RouterOptions{}, a, b)
	guard := &denyGuard{}
	guard.set("tool:b/echo") // by server and original name, not the exposed b_echo
	g.Guard = guard
	s := sessionWith(t, g, `{}`)

	if got := listNames(t, s); !slices.Equal(got, []string{"echo", "rm"}) {
		t.Fatalf("listed %v", got)
	}
	asked := guard.visible.Load()
	listNames(t, s)
	if guard.visible.Load() != asked {
		t.Error("an unchanged list was filtered again: the filtered list must be cached")
	}
	reply := s.Handle(context.Background(), msg("2", "tools/call", `{"name":"b_echo","arguments":{"x":1}}`), nil)
	// A refused tools/call is a tool error the model reads, the refusal in its _meta.
	want := `{"_meta":{"io.github.mcp-gateway/denied":{"code":-32010,"message":"denied by test policy"}},"content":[{"text":"denied by test policy","type":"text"}],"isError":true}`
	if reply.Error != nil || string(reply.Result) != want || len(b.requests()) != 0 {
		t.Fatalf("a denied call: %s %s; b saw %v", reply.Result, reply.Error, b.requests())
	}
	reply = s.Handle(context.Background(), msg("3", "tools/call", `{"name":"echo","arguments":{"x":1}}`), nil)
	if reply.Error != nil || len(guard.outcomes) != 1 {
		t.Fatalf("an allowed call: %s, outcomes %d", reply.Error, len(guard.outcomes))
	}
	last := guard.admitted[len(guard.admitted)-1]
	if last.Server != "a" || last.Name != "echo" || string(last.Arguments) != `{"x":1}` || last.Kind != GuardTool {
		t.Errorf("the guard saw %+v", last)
	}

	// A change of decisions re-filters and tells the client.
	guard.set("tool:a/rm")
	g.GuardChanged()
	select {
	case m := <-s.Outbox():
		if !strings.Contains(string(m), "notifications/tools/list_changed") {
			t.Errorf("sent %s", m)
		}
	default:
		t.Fatal("no list_changed after the guard changed")
	}
	if got := listNames(t, s); !slices.Equal(got, []string{"echo", "b_echo"}) {
		t.Fatalf("listed %v after the change", got)
	}
	// A list request that sees the change before GuardChanged does
	// announces it all the same, once.
	guard.set()
	if got := listNames(t, s); !slices.Equal(got, []string{"echo", "rm", "b_echo"}) {
		t.Fatalf("listed %v after the second change", got)
	}
	g.GuardChanged()
	if n := len(s.Outbox()); n != 1 {
		t.Fatalf("%d notifications after a change seen first by a list request, want 1", n)
	}
	<-s.Outbox()
	// A change that alters nothing says nothing.
	guard.set()
	g.GuardChanged()
	select {
	case m := <-s.Outbox():
		t.Errorf("sent %s though the list did not change", m)
	default:
	}
}

// A call the guard refuses is counted by the Observer as one that ended
// denied, with its server and original name, without reaching the server.
func TestGuardDenialObserved(t *testing.T) {
	b := &scripted{fakeUpstream: fakeUpstream{name: "b", tools: []string{tool("echo")}}}
	g := gatewayWith(t, RouterOptions{}, b)
	guard := &denyGuard{}
	guard.set("tool:b/echo")
	g.Guard = guard
	o := &recordingObserver{}
	g.Observer = o
	s := sessionWith(t, g, `{}`)
	guard.set() // listed, then denied: a call by a client that listed before the change
	listNames(t, s)
	guard.set("tool:b/echo")
	s.Handle(context.Background(), msg("2", "tools/call", `{"name":"echo","arguments":{}}`), nil)
	if len(o.starts) != 1 || len(o.ends) != 1 {
		t.Fatalf("%d starts, %d ends; want the denied call once", len(o.starts), len(o.ends))
	}
	if c, e := o.starts[0], o.ends[0]; c.Server != "b" || c.Name != "echo" || !e.Denied || string(wire.Get(e.Reply.Result, "isError")) != "true" || len(b.requests()) != 0 {
		t.Errorf("observed %+v ending %+v; b saw %v", c, e, b.requests())
	}
}

// A completion of a prompt's argument or a resource's, and a subscription
// to a resource, are decided like prompts/get and resources/read of the
// item: refused without reaching the server when the item is denied, so a
// client learns nothing through them it could not read.
func TestGuardDecidesCompletionsAndSubscriptions(t *testing.T) {
	a := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}, prompts: []string{"greet"}}
	g := gatewayWith(t, RouterOptions{}, a)
	guard := &denyGuard{}
	guard.set("prompt:a/greet", "resource:a/mem://a")
	g.Guard = guard
	s := sessionWith(t, g, `{}`)
	refused := []struct{ method, params string }{
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"b"},"context":{"arguments":{"lang":"en"}}}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"mem://a"},"argument":{"name":"id","value":"1"}}`},
		{"resources/subscribe", `{"uri":"mem://a"}`},
	}
	for i, r := range refused {
		reply := s.Handle(context.Background(), msg(fmt.Sprint(i+1), r.method, r.params), nil)
		if reply.Error == nil || !strings.Contains(string(reply.Error), "denied by test policy") {
			t.Errorf("%s %s: %s %s, want the guard's refusal", r.method, r.params, reply.Result, reply.Error)
		}
	}
	// subscriptions/listen's subscriptions take the same path.
	if reply := g.subscribe(context.Background(), s, json.RawMessage(`{"uri":"mem://a"}`), nil, nil); reply.Error == nil {
		t.Error("a listen subscription to a denied resource was accepted")
	}
	if got := a.requests(); len(got) != 0 {
		t.Fatalf("the server saw %v though every request was denied", got)
	}
	var asked []string
	for _, c := range guard.admitted {
		if !c.Refers {
			t.Errorf("%s was decided as a use, not a reference (approval could be asked)", c.Method)
		}
		asked = append(asked, c.Method+" "+c.Kind+":"+c.Server+"/"+c.Name+" "+string(c.Arguments))
	}
	want := []string{
		`completion/complete prompt:a/greet {"lang":"en","who":"b"}`,
		`completion/complete resource:a/mem://a {"id":"1"}`,
		`resources/subscribe resource:a/mem://a `,
		`resources/subscribe resource:a/mem://a `,
	}
	if !slices.Equal(asked, want) {
		t.Errorf("the guard was asked\n%s\nwant\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}

	// Permitted, they reach the server and are reported.
	guard.set()
	for i, r := range refused {
		if reply := s.Handle(context.Background(), msg(fmt.Sprint(i+10), r.method, r.params), nil); reply.Error != nil {
			t.Errorf("%s permitted: %s", r.method, reply.Error)
		}
	}
	if got := len(a.requests()); got != 3 || len(guard.outcomes) != 3 {
		t.Errorf("permitted: the server saw %d requests, %d reported, want 3 and 3", got, len(guard.outcomes))
	}
}

// quietGuard is a denyGuard that also decides quietly: a use with an
// argument value starting "secret" is denied.
type quietGuard struct{ denyGuard }

func (q *quietGuard) Permits(c *GuardCall) bool {
	return !strings.Contains(string(c.Arguments), `"secret`)
}

// The values a completion proposes that a use would be denied with are
// left out, and its total (which counted them) dropped.
func TestGuardFiltersCompletionValues(t *testing.T) {
	a := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}, prompts: []string{"greet"},
		handle: func(context.Context, string, json.RawMessage) (*wire.Response, error) {
			return &wire.Response{Result: json.RawMessage(`{"completion":{"values":["bob","secret-plan","sec"],"total":3,"hasMore":false}}`)}, nil
		}}
	g := gatewayWith(t, RouterOptions{}, a)
	g.Guard = &quietGuard{}
	s := sessionWith(t, g, `{}`)
	reply := s.Handle(context.Background(), msg("1", "completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":""}}`), nil)
	if string(reply.Result) != `{"completion":{"values":["bob","sec"],"hasMore":false}}` {
		t.Fatalf("completion: %s %s", reply.Result, reply.Error)
	}
}

// askGuard asks the client to approve every call (as a policy with
// @requireApproval does) and admits it when approved.
type askGuard struct{ denyGuard }

func (a *askGuard) Admit(ctx context.Context, c *GuardCall) (func(Reply), *wire.Error) {
	if c.Elicit == nil {
		return nil, wire.Errorf(-32010, "cannot ask")
	}
	res, err := c.Elicit(ctx, json.RawMessage(`{"message":"approve?","requestedSchema":{"type":"object"}}`))
	if err != nil || string(wire.Get(wire.Get(res, "content"), "approve")) != "true" {
		return nil, wire.Errorf(-32010, "not approved")
	}
	return nil, nil
}

// A 2026-07-28 client's call that needs approval gets the question as an
// input_required result, and its retry with the answer runs the call:
// tools/call and resources/read alike.
func TestGuardApprovalStateless(t *testing.T) {
	a := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo")}}}
	g := gatewayWith(t, RouterOptions{}, a)
	g.Guard = &askGuard{}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	for _, c := range []struct{ method, params string }{
		{"tools/call", `{"name":"echo","arguments":{},` + meta + `}`},
		{"resources/read", `{"uri":"mem://a",` + meta + `}`},
	} {
		first := g.HandleStateless(context.Background(), msg(`1`, c.method, c.params), nil)
		if string(wire.Get(first.Result, "resultType")) != `"input_required"` {
			t.Fatalf("%s: %s %s, want input_required", c.method, first.Result, first.Error)
		}
		var res struct {
			InputRequests map[string]json.RawMessage
			RequestState  string
		}
		if err := json.Unmarshal(first.Result, &res); err != nil || len(res.InputRequests) != 1 {
			t.Fatalf("%s: %s", c.method, first.Result)
		}
		var key string
		for k := range res.InputRequests {
			key = k
		}
		retry := strings.Replace(c.params, `"_meta"`, `"requestState":"`+res.RequestState+`","inputResponses":{"`+key+`":{"action":"accept","content":{"approve":true}}},"_meta"`, 1)
		second := g.HandleStateless(context.Background(), msg(`2`, c.method, retry), nil)
		if second.Error != nil || string(wire.Get(second.Result, "resultType")) != `"complete"` {
			t.Errorf("%s retried with the approval: %s %s, want its complete result", c.method, second.Result, second.Error)
		}
	}
	if got := len(a.requests()); got != 2 {
		t.Errorf("the server saw %d requests, want 2 (each approved call once)", got)
	}
}

// A refusal is a JSON-RPC error for every method but tools/call, whose
// refusal is an isError result carrying the same error in its _meta.
func TestDeniedReply(t *testing.T) {
	werr := &wire.Error{Code: -32010, Message: "no", Data: json.RawMessage(`{"policies":["p"]}`)}
	for _, method := range []string{"prompts/get", "resources/read", "completion/complete", "resources/subscribe"} {
		if r := deniedReply(method, werr); r.Result != nil || string(r.Error) != `{"code":-32010,"message":"no","data":{"policies":["p"]}}` {
			t.Errorf("%s: %s %s", method, r.Result, r.Error)
		}
	}
	r := deniedReply("tools/call", werr)
	want := `{"_meta":{"io.github.mcp-gateway/denied":{"code":-32010,"message":"no","data":{"policies":["p"]}}},"content":[{"text":"no","type":"text"}],"isError":true}`
	if r.Error != nil || string(r.Result) != want {
		t.Errorf("tools/call: %s %s", r.Result, r.Error)
	}
}
