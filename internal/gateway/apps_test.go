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

const appURI = "ui://get-time/mcp-app.html"

// appUpstream is an MCP Apps server as the ext-apps examples are: a tool
// get-time whose _meta.ui names a ui:// resource it lists and serves. A
// unit-test fake; test/e2e renders the real ones in a browser.
type appUpstream struct {
	fakeUpstream
	mu   sync.Mutex
	seen []string // method + " " + params of reads and calls
}

func newAppUpstream(name string) *appUpstream {
	return &appUpstream{fakeUpstream: fakeUpstream{name: name}}
}

// appToolMeta is get-time's _meta: both keys, and a csp that must pass unchanged.
const appToolMeta = `{"ui":{"resourceUri":"` + appURI + `","csp":{"connectDomains":["https://a.example"]},"visibility":["model","app"]},"ui/resourceUri":"` + appURI + `","acme/x":1}`

func (f *appUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"` + f.name + `","version":"1"}}`)
}

func (f *appUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "tools/list":
		return &wire.Response{Result: json.RawMessage(`{"tools":[{"name":"get-time","inputSchema":{"type":"object"},"_meta":` + appToolMeta + `},{"name":"only-` + f.name + `","inputSchema":{"type":"object"}}]}`)}, nil
	case "resources/list":
		return &wire.Response{Result: json.RawMessage(`{"resources":[{"uri":"` + appURI + `","name":"app","mimeType":"text/html;profile=mcp-app","_meta":{"ui":{"csp":{}}}},{"uri":"file:///` + f.name + `","name":"f"}]}`)}, nil
	case "resources/templates/list":
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[]}`)}, nil
	}
	f.mu.Lock()
	f.seen = append(f.seen, method+" "+string(params))
	f.mu.Unlock()
	switch method {
	case "resources/read":
		uri, _ := wire.GetString(params, "uri")
		return &wire.Response{Result: json.RawMessage(`{"contents":[{"uri":` + string(wire.AppendString(nil, uri)) + `,"mimeType":"text/html;profile=mcp-app","text":"html of ` + f.name + `"}]}`)}, nil
	case "tools/call":
		return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"from ` + f.name + `"},{"type":"resource_link","uri":"` + appURI + `","name":"app"}],"_meta":{"ui":{"resourceUri":"` + appURI + `"}}}`)}, nil
	}
	return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
}

func (f *appUpstream) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// eraHandlers runs a request as a session-era client and as a 2026-07-28 one.
func eraHandlers(t *testing.T, g *Gateway) map[string]func(m *wire.Message) Reply {
	s := sessionWith(t, g, `{}`)
	return map[string]func(m *wire.Message) Reply{
		"2025-11-25": func(m *wire.Message) Reply { return s.Handle(context.Background(), m, nil) },
		"2026-07-28": func(m *wire.Message) Reply {
			params, _ := wire.Set(m.Params, "_meta", mergeMeta(wire.Get(m.Params, "_meta"),
				`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`))
			m.Params = params
			return g.HandleStateless(context.Background(), m, nil)
		},
	}
}

// mergeMeta adds the members of add to meta.
func mergeMeta(meta json.RawMessage, add string) json.RawMessage {
	out := json.RawMessage(add)
	wire.EachMember(meta, func(name []byte, v json.RawMessage) bool {
		out, _ = wire.Set(out, string(name), v)
		return true
	})
	return out
}

func toolsByName(t *testing.T, res json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var page struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(res, &page); err != nil {
		t.Fatalf("tools/list result %s: %v", res, err)
	}
	out := map[string]json.RawMessage{}
	for _, d := range page.Tools {
		n, _ := wire.GetString(d, "name")
		out[n] = d
	}
	return out
}

// TestAppURIsNamespacedOnCollision: of two servers with the same ui://
// URI, the second's is exposed as ui://<server>.<rest>, in its tool's
// _meta (both keys, csp and the rest unchanged), in resources/list, in its
// tool results, and a read of it reaches that server under its own URI,
// answered under the URI asked. Both eras.
func TestAppURIsNamespacedOnCollision(t *testing.T) {
	bapp, papp := newAppUpstream("bapp"), newAppUpstream("papp")
	g := gatewayWith(t, RouterOptions{}, papp, bapp)
	const renamed = "ui://papp.get-time/mcp-app.html"
	for era, handle := range eraHandlers(t, g) {
		t.Run(era, func(t *testing.T) {
			tools := toolsByName(t, handle(msg("1", "tools/list", `{}`)).Result)
			if got := string(wire.Get(tools["get-time"], "_meta")); got != appToolMeta {
				t.Errorf("bapp's get-time _meta = %s, want it unchanged: %s", got, appToolMeta)
			}
			want := strings.ReplaceAll(appToolMeta, appURI, renamed)
			if got := string(wire.Get(tools["papp_get-time"], "_meta")); got != want {
				t.Errorf("papp_get-time _meta = %s\nwant %s", got, want)
			}

			var list struct{ Resources []json.RawMessage }
			if err := json.Unmarshal(handle(msg("2", "resources/list", `{}`)).Result, &list); err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range list.Resources {
				u, _ := wire.GetString(r, "uri")
				uris = append(uris, u)
			}
			if wantURIs := []string{appURI, "file:///bapp", renamed, "file:///papp"}; !slices.Equal(uris, wantURIs) {
				t.Errorf("resources/list URIs = %q, want %q", uris, wantURIs)
			}

			for _, c := range []struct{ uri, server string }{{appURI, "bapp"}, {renamed, "papp"}} {
				reply := handle(msg("3", "resources/read", `{"uri":"`+c.uri+`"}`))
				if reply.Error != nil {
					t.Fatalf("resources/read %s: %s", c.uri, reply.Error)
				}
				var res struct{ Contents []struct{ URI, Text string } }
				if err := json.Unmarshal(reply.Result, &res); err != nil {
					t.Fatal(err)
				}
				if len(res.Contents) != 1 || res.Contents[0].URI != c.uri || res.Contents[0].Text != "html of "+c.server {
					t.Errorf("resources/read %s = %s, want html of %s under the URI asked", c.uri, reply.Result, c.server)
				}
			}
			if got := papp.requests(); len(got) == 0 || got[len(got)-1] != `resources/read {"uri":"`+appURI+`"}` &&
				!strings.HasPrefix(got[len(got)-1], `resources/read {"uri":"`+appURI+`","_meta"`) {
				t.Errorf("papp was asked %q, want a read of its own URI %s", got, appURI)
			}

			reply := handle(msg("4", "tools/call", `{"name":"papp_get-time","arguments":{}}`))
			if got, want := string(wire.Get(reply.Result, "_meta")), `{"ui":{"resourceUri":"`+renamed+`"}`; !strings.HasPrefix(got, want) {
				t.Errorf("papp_get-time result _meta = %s, want %s…", got, want)
			}
			if !strings.Contains(string(reply.Result), `{"type":"resource_link","uri":"`+renamed+`","name":"app"}`) {
				t.Errorf("papp_get-time result %s: its resource_link should name %s", reply.Result, renamed)
			}
			reply = handle(msg("5", "tools/call", `{"name":"get-time","arguments":{}}`))
			if !strings.Contains(string(reply.Result), `"resourceUri":"`+appURI+`"`) || !strings.Contains(string(reply.Result), "from bapp") {
				t.Errorf("bapp's get-time result = %s, want it unchanged", reply.Result)
			}
		})
	}
}

// TestAppURIsAloneUnchanged: a server whose ui:// URI nobody else has is
// exposed byte for byte.
func TestAppURIsAloneUnchanged(t *testing.T) {
	g := gatewayWith(t, RouterOptions{}, newAppUpstream("papp"))
	s := sessionWith(t, g, `{}`)
	tools := toolsByName(t, s.Handle(context.Background(), msg("1", "tools/list", `{}`), nil).Result)
	if got := string(wire.Get(tools["get-time"], "_meta")); got != appToolMeta {
		t.Errorf("_meta = %s, want %s", got, appToolMeta)
	}
}

// TestAppCallGoesToItsServer: a tools/call naming the app (MetaApp) and a
// tool by its name on the app's server reaches that server, without the
// gateway's member in _meta; an unknown app or tool is refused, saying why.
func TestAppCallGoesToItsServer(t *testing.T) {
	bapp, papp := newAppUpstream("bapp"), newAppUpstream("papp")
	g := gatewayWith(t, RouterOptions{}, bapp, papp)
	for era, handle := range eraHandlers(t, g) {
		t.Run(era, func(t *testing.T) {
			for _, c := range []struct {
				app  string
				up   *appUpstream
				name string
			}{
				{"ui://papp.get-time/mcp-app.html", papp, "get-time"},
				{appURI, bapp, "get-time"},
				{"ui://papp.get-time/mcp-app.html", papp, "only-papp"},
			} {
				before := len(c.up.requests())
				reply := handle(msg("1", "tools/call", `{"name":"`+c.name+`","arguments":{},"_meta":{"`+MetaApp+`":"`+c.app+`","progressToken":"p1"}}`))
				if reply.Error != nil || !strings.Contains(string(reply.Result), "from "+c.up.name) {
					t.Fatalf("app %s calling %s: %s %s, want the answer of %s", c.app, c.name, reply.Result, reply.Error, c.up.name)
				}
				got := c.up.requests()[before:]
				if len(got) != 1 || !strings.HasPrefix(got[0], `tools/call {"name":"`+c.name+`","arguments":{},"_meta":{`) || !strings.Contains(got[0], `"progressToken":"gw-progress-`) || strings.Contains(got[0], MetaApp) {
					t.Errorf("%s was sent %q, want the tool by its own name, the gateway's _meta member removed", c.up.name, got)
				}
			}
			reply := handle(msg("2", "tools/call", `{"name":"only-bapp","_meta":{"`+MetaApp+`":"ui://papp.get-time/mcp-app.html"}}`))
			if replyErr(reply) == nil || !strings.Contains(replyErr(reply).Message, `Unknown tool: only-bapp: mcp server "papp", whose app "ui://papp.get-time/mcp-app.html" made the call, offers no tool of that name`) {
				t.Errorf("an app calling another server's tool: %s %v, want refused", reply.Result, reply.Error)
			}
			reply = handle(msg("3", "tools/call", `{"name":"get-time","_meta":{"`+MetaApp+`":"ui://nobody/x.html"}}`))
			if replyErr(reply) == nil || replyErr(reply).Code != wire.CodeInvalidParams || !strings.Contains(replyErr(reply).Message, `"ui://nobody/x.html", which is not the URI of an app this gateway lists`) {
				t.Errorf("an unknown app: %s %v", reply.Result, reply.Error)
			}
			reply = handle(msg("4", "tools/call", `{"name":"get-time","_meta":{"`+MetaApp+`":7}}`))
			if replyErr(reply) == nil || replyErr(reply).Code != wire.CodeInvalidParams {
				t.Errorf("a non-string app: %s %v", reply.Result, reply.Error)
			}
			// An app's read of its own URI by its server's name.
			reply = handle(msg("5", "resources/read", `{"uri":"`+appURI+`","_meta":{"`+MetaApp+`":"ui://papp.get-time/mcp-app.html"}}`))
			if !strings.Contains(string(reply.Result), `"uri":"`+appURI+`"`) || !strings.Contains(string(reply.Result), "html of papp") {
				t.Errorf("papp's app reading %s: %s %v, want papp's", appURI, reply.Result, reply.Error)
			}
		})
	}
}

// TestAppCallGuarded: the guard decides an app's call as a call of the
// server's real tool, and a read of a renamed URI as the server's URI.
func TestAppCallGuarded(t *testing.T) {
	guard := &denyGuard{}
	guard.set("tool:papp/get-time", "resource:papp/"+appURI)
	r := NewRouter(RouterOptions{})
	g := New(r, Info{Name: "gw", Version: "t"})
	g.Guard = guard
	r.Add(newAppUpstream("bapp"))
	r.Add(newAppUpstream("papp"))
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	s := sessionWith(t, g, `{}`)
	reply := s.Handle(context.Background(), msg("1", "tools/call", `{"name":"get-time","_meta":{"`+MetaApp+`":"ui://papp.get-time/mcp-app.html"}}`), nil)
	if !strings.Contains(string(reply.Result), `"isError":true`) || !strings.Contains(string(reply.Result), `"`+DeniedMeta+`":{"code":-32010`) {
		t.Errorf("papp's app calling papp's forbidden get-time: %s %v, want refused", reply.Result, reply.Error)
	}
	reply = s.Handle(context.Background(), msg("2", "resources/read", `{"uri":"ui://papp.get-time/mcp-app.html"}`), nil)
	if replyErr(reply) == nil || replyErr(reply).Code != -32010 {
		t.Errorf("a read of papp's forbidden app resource under its new URI: %s %v, want refused", reply.Result, reply.Error)
	}
	reply = s.Handle(context.Background(), msg("3", "tools/call", `{"name":"get-time","_meta":{"`+MetaApp+`":"`+appURI+`"}}`), nil)
	if reply.Error != nil {
		t.Errorf("bapp's app calling bapp's get-time: %v", reply.Error)
	}
	guard.mu.Lock()
	var keys []string
	for _, c := range guard.admitted {
		keys = append(keys, guard.key(c.GuardItem))
	}
	guard.mu.Unlock()
	if want := []string{"tool:papp/get-time", "resource:papp/" + appURI, "tool:bapp/get-time"}; !slices.Equal(keys, want) {
		t.Errorf("the guard decided %q, want %q", keys, want)
	}
	// The list the guard filters names the server's own URI too.
	lr := s.Handle(context.Background(), msg("4", "resources/list", `{}`), nil)
	if strings.Contains(string(lr.Result), "ui://papp.get-time/") {
		t.Errorf("resources/list shows papp's forbidden app resource: %s", lr.Result)
	}
}

// TestBuildAppURIs: the first server keeps a URI; a later one gets its
// namespaced URI unless some server has that URI already, then its own is
// hidden with a warning.
func TestBuildAppURIs(t *testing.T) {
	a, b, c := &server{name: "a"}, &server{name: "b"}, &server{name: "c/d"}
	tab := buildAppURIs([]*server{a, b, c}, [][]string{
		{"ui://x/app.html", "ui://b.x/app.html"},
		{"ui://x/app.html", "ui://y"},
		{"ui://x/app.html", "ui://y"},
	})
	if got := tab.exposed(b, "ui://x/app.html"); got != "ui://x/app.html" {
		t.Errorf("b's ui://x/app.html exposed as %q: ui://b.x/app.html is a's, so it stays hidden", got)
	}
	if len(tab.warnings) != 1 || !strings.Contains(tab.warnings[0], `mcp server "b": ui:// resource "ui://x/app.html" is hidden: server "a" offers it too and came first, and "ui://b.x/app.html" is taken`) {
		t.Errorf("warnings = %q", tab.warnings)
	}
	if got := tab.exposed(c, "ui://x/app.html"); got != "ui://c_d.x/app.html" {
		t.Errorf("c/d's URI exposed as %q", got)
	}
	if got := tab.exposed(c, "ui://y"); got != "ui://c_d.y" {
		t.Errorf("c/d's ui://y exposed as %q", got)
	}
	if ref := tab.byExposed["ui://c_d.y"]; ref.server != c || ref.original != "ui://y" {
		t.Errorf("ui://c_d.y belongs to %v", ref)
	}
}

// replyErr is a reply's error, decoded, or nil.
func replyErr(r Reply) *wire.Error {
	if r.Error == nil {
		return nil
	}
	return wire.DecodeError(r.Error)
}

// resourcesUpstream lists the resources it is given, and no tools.
type resourcesUpstream struct {
	fakeUpstream
	mu        sync.Mutex
	resources string
}

func (f *resourcesUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"resources":{"listChanged":true}},"serverInfo":{"name":"r","version":"1"}}`)
}

func (f *resourcesUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case "resources/list":
		return &wire.Response{Result: json.RawMessage(`{"resources":[` + f.resources + `]}`)}, nil
	case "resources/templates/list":
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[]}`)}, nil
	}
	return &wire.Response{Error: json.RawMessage(`{"code":-32601,"message":"nope"}`)}, nil
}

// TestAppURIsFollowResourceChanges: when a server that sorts first starts
// listing a ui:// URI another server's tool names, re-listing its resources
// alone renames the other's URI in that tool's definition too (and back).
func TestAppURIsFollowResourceChanges(t *testing.T) {
	aapp := &resourcesUpstream{fakeUpstream: fakeUpstream{name: "aapp"}}
	bapp := newAppUpstream("bapp")
	g := gatewayWith(t, RouterOptions{}, aapp, bapp)
	r := g.Router
	uriOf := func() string {
		for _, it := range r.view(kindTools).items {
			if it.server.name == "bapp" && it.original == "get-time" {
				ui := wire.Get(wire.Get(it.def, "_meta"), "ui")
				u, _ := wire.GetString(ui, "resourceUri")
				return u
			}
		}
		return ""
	}
	if got := uriOf(); got != appURI {
		t.Fatalf("before: bapp's get-time names %q", got)
	}
	relist := func() {
		if err := r.list(context.Background(), r.server("aapp"), kindResources, kindTemplates); err != nil {
			t.Fatal(err)
		}
		r.rebuild(kindResources, kindTemplates)
	}
	aapp.mu.Lock()
	aapp.resources = `{"uri":"` + appURI + `","name":"a"}`
	aapp.mu.Unlock()
	relist()
	if got := uriOf(); got != "ui://bapp.get-time/mcp-app.html" {
		t.Errorf("after aapp lists %s: bapp's get-time names %q, want ui://bapp.get-time/mcp-app.html", appURI, got)
	}
	aapp.mu.Lock()
	aapp.resources = ``
	aapp.mu.Unlock()
	relist()
	if got := uriOf(); got != appURI {
		t.Errorf("after aapp no longer lists it: bapp's get-time names %q", got)
	}
}

// headerApp is an app server whose get-time mirrors an argument into a header.
type headerApp struct{ *appUpstream }

func (f headerApp) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	if method == "tools/list" {
		return &wire.Response{Result: json.RawMessage(`{"tools":[{"name":"get-time","inputSchema":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},"_meta":` + appToolMeta + `}]}`)}, nil
	}
	return f.appUpstream.Call(ctx, method, params)
}

// TestAppCallParamHeaders: the Mcp-Param-* headers of an app's call are
// those of its own server's tool, the one the call reaches.
func TestAppCallParamHeaders(t *testing.T) {
	g := gatewayWith(t, RouterOptions{}, newAppUpstream("bapp"), headerApp{newAppUpstream("papp")})
	if got := g.CallParamHeaders(json.RawMessage(`{"name":"get-time"}`)); len(got) != 0 {
		t.Errorf("bapp's get-time: headers %v, want none", got)
	}
	got := g.CallParamHeaders(json.RawMessage(`{"name":"get-time","_meta":{"` + MetaApp + `":"ui://papp.get-time/mcp-app.html"}}`))
	if len(got) != 1 || got[0].Name != "Zone" || !slices.Equal(got[0].Path, []string{"zone"}) {
		t.Errorf("papp's app calling get-time: headers %v, want papp's Zone", got)
	}
	if got := g.CallParamHeaders(json.RawMessage(`{"name":"get-time","_meta":{"` + MetaApp + `":"ui://nobody"}}`)); len(got) != 0 {
		t.Errorf("an unknown app: headers %v, want none (the call is refused)", got)
	}
}
