package gateway

// MCP Apps (the io.modelcontextprotocol/ui extension, SEP-1865) through an
// aggregator: a tool names its user interface by a ui:// resource in
// _meta.ui.resourceUri, and the app, rendered by the host, calls tools of
// its own server by their names on that server. Two servers may use the
// same ui:// URI; the gateway then gives the later one (servers in sorted
// order) a URI of its own, rewrites every reference to it, and routes an
// app's calls to the app's server. docs/apps.md describes the design.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// MetaApp is the _meta member a host adds to a request an app makes
// (tools/call, resources/read): the ui:// URI, as the gateway listed it, of
// the app's resource. Such a tools/call names a tool by its name on the
// app's own server and goes to that server alone.
const MetaApp = "io.github.mcp-gateway/app"

// legacyUIResourceURI is the flat _meta key of MCP Apps before _meta.ui.
const legacyUIResourceURI = "ui/resourceUri"

// appRef is one server's ui:// URI, by the URI the server knows.
type appRef struct {
	server   *server
	original string
}

// appURIs is who owns each ui:// URI the gateway exposes, built from every
// server's listings by buildAppURIs. It is immutable once built.
type appURIs struct {
	byExposed map[string]appRef // every exposed ui:// URI → its server and original URI
	renamed   map[appRef]string // the URIs exposed under another name → that name
	warnings  []string
}

// isUIURI reports whether uri is of the ui:// scheme (schemes are case-insensitive).
func isUIURI(uri string) bool { return len(uri) > len("ui://") && strings.EqualFold(uri[:5], "ui://") }

// namespacedUIURI is the URI a server's colliding ui:// URI is exposed as:
// the server's name (as in a prefixed tool name) and a dot before the rest,
// so "ui://get-time/mcp-app.html" of server "preact" becomes
// "ui://preact.get-time/mcp-app.html". It keeps the scheme, so hosts still
// know it for an app.
func namespacedUIURI(server, uri string) string {
	return "ui://" + serverPrefix(server) + "." + uri[len("ui://"):]
}

// uiURIsOf lists a server's ui:// URIs: those it lists as resources, then
// those its tools name without listing them, each once.
func uiURIsOf(tools, resources []json.RawMessage) []string {
	var out []string
	seen := map[string]bool{}
	add := func(uri string) {
		if isUIURI(uri) && !seen[uri] {
			seen[uri] = true
			out = append(out, uri)
		}
	}
	for _, r := range resources {
		uri, _ := wire.GetString(r, "uri")
		add(uri)
	}
	for _, t := range tools {
		for _, uri := range toolUIURIs(t) {
			add(uri)
		}
	}
	return out
}

// toolUIURIs are the ui:// URIs a tool definition (or a result) names in
// its _meta: _meta.ui.resourceUri and the legacy _meta["ui/resourceUri"].
func toolUIURIs(obj json.RawMessage) []string {
	meta := wire.Get(obj, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var out []string
	if uri, ok := wire.GetString(wire.Get(meta, "ui"), "resourceUri"); ok {
		out = append(out, uri)
	}
	if uri, ok := wire.GetString(meta, legacyUIResourceURI); ok {
		out = append(out, uri)
	}
	return out
}

// buildAppURIs decides the exposed name of every server's ui:// URIs:
// servers in the router's order (sorted), the first server with a URI keeps
// it, a later one gets namespacedUIURI; if that too is a URI some server
// has, the later server's URI is hidden (with a warning), as a duplicate
// resource is.
func buildAppURIs(servers []*server, lists [][]string) *appURIs {
	t := &appURIs{byExposed: map[string]appRef{}, renamed: map[appRef]string{}}
	native := map[string]bool{}
	for _, uris := range lists {
		for _, u := range uris {
			native[u] = true
		}
	}
	for i, s := range servers {
		for _, u := range lists[i] {
			ref := appRef{s, u}
			owner, taken := t.byExposed[u]
			if !taken {
				t.byExposed[u] = ref
				continue
			}
			if owner.server == s {
				continue
			}
			alt := namespacedUIURI(s.name, u)
			if _, used := t.byExposed[alt]; used || native[alt] {
				t.warnings = append(t.warnings, fmt.Sprintf("mcp server %q: ui:// resource %q is hidden: server %q offers it too and came first, and %q is taken",
					s.name, u, owner.server.name, alt))
				continue
			}
			t.byExposed[alt] = ref
			t.renamed[ref] = alt
		}
	}
	return t
}

// sameAs reports whether t and o expose the same URIs the same way.
func (t *appURIs) sameAs(o *appURIs) bool {
	if o == nil {
		return len(t.byExposed) == 0
	}
	return maps.Equal(t.byExposed, o.byExposed)
}

// exposed is the URI the gateway shows for a server's URI.
func (t *appURIs) exposed(s *server, uri string) string {
	if alt, ok := t.renamed[appRef{s, uri}]; ok {
		return alt
	}
	return uri
}

// hasRenamed reports whether any URI of s is exposed under another name.
func (t *appURIs) hasRenamed(s *server) bool {
	for ref := range t.renamed {
		if ref.server == s {
			return true
		}
	}
	return false
}

// rewriteItems rewrites one server's listing of a kind to the exposed
// URIs: a resource's uri, a tool's _meta references.
func (t *appURIs) rewriteItems(k *listKind, s *server, items []json.RawMessage) []json.RawMessage {
	if len(t.renamed) == 0 || (k != kindTools && k != kindResources) || !t.hasRenamed(s) {
		return items
	}
	out := make([]json.RawMessage, len(items))
	for i, def := range items {
		out[i] = def
		switch k {
		case kindResources:
			if uri, ok := wire.GetString(def, "uri"); ok {
				if alt := t.exposed(s, uri); alt != uri {
					if b, err := wire.SetString(def, "uri", alt); err == nil {
						out[i] = b
					}
				}
			}
		case kindTools:
			out[i] = t.rewriteMeta(s, def)
		}
	}
	return out
}

// restoreOriginals makes the resources of a view built from rewritten
// listings name, as their original, the URI their server knows: what
// policy and audit decide on.
func (t *appURIs) restoreOriginals(v *view) {
	for _, it := range v.items {
		if ref, ok := t.byExposed[it.original]; ok && ref.server == it.server {
			it.original = ref.original
		}
	}
}

// rewriteMeta rewrites the references to renamed URIs in obj's _meta
// (_meta.ui.resourceUri, _meta["ui/resourceUri"]); every other byte, the
// rest of _meta.ui (csp, permissions, domain, visibility) included, is
// kept. obj is returned unchanged when it names no renamed URI.
func (t *appURIs) rewriteMeta(s *server, obj json.RawMessage) json.RawMessage {
	meta := wire.Get(obj, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return obj
	}
	changed := false
	if ui := wire.Get(meta, "ui"); len(ui) > 0 && ui[0] == '{' {
		if uri, ok := wire.GetString(ui, "resourceUri"); ok {
			if alt := t.exposed(s, uri); alt != uri {
				if ui2, err := wire.SetString(ui, "resourceUri", alt); err == nil {
					if m2, err := wire.Set(meta, "ui", ui2); err == nil {
						meta, changed = m2, true
					}
				}
			}
		}
	}
	if uri, ok := wire.GetString(meta, legacyUIResourceURI); ok {
		if alt := t.exposed(s, uri); alt != uri {
			if m2, err := wire.SetString(meta, legacyUIResourceURI, alt); err == nil {
				meta, changed = m2, true
			}
		}
	}
	if !changed {
		return obj
	}
	out, err := wire.Set(obj, "_meta", meta)
	if err != nil {
		return obj
	}
	return out
}

// rewriteResult rewrites a tools/call result of server s: its _meta
// references, and the URIs of resource links and embedded resources in its
// content.
func (t *appURIs) rewriteResult(s *server, res json.RawMessage) json.RawMessage {
	if len(res) == 0 || !t.hasRenamed(s) {
		return res
	}
	res = t.rewriteMeta(s, res)
	content := wire.Get(res, "content")
	if len(content) == 0 || content[0] != '[' {
		return res
	}
	var items []json.RawMessage
	changed := false
	wire.EachItem(content, func(_ int, c json.RawMessage) bool {
		typ, _ := wire.GetString(c, "type")
		switch typ {
		case "resource_link":
			if uri, ok := wire.GetString(c, "uri"); ok {
				if alt := t.exposed(s, uri); alt != uri {
					if b, err := wire.SetString(c, "uri", alt); err == nil {
						c, changed = b, true
					}
				}
			}
		case "resource":
			r := wire.Get(c, "resource")
			if uri, ok := wire.GetString(r, "uri"); ok {
				if alt := t.exposed(s, uri); alt != uri {
					if r2, err := wire.SetString(r, "uri", alt); err == nil {
						if b, err := wire.Set(c, "resource", r2); err == nil {
							c, changed = b, true
						}
					}
				}
			}
		}
		items = append(items, c)
		return true
	})
	if !changed {
		return res
	}
	b, err := json.Marshal(items)
	if err != nil {
		return res
	}
	if out, err := wire.Set(res, "content", b); err == nil {
		return out
	}
	return res
}

// readResult rewrites a resources/read result's contents[].uri from the
// URI the server knows back to the one the client asked for.
func readResult(res json.RawMessage, original, asked string) json.RawMessage {
	contents := wire.Get(res, "contents")
	if len(contents) == 0 || contents[0] != '[' {
		return res
	}
	var items []json.RawMessage
	changed := false
	wire.EachItem(contents, func(_ int, c json.RawMessage) bool {
		if uri, ok := wire.GetString(c, "uri"); ok && uri == original {
			if b, err := wire.SetString(c, "uri", asked); err == nil {
				c, changed = b, true
			}
		}
		items = append(items, c)
		return true
	})
	if !changed {
		return res
	}
	b, err := json.Marshal(items)
	if err != nil {
		return res
	}
	if out, err := wire.Set(res, "contents", b); err == nil {
		return out
	}
	return res
}

// appTable is the router's current table of ui:// URIs (never nil).
func (r *Router) appTable() *appURIs {
	if t := r.apps.Load(); t != nil {
		return t
	}
	return &appURIs{}
}

// refreshApps builds the table of ui:// URIs from every server's last
// listing (under rebuildMu) and reports whether it changed, in which case
// the tools and resources views must be built again.
func (r *Router) refreshApps() (*appURIs, bool) {
	servers := r.all()
	lists := make([][]string, len(servers))
	for i, s := range servers {
		s.mu.Lock()
		lists[i] = uiURIsOf(s.items[kindTools.index], s.items[kindResources.index])
		s.mu.Unlock()
	}
	t := buildAppURIs(servers, lists)
	old := r.apps.Swap(t)
	changed := !t.sameAs(old)
	if changed {
		for _, w := range t.warnings {
			r.log.Warn(w)
		}
	}
	return t, changed
}

// appMeta returns the URI a request's _meta[MetaApp] names and the params
// without that member (the server is not told), or ok=false when it has none.
func appMeta(params json.RawMessage) (uri string, stripped json.RawMessage, ok bool, werr *wire.Error) {
	meta := wire.Get(params, "_meta")
	raw := wire.Get(meta, MetaApp)
	if raw == nil {
		return "", params, false, nil
	}
	uri, isString := wire.GetString(meta, MetaApp)
	if !isString {
		return "", nil, false, wire.Errorf(wire.CodeInvalidParams, "params._meta[%q] must be the ui:// URI of the app's resource, as listed by the gateway", MetaApp)
	}
	meta, _ = wire.Delete(meta, MetaApp)
	var err error
	if string(meta) == "{}" {
		stripped, _ = wire.Delete(params, "_meta")
	} else if stripped, err = wire.Set(params, "_meta", meta); err != nil {
		return "", nil, false, wire.Errorf(wire.CodeInvalidParams, "params._meta: %v", err)
	}
	return uri, stripped, true, nil
}

// appServer resolves the app a request names in _meta[MetaApp] to its server.
func (r *Router) appServer(method, uri string) (*server, *wire.Error) {
	ref, ok := r.appTable().byExposed[uri]
	if !ok {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%s: params._meta[%q] is %q, which is not the URI of an app this gateway lists: give the ui:// URI the host loaded the app from, as in the tool's _meta.ui.resourceUri or resources/list",
			method, MetaApp, uri)
	}
	return ref.server, nil
}

// toolOf finds the exposed tool of server s known there as name (or,
// failing that, exposed as name by s).
func (r *Router) toolOf(s *server, name string) *item {
	v := r.view(kindTools)
	if it := v.byKey[name]; it != nil && it.server == s && it.original == name {
		return it
	}
	for _, it := range v.items {
		if it.server == s && it.original == name {
			return it
		}
	}
	if it := v.byKey[name]; it != nil && it.server == s {
		return it
	}
	return nil
}

// isAppCall reports whether a request is one an app makes (_meta[MetaApp]).
func isAppCall(params json.RawMessage) bool {
	return wire.Get(wire.Get(params, "_meta"), MetaApp) != nil
}

// appResult rewrites the references to renamed ui:// URIs in the result of
// a tools/call routed by its exposed name.
func (r *Router) appResult(params json.RawMessage, reply Reply) Reply {
	if reply.Result == nil {
		return reply
	}
	name, _ := wire.GetString(params, "name")
	if it := r.view(kindTools).byKey[name]; it != nil {
		reply.Result = r.appTable().rewriteResult(it.server, reply.Result)
	}
	return reply
}

// appCall answers a tools/call an app makes (_meta[MetaApp]): it names the
// tool by its name on the app's server and goes to that server, decided by
// the guard as any call of that tool is. A result's references to renamed
// ui:// URIs are rewritten.
func (s *Session) appCall(ctx context.Context, m *wire.Message, stream Stream) Reply {
	r := s.gw.Router
	app, params, _, werr := appMeta(m.Params)
	if werr != nil {
		return errorReply(werr)
	}
	srv, werr := r.appServer(m.Method, app)
	if werr != nil {
		return errorReply(werr)
	}
	name, ok := wire.GetString(params, "name")
	if !ok {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s needs params.name", m.Method))
	}
	it := r.toolOf(srv, name)
	if it == nil {
		return errorReply(wire.Errorf(wire.CodeInvalidParams, "Unknown tool: %s: mcp server %q, whose app %q made the call, offers no tool of that name", name, srv.name, app))
	}
	if it.original != name {
		var err error
		if params, err = wire.SetString(params, "name", it.original); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
		}
	}
	reply := s.guarded(ctx, m, stream, guardItem(kindTools, it), route{srv: srv, params: params})
	if reply.Result != nil {
		reply.Result = r.appTable().rewriteResult(srv, reply.Result)
	}
	return reply
}

// readResource answers resources/read: a renamed ui:// URI is read from
// its server under the URI the server knows, and the contents are named
// by the URI the client asked for. A read an app makes (_meta[MetaApp])
// of one of its server's URIs by the server's own name goes to that server.
func (s *Session) readResource(ctx context.Context, m *wire.Message, stream Stream) Reply {
	r := s.gw.Router
	app, params, isApp, werr := appMeta(m.Params)
	if werr != nil {
		return errorReply(werr)
	}
	uri, _ := wire.GetString(params, "uri")
	tab := r.appTable()
	var srv *server
	original := uri
	if isApp {
		if srv, werr = r.appServer(m.Method, app); werr != nil {
			return errorReply(werr)
		}
		if ref, ok := tab.byExposed[uri]; ok && ref.server == srv {
			original = ref.original
		}
	} else if ref, ok := tab.byExposed[uri]; ok {
		srv, original = ref.server, ref.original
	} else if srv = r.resourceServer(uri); srv == nil {
		return errorReply(s.resourceNotFound(uri))
	}
	if original != uri {
		var err error
		if params, err = wire.SetString(params, "uri", original); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "%s params: %v", m.Method, err))
		}
	}
	reply := s.guarded(ctx, m, stream, r.resourceItem(srv, original), route{srv: srv, params: params})
	if original != uri && reply.Result != nil {
		reply.Result = readResult(reply.Result, original, uri)
	}
	return reply
}

// appendMissing adds to ks the kinds it lacks.
func appendMissing(ks []*listKind, add ...*listKind) []*listKind {
	out := slices.Clone(ks)
	for _, k := range add {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// CallParamHeaders returns the argument headers (Mcp-Param-*) of the tool a
// tools/call's params name: for a call an app makes (_meta[MetaApp]), the
// tool of the app's own server, which the call reaches.
func (g *Gateway) CallParamHeaders(params json.RawMessage) []ParamHeader {
	name, _ := wire.GetString(params, "name")
	if !isAppCall(params) {
		return g.ParamHeaders(name)
	}
	app, _, _, werr := appMeta(params)
	if werr != nil {
		return nil // refused when it is handled
	}
	srv, werr := g.Router.appServer("tools/call", app)
	if werr != nil {
		return nil
	}
	if it := g.Router.toolOf(srv, name); it != nil {
		return it.paramHeaders()
	}
	return nil
}
