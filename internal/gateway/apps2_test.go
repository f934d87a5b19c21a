package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The second half of MCP Apps through the gateway: subscriptions,
// completions, ui:// templates, resumed calls and calls without the app
// member, for a renamed ui:// URI.

const (
	uiTemplate      = "ui://widgets/{id}"
	renamedAppURI   = "ui://papp.get-time/mcp-app.html"
	renamedTemplate = "ui://papp.widgets/{id}"
)

// uiUpstream is an MCP Apps server with more than the examples have: a
// subscribable ui:// resource, a ui:// template with completions, and a
// tool "ask" that asks its client for input before answering with links to
// its ui:// resources.
type uiUpstream struct {
	fakeUpstream
	g    *Gateway // set once the gateway is up: ask's elicitation goes through it
	mu   sync.Mutex
	seen []string
}

func (f *uiUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{"subscribe":true},"completions":{}},"serverInfo":{"name":"` + f.name + `","version":"1"}}`)
}

func (f *uiUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "tools/list":
		return &wire.Response{Result: json.RawMessage(`{"tools":[{"name":"get-time","inputSchema":{"type":"object"},"_meta":` + appToolMeta + `},{"name":"ask","inputSchema":{"type":"object"}},{"name":"only-` + f.name + `","inputSchema":{"type":"object"}}]}`)}, nil
	case "resources/list":
		return &wire.Response{Result: json.RawMessage(`{"resources":[{"uri":"` + appURI + `","name":"app"}]}`)}, nil
	case "resources/templates/list":
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[{"uriTemplate":"` + uiTemplate + `","name":"widget","_meta":{"ui":{"csp":{}}}}]}`)}, nil
	}
	f.mu.Lock()
	f.seen = append(f.seen, method+" "+string(params))
	f.mu.Unlock()
	switch method {
	case "resources/read":
		uri, _ := wire.GetString(params, "uri")
		return &wire.Response{Result: json.RawMessage(`{"contents":[{"uri":` + string(wire.AppendString(nil, uri)) + `,"text":"of ` + f.name + `"}]}`)}, nil
	case "resources/subscribe", "resources/unsubscribe":
		return &wire.Response{Result: json.RawMessage(`{}`)}, nil
	case "completion/complete":
		return &wire.Response{Result: json.RawMessage(`{"completion":{"values":["` + f.name + `"]}}`)}, nil
	case "tools/call":
		if name, _ := wire.GetString(params, "name"); name == "ask" {
			h := f.g.UpstreamHooks(f.name)
			h.bind(f.g.Router.server(f.name))
			if _, werr := h.OnRequest(ctx, "elicitation/create", json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`)); werr != nil {
				return &wire.Response{Error: mustJSON(werr)}, nil
			}
		}
		return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"from ` + f.name + `"},{"type":"resource_link","uri":"` + appURI + `","name":"app"},{"type":"resource_link","uri":"ui://widgets/7","name":"w"}],"_meta":{"ui":{"resourceUri":"` + appURI + `"}}}`)}, nil
	}
	return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
}

func (f *uiUpstream) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// twoUIServers starts bapp and papp (which sorts second, so its ui:// URI
// and template are the renamed ones).
func twoUIServers(t *testing.T, opts RouterOptions) (*Gateway, *uiUpstream, *uiUpstream) {
	bapp, papp := &uiUpstream{fakeUpstream: fakeUpstream{name: "bapp"}}, &uiUpstream{fakeUpstream: fakeUpstream{name: "papp"}}
	g := gatewayWith(t, opts, papp, bapp)
	bapp.g, papp.g = g, g
	return g, bapp, papp
}

// TestAppSubscribeRenamed: a subscription to a renamed ui:// URI (or to a
// URI of a renamed template) reaches its server under the URI the server
// knows, and the server's update comes back under the renamed URI, to its
// subscribers only; the other server's update of the same original URI
// goes to the original URI's subscribers.
func TestAppSubscribeRenamed(t *testing.T) {
	g, bapp, papp := twoUIServers(t, RouterOptions{})
	ps, bs := sessionWith(t, g, `{}`), sessionWith(t, g, `{}`)
	for _, c := range []struct {
		s        *Session
		uri      string
		up       *uiUpstream
		original string
	}{
		{ps, renamedAppURI, papp, appURI},
		{ps, "ui://papp.widgets/7", papp, "ui://widgets/7"},
		{bs, appURI, bapp, appURI},
	} {
		before := len(c.up.requests())
		if r := c.s.Handle(context.Background(), msg("1", "resources/subscribe", `{"uri":"`+c.uri+`"}`), nil); r.Error != nil {
			t.Fatalf("subscribe %s: %s", c.uri, r.Error)
		}
		if got := c.up.requests()[before:]; !slices.Equal(got, []string{`resources/subscribe {"uri":"` + c.original + `"}`}) {
			t.Errorf("subscribing to %s, %s was sent %q", c.uri, c.up.name, got)
		}
	}
	if got := len(bapp.requests()); got != 1 {
		t.Errorf("bapp saw %q, want only its own subscription", bapp.requests())
	}
	next := func(s *Session) string {
		select {
		case m := <-s.Outbox():
			return string(m)
		default:
			return ""
		}
	}
	update := func(uri string) string {
		return `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"` + uri + `"}}`
	}
	hooksOf(g, "papp").OnNotification("notifications/resources/updated", json.RawMessage(`{"uri":"`+appURI+`"}`))
	if got := next(ps); got != update(renamedAppURI) {
		t.Errorf("papp's update of %s reached its subscriber as %s, want %s", appURI, got, update(renamedAppURI))
	}
	if got := next(bs); got != "" {
		t.Errorf("bapp's subscriber got papp's update: %s", got)
	}
	hooksOf(g, "papp").OnNotification("notifications/resources/updated", json.RawMessage(`{"uri":"ui://widgets/7"}`))
	if got := next(ps); got != update("ui://papp.widgets/7") {
		t.Errorf("papp's update of ui://widgets/7 reached its subscriber as %s", got)
	}
	hooksOf(g, "bapp").OnNotification("notifications/resources/updated", json.RawMessage(`{"uri":"`+appURI+`"}`))
	if got := next(bs); got != update(appURI) {
		t.Errorf("bapp's update reached its subscriber as %s", got)
	}
	if got := next(ps); got != "" {
		t.Errorf("papp's subscriber got bapp's update: %s", got)
	}
	before := len(papp.requests())
	ps.Handle(context.Background(), msg("2", "resources/unsubscribe", `{"uri":"`+renamedAppURI+`"}`), nil)
	if got := papp.requests()[before:]; !slices.Equal(got, []string{`resources/unsubscribe {"uri":"` + appURI + `"}`}) {
		t.Errorf("unsubscribing from %s, papp was sent %q", renamedAppURI, got)
	}
}

// TestAppTemplatesNamespaced: colliding ui:// templates are listed as
// ui://<server>.<rest> (the rest of the definition unchanged), and a read
// of a URI the renamed template matches goes to its server under the URI
// that server's template matches, answered under the URI asked. Both eras.
func TestAppTemplatesNamespaced(t *testing.T) {
	g, bapp, papp := twoUIServers(t, RouterOptions{})
	for era, handle := range eraHandlers(t, g) {
		t.Run(era, func(t *testing.T) {
			var page struct{ ResourceTemplates []json.RawMessage }
			if err := json.Unmarshal(handle(msg("1", "resources/templates/list", `{}`)).Result, &page); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range page.ResourceTemplates {
				got = append(got, string(d))
			}
			want := []string{
				`{"uriTemplate":"` + uiTemplate + `","name":"widget","_meta":{"ui":{"csp":{}}}}`,
				`{"uriTemplate":"` + renamedTemplate + `","name":"widget","_meta":{"ui":{"csp":{}}}}`,
			}
			if !slices.Equal(got, want) {
				t.Errorf("resources/templates/list = %q\nwant %q", got, want)
			}
			for _, c := range []struct {
				uri, original string
				up            *uiUpstream
			}{{"ui://papp.widgets/7", "ui://widgets/7", papp}, {"ui://widgets/7", "ui://widgets/7", bapp}} {
				before := len(c.up.requests())
				reply := handle(msg("2", "resources/read", `{"uri":"`+c.uri+`"}`))
				if want := `{"contents":[{"uri":"` + c.uri + `","text":"of ` + c.up.name + `"}]}`; !strings.HasPrefix(string(reply.Result), want[:len(want)-1]) {
					t.Errorf("reading %s: %s %s, want %s", c.uri, reply.Result, reply.Error, want)
				}
				if got := c.up.requests()[before:]; len(got) != 1 || !strings.HasPrefix(got[0], `resources/read {"uri":"`+c.original+`"`) {
					t.Errorf("reading %s, %s was sent %q", c.uri, c.up.name, got)
				}
			}
		})
	}
}

// TestAppCompleteRenamed: completion/complete of a renamed ui:// template
// or URI is answered by its server, asked with the one it knows. Both eras.
func TestAppCompleteRenamed(t *testing.T) {
	g, bapp, papp := twoUIServers(t, RouterOptions{})
	for era, handle := range eraHandlers(t, g) {
		t.Run(era, func(t *testing.T) {
			for _, c := range []struct {
				uri, original string
				up            *uiUpstream
			}{
				{renamedTemplate, uiTemplate, papp},
				{renamedAppURI, appURI, papp},
				{"ui://papp.widgets/7", "ui://widgets/7", papp},
				{uiTemplate, uiTemplate, bapp},
			} {
				before := len(c.up.requests())
				reply := handle(msg("1", "completion/complete", `{"ref":{"type":"ref/resource","uri":"`+c.uri+`"},"argument":{"name":"id","value":""}}`))
				if reply.Error != nil || !strings.Contains(string(reply.Result), `"values":["`+c.up.name+`"]`) {
					t.Errorf("completing %s: %s %s, want %s's answer", c.uri, reply.Result, reply.Error, c.up.name)
				}
				if got := c.up.requests()[before:]; len(got) != 1 || !strings.HasPrefix(got[0], `completion/complete {"ref":{"type":"ref/resource","uri":"`+c.original+`"}`) {
					t.Errorf("completing %s, %s was sent %q", c.uri, c.up.name, got)
				}
			}
		})
	}
}

// TestAppResumedCallRewritten: a 2026-07-28 call of a renamed server's
// tool that waits for the client's input, once resumed, has its result's
// references to renamed ui:// URIs rewritten like any tools/call result.
func TestAppResumedCallRewritten(t *testing.T) {
	g, _, _ := twoUIServers(t, RouterOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	for _, call := range []string{
		`{"name":"papp_ask","arguments":{},` + meta + `}`,
		`{"name":"ask","arguments":{},` + strings.Replace(meta, `"_meta":{`, `"_meta":{"`+MetaApp+`":"`+renamedAppURI+`",`, 1) + `}`,
	} {
		first := g.HandleStateless(context.Background(), msg("1", "tools/call", call), nil)
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(first.Result, &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
			t.Fatalf("%s: first answer %s %s, want input_required", call, first.Result, first.Error)
		}
		var key string
		for k := range ir.InputRequests {
			key = k
		}
		retry := strings.Replace(call, `"arguments":{},`, `"arguments":{},"requestState":"`+ir.RequestState+`","inputResponses":{"`+key+`":{"action":"accept","content":{}}},`, 1)
		final := g.HandleStateless(context.Background(), msg("2", "tools/call", retry), nil)
		res := string(final.Result)
		for _, want := range []string{`"text":"from papp"`, `"uri":"` + renamedAppURI + `"`, `"uri":"ui://papp.widgets/7"`, `"resourceUri":"` + renamedAppURI + `"`} {
			if !strings.Contains(res, want) {
				t.Errorf("%s: the resumed call's result %s %s lacks %s", call, res, final.Error, want)
			}
		}
		if strings.Contains(res, `"`+appURI+`"`) {
			t.Errorf("the resumed call's result still names papp's original %s: %s", appURI, res)
		}
	}
}

// TestAppCallWithoutMember: a call by a name the gateway does not expose
// goes to the one server whose tool has that name; when several have it,
// it is refused, naming them; a name the gateway exposes is routed by it.
func TestAppCallWithoutMember(t *testing.T) {
	g, bapp, papp := twoUIServers(t, RouterOptions{Prefix: PrefixAlways})
	for era, handle := range eraHandlers(t, g) {
		t.Run(era, func(t *testing.T) {
			before := len(papp.requests())
			reply := handle(msg("1", "tools/call", `{"name":"only-papp","arguments":{}}`))
			if reply.Error != nil || !strings.Contains(string(reply.Result), `"uri":"`+renamedAppURI+`"`) {
				t.Errorf("only-papp (exposed as papp_only-papp): %s %s, want papp's answer, rewritten", reply.Result, reply.Error)
			}
			if got := papp.requests()[before:]; len(got) != 1 || !strings.HasPrefix(got[0], `tools/call {"name":"only-papp"`) {
				t.Errorf("papp was sent %q", got)
			}
			nb, np := len(bapp.requests()), len(papp.requests())
			reply = handle(msg("2", "tools/call", `{"name":"get-time","arguments":{}}`))
			want := `Unknown tool: get-time: several mcp servers offer a tool of that name ("bapp" as "bapp_get-time", "papp" as "papp_get-time"), so the gateway cannot tell which is meant: call it by its exposed name, or, for a call an MCP App makes, add params._meta["` + MetaApp + `"] with the app's ui:// URI`
			if e := replyErr(reply); e == nil || e.Code != wire.CodeInvalidParams || e.Message != want {
				t.Errorf("get-time, which both have: %s %v\nwant -32602 %s", reply.Result, e, want)
			}
			if len(bapp.requests()) != nb || len(papp.requests()) != np {
				t.Errorf("an ambiguous call reached a server")
			}
			reply = handle(msg("3", "tools/call", `{"name":"papp_get-time","arguments":{}}`))
			if !strings.Contains(string(reply.Result), "from papp") {
				t.Errorf("papp_get-time: %s %s", reply.Result, reply.Error)
			}
		})
	}
	if hs := g.CallParamHeaders(json.RawMessage(`{"name":"only-papp"}`)); hs != nil {
		t.Errorf("only-papp has no argument headers, got %v", hs)
	}
}
