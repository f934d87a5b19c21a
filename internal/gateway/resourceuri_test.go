package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func TestNormalizeURI(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"notes://secret", "notes://secret"},
		{"notes://secret?x=1", "notes://secret"},
		{"notes://secret#frag", "notes://secret"},
		{"notes://secret/", "notes://secret"},
		{"notes://secret//", "notes://secret"},
		{"notes://secret/./", "notes://secret"},
		{"notes://secret/a/..", "notes://secret"},
		{"NOTES://Secret", "notes://secret"},                  // scheme and authority fold
		{"notes://secr%65t", "notes://secret"},                // an unreserved escape
		{"notes://secr%6%35t", "notes://secret"},              // ... also one that decoding forms
		{"users://1/x/../profile", "users://1/profile"},       // dot segments
		{"users://1/%2E%2E/1/profile", "users://1/1/profile"}, // ... encoded ones too
		{"users://a%2fb/profile", "users://a%2Fb/profile"},    // a reserved escape stays, in upper case
		{"users://1/Profile", "users://1/Profile"},            // the path keeps its case
		{"file:///etc//hosts/", "file:///etc/hosts"},
		{"urn:a/../b", "urn:b"},
		{"X/../A:b", "./A:b"}, // not read as a scheme next time
		{"%41b:c", "ab:c"},
		{"", ""},
		{"?", ""},
		{"%zz%4", "%zz%4"},
	} {
		if got := normalizeURI(tc.in); got != tc.want {
			t.Errorf("normalizeURI(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestURIReadings(t *testing.T) {
	got := uriReadings("users://1#/profile?x")
	want := []string{"users://1", "users://1#/profile", "users://1#/profile?x"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("readings = %q, want %q", got, want)
	}
	if got := uriReadings("users://1/profile"); len(got) != 1 {
		t.Errorf("a URI without query or fragment has one reading, got %q", got)
	}
}

func TestLooseTemplate(t *testing.T) {
	for _, tc := range []struct {
		template, uri string
		want          bool
	}{
		{"users://{id}/profile", "users://7/profile", true},
		{"users://{id}/profile", "users://7/profile/", true},
		{"users://{id}/profile", "users://7/profile?x=1", true},
		{"users://{id}/profile", "users://a b@c/profile", true}, // outside RFC 6570's unreserved set
		{"users://{id}/profile", "users://1#/profile", true},    // FastMCP splits at '?' only
		{"users://{id}/profile", "users://7/x/../profile", true},
		{"users://{id}/profile", "USERS://7/profile", true},
		{"users://{id}/profile", "users://7/settings", false},
		{"users://{id}/profile", "users://7/8/profile", false}, // {id} is one segment
		{"users://{id}/Profile", "users://7/profile", false},
		{"files://{p:path}", "files://a/b/c", true}, // FastMCP's path type; not RFC 6570
		{"file:///{+path}", "file:///etc/hosts", true},
		{"search://q{?term}", "search://q?term=go", true},
		{"search://q?term={term}", "search://q", true},
		{"{scheme}://x", "anything://at/all", true}, // no sure reading: matches every URI
	} {
		tpl := parseURITemplate(tc.template)
		if got := tpl.mayMatch(uriReadings(tc.uri)); got != tc.want {
			t.Errorf("%s may match %s = %v, want %v", tc.template, tc.uri, got, tc.want)
		}
	}
}

// FuzzNormalizeURI: the canonical form never panics, is its own, and a
// URI in canonical form matches itself: as a listed URI (the same
// canonical form) and as a template without variables (loosely).
func FuzzNormalizeURI(f *testing.F) {
	for _, s := range []string{"notes://secret?x#y", "users://1/x/../profile/", "NOTES://secr%65t", "%6%45", "X/../A:b",
		"file:///a//b/./c/..", "urn:a:b", "//h/p", "a{b}c", "%%414", "users://1#/p?q", "users://a@b/profile",
		"users://7/%2E/profile", "demo://r/%2e%2E/x", "notes://secret/a/..", "\xff", "%2F%2f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		c := normalizeURI(uri)
		if again := normalizeURI(c); again != c {
			t.Fatalf("normalizeURI(%q) = %q, but normalizeURI(%q) = %q", uri, c, c, again)
		}
		for _, r := range uriReadings(uri) {
			if again := normalizeCut(r, ""); again != r {
				t.Fatalf("reading %q of %q is not canonical: %q", r, uri, again)
			}
		}
		if !containsString(uriReadings(c), c) {
			t.Fatalf("%q is not among its own readings", c)
		}
		if !strings.ContainsAny(c, "{}\x00\x01") {
			if !parseURITemplate(c).mayMatch(uriReadings(c)) {
				t.Fatalf("%q as a template does not match itself", c)
			}
		}
	})
}

// FuzzLooseTemplate: any template has a loose reading (never a panic),
// and one without expressions matches exactly the URIs of its canonical form.
func FuzzLooseTemplate(f *testing.F) {
	for _, s := range []string{"users://{id}/profile", "files://{p:path}", "search://q{?term}", "{s}://x", "a{b", "x://h/{a}/../b",
		"file:///{+path}", "x://{a,b}/{c:3}", "x://h/\xff{a}", "x://h?q={q}"} {
		f.Add(s, "users://7/profile")
	}
	f.Fuzz(func(t *testing.T, tmpl, uri string) {
		tpl := parseURITemplate(tmpl)
		got := tpl.mayMatch(uriReadings(uri))
		if !strings.ContainsAny(tmpl, "{}\x00\x01") { // (with a placeholder byte it matches everything)
			// (An invalid UTF-8 byte reads as U+FFFD, so any two match.)
			want := false
			for _, r := range uriReadings(uri) {
				want = want || runes(r) == runes(normalizeURI(tmpl))
			}
			if got != want {
				t.Fatalf("template %q may match %q = %v, want %v (its canonical form %q)", tmpl, uri, got, want, normalizeURI(tmpl))
			}
		}
	})
}

// runes is s with each invalid UTF-8 byte as U+FFFD.
func runes(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// uriServer lists a resource and a template.
type uriServer struct{ scripted }

func (f *uriServer) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	switch method {
	case "resources/list":
		return &wire.Response{Result: json.RawMessage(`{"resources":[{"uri":"notes://secret","name":"s"},{"uri":"notes://public","name":"p"}]}`)}, nil
	case "resources/templates/list":
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[{"uriTemplate":"users://{id}/profile","name":"u"},{"uriTemplate":"files://{p:path}","name":"f"},{"uriTemplate":"search://q{?term}","name":"q"}]}`)}, nil
	}
	return f.scripted.Call(ctx, method, params)
}

// forbidGuard is a denyGuard that can tell forbids quietly (as
// internal/policy's Guard does), and refuses a call whose Template it denies.
type forbidGuard struct{ denyGuard }

func (g *forbidGuard) Restricts(c *GuardCall) Restriction {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.denied[g.key(c.GuardItem)] {
		return Forbidden
	}
	return Unrestricted
}

func (g *forbidGuard) Admit(ctx context.Context, c *GuardCall) (func(Reply), *wire.Error) {
	g.mu.Lock()
	byTemplate := c.Template != "" && g.denied["resource:"+c.Server+"/"+c.Template]
	g.mu.Unlock()
	if byTemplate {
		return nil, wire.Errorf(-32010, "denied by test policy (as %s)", c.Template)
	}
	return g.denyGuard.Admit(ctx, c)
}

// A URI is decided as every listed resource and template its server could
// resolve it to; with one resource server it is routed there, and decided
// so, whatever the gateway's own matcher says.
func TestResourceURIDecidedByEveryCandidate(t *testing.T) {
	a := &uriServer{scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}}
	g := gatewayWith(t, RouterOptions{}, a)
	guard := &forbidGuard{}
	guard.set("resource:a/notes://secret", "resource:a/users://{id}/profile", "resource:a/files://{p:path}", "resource:a/search://q{?term}")
	g.Guard = guard
	s := sessionWith(t, g, `{}`)
	denied := map[string]string{
		"notes://secret":         "",
		"notes://secret?x=1":     "notes://secret",
		"notes://secret#x":       "notes://secret",
		"notes://secret/":        "notes://secret",
		"notes://secret/a/..":    "notes://secret",
		"notes://secr%65t":       "notes://secret",
		"NOTES://secret":         "notes://secret",
		"users://7/profile":      "users://{id}/profile",
		"users://7/profile/":     "users://{id}/profile",
		"users://7/profile?x":    "users://{id}/profile",
		"users://a@b/profile":    "users://{id}/profile",
		"users://7/x/../profile": "users://{id}/profile",
		"files://etc/passwd":     "files://{p:path}",
		"users://{id}/profile/":  "users://{id}/profile", // a completion's reference
		"search://q{?term}/":     "search://q{?term}",    // ... to a template with a query
	}
	id := 0
	for uri, as := range denied {
		p := wire.AppendString([]byte(`{"uri":`), uri)
		p = append(p, '}')
		for _, m := range []struct{ method, params string }{
			{"resources/read", string(p)},
			{"resources/subscribe", string(p)},
			{"completion/complete", `{"ref":{"type":"ref/resource","uri":` + string(wire.AppendString(nil, uri)) + `},"argument":{"name":"id","value":"1"}}`},
		} {
			id++
			reply := s.Handle(context.Background(), msg(fmt.Sprint(id), m.method, m.params), nil)
			want := "denied by test policy"
			if as != "" {
				want += " (as " + as + ")"
			}
			if reply.Error == nil || !strings.Contains(string(reply.Error), want) {
				t.Errorf("%s %s: %s %s, want %q", m.method, uri, reply.Result, reply.Error, want)
			}
		}
		// subscriptions/listen's subscriptions take subscribe's path.
		if reply := g.subscribe(context.Background(), s, p, nil, nil); reply.Error == nil {
			t.Errorf("a listen subscription to %s was accepted", uri)
		}
	}
	if got := a.requests(); len(got) != 0 {
		t.Fatalf("the server saw %v though every request was denied", got)
	}
	for _, uri := range []string{"notes://public", "notes://public/", "users://7/settings"} {
		id++
		if reply := s.Handle(context.Background(), msg(fmt.Sprint(id), "resources/read", `{"uri":"`+uri+`"}`), nil); reply.Error != nil {
			t.Errorf("reading %s: %s", uri, reply.Error)
		}
	}
}

// manyURIServer lists n resources and n/10 templates.
type manyURIServer struct {
	scripted
	n int
}

func (f *manyURIServer) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	var defs []string
	switch method {
	case "resources/list":
		for i := range f.n {
			defs = append(defs, fmt.Sprintf(`{"uri":"file:///srv/data/doc-%d.md","name":"d%d"}`, i, i))
		}
		return &wire.Response{Result: json.RawMessage(`{"resources":[` + strings.Join(defs, ",") + `]}`)}, nil
	case "resources/templates/list":
		for i := range f.n / 10 {
			defs = append(defs, fmt.Sprintf(`{"uriTemplate":"db://table-%d/{id}/row{?fields}","name":"t%d"}`, i, i))
		}
		return &wire.Response{Result: json.RawMessage(`{"resourceTemplates":[` + strings.Join(defs, ",") + `]}`)}, nil
	}
	return f.scripted.Call(ctx, method, params)
}

// The cost of finding a URI's candidates, per resources/read with a guard,
// on a server listing 100 resources and 10 templates.
func BenchmarkResourceCandidates(b *testing.B) {
	up := &manyURIServer{scripted: scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("x")}}}, n: 100}
	r := NewRouter(RouterOptions{})
	r.Add(up)
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	for _, uri := range []string{"file:///srv/data/doc-42.md", "db://table-3/7/row?fields=a"} {
		b.Run(uri, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(r.resourceCandidates("a", uri)) > 1 {
					b.Fatal("unexpected candidates")
				}
			}
		})
	}
}
