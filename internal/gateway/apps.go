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
	// The same for ui:// resource templates (uriTemplate strings), built
	// by addTemplates: a renamed template exposes every URI it matches as
	// ui://<server>.<rest>.
	tmplByExposed map[string]appRef
	tmplRenamed   map[appRef]string
	warnings      []string
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
	t := &appURIs{}
	t.byExposed, t.renamed, t.warnings = nameUIURIs(servers, lists, "ui:// resource", nil)
	return t
}

// nameUIURIs decides the exposed names of the servers' ui:// URIs or
// templates (what, in warnings): servers in order, the first one with a
// name keeps it, a later one gets namespacedUIURI, hidden with a warning
// when that too is taken.
func nameUIURIs(servers []*server, lists [][]string, what string, warnings []string) (byExposed map[string]appRef, renamed map[appRef]string, _ []string) {
	byExposed, renamed = map[string]appRef{}, map[appRef]string{}
	native := map[string]bool{}
	for _, uris := range lists {
		for _, u := range uris {
			native[u] = true
		}
	}
	for i, s := range servers {
		for _, u := range lists[i] {
			ref := appRef{s, u}
			owner, taken := byExposed[u]
			if !taken {
				byExposed[u] = ref
				continue
			}
			if owner.server == s {
				continue
			}
			alt := namespacedUIURI(s.name, u)
			if _, used := byExposed[alt]; used || native[alt] {
				warnings = append(warnings, fmt.Sprintf("mcp server %q: %s %q is hidden: server %q offers it too and came first, and %q is taken",
					s.name, what, u, owner.server.name, alt))
				continue
			}
			byExposed[alt] = ref
			renamed[ref] = alt
		}
	}
	return byExposed, renamed, warnings
}

// uiTemplatesOf lists a server's ui:// resource templates.
func uiTemplatesOf(templates []json.RawMessage) []string {
	var out []string
	for _, d := range templates {
		if tmpl, _ := wire.GetString(d, "uriTemplate"); isUIURI(tmpl) && !slices.Contains(out, tmpl) {
			out = append(out, tmpl)
		}
	}
	return out
}

// addTemplates decides the exposed ui:// resource templates as
// buildAppURIs does URIs: the first server with a template keeps it, a
// later one's is namespaced (ui://<server>.<rest>), hidden with a warning
// when that too is taken.
func (t *appURIs) addTemplates(servers []*server, lists [][]string) {
	t.tmplByExposed, t.tmplRenamed, t.warnings = nameUIURIs(servers, lists, "ui:// resource template", t.warnings)
}

// sameAs reports whether t and o expose the same URIs the same way.
func (t *appURIs) sameAs(o *appURIs) bool {
	if o == nil {
		return len(t.byExposed) == 0 && len(t.tmplByExposed) == 0
	}
	return maps.Equal(t.byExposed, o.byExposed) && maps.Equal(t.tmplByExposed, o.tmplByExposed)
}

// exposedURI is the URI the gateway shows for a URI of server s: a
// renamed URI's new name, or, for a URI one of its renamed templates
// matches, the same URI namespaced (ui://<server>.<rest>). A resources/updated
// notification and a result's links are rewritten with it.
func (t *appURIs) exposedURI(s *server, uri string) string {
	if alt := t.exposed(s, uri); alt != uri || !isUIURI(uri) {
		return alt
	}
	if owner, ok := t.byExposed[uri]; ok && owner.server == s {
		return uri // listed under its own name
	}
	for ref := range t.tmplRenamed {
		if ref.server == s && parseURITemplate(ref.original).matches(uri) {
			return namespacedUIURI(s.name, uri)
		}
	}
	return uri
}

// target resolves a URI a client names (to read, subscribe to, complete)
// to the server and the URI that server knows: a renamed ui:// URI, or a
// URI a renamed ui:// template matches (ui://<server>.<rest> of a URI the
// server's template matches). ok is false for any other URI.
func (t *appURIs) target(uri string) (srv *server, original string, ok bool) {
	if ref, found := t.byExposed[uri]; found {
		return ref.server, ref.original, true
	}
	if !isUIURI(uri) {
		return nil, "", false
	}
	for ref := range t.tmplRenamed {
		p := "ui://" + serverPrefix(ref.server.name) + "."
		if len(uri) > len(p) && strings.EqualFold(uri[:len(p)], p) {
			orig := "ui://" + uri[len(p):]
			if parseURITemplate(ref.original).matches(orig) {
				return ref.server, orig, true
			}
		}
	}
	return nil, "", false
}

// resourceTarget is the server of a URI and the URI it knows there: a
// renamed ui:// URI (or a URI of a renamed ui:// template) as target says,
// any other as resourceServer finds it. srv is nil when no server has it.
func (r *Router) resourceTarget(uri string) (srv *server, original string) {
	if srv, original, ok := r.appTable().target(uri); ok {
		return srv, original
	}
	return r.resourceServer(uri), uri
}

// exposed is the URI the gateway shows for a server's URI.
func (t *appURIs) exposed(s *server, uri string) string {
	if alt, ok := t.renamed[appRef{s, uri}]; ok {
		return alt
	}
	return uri
}

// hasRenamed reports whether any URI or template of s is exposed under another name.
func (t *appURIs) hasRenamed(s *server) bool {
	for ref := range t.renamed {
		if ref.server == s {
			return true
		}
	}
	for ref := range t.tmplRenamed {
		if ref.server == s {
			return true
		}
	}
	return false
}

// rewriteItems rewrites one server's listing of a kind to the exposed
// URIs: a resource's uri, a tool's _meta references.
func (t *appURIs) rewriteItems(k *listKind, s *server, items []json.RawMessage) []json.RawMessage {
	if (len(t.renamed) == 0 && len(t.tmplRenamed) == 0) || (k != kindTools && k != kindResources && k != kindTemplates) || !t.hasRenamed(s) {
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
		case kindTemplates:
			if tmpl, ok := wire.GetString(def, "uriTemplate"); ok {
				if alt, renamed := t.tmplRenamed[appRef{s, tmpl}]; renamed {
					if b, err := wire.SetString(def, "uriTemplate", alt); err == nil {
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
	table := t.byExposed
	if v.kind == kindTemplates {
		table = t.tmplByExposed
	}
	for _, it := range v.items {
		if ref, ok := table[it.original]; ok && ref.server == it.server {
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
	return rewriteItems(res, "content", func(c json.RawMessage) (json.RawMessage, bool) {
		typ, _ := wire.GetString(c, "type")
		switch typ {
		case "resource_link":
			if uri, ok := wire.GetString(c, "uri"); ok {
				if alt := t.exposedURI(s, uri); alt != uri {
					if b, err := wire.SetString(c, "uri", alt); err == nil {
						return b, true
					}
				}
			}
		case "resource":
			r := wire.Get(c, "resource")
			if uri, ok := wire.GetString(r, "uri"); ok {
				if alt := t.exposedURI(s, uri); alt != uri {
					if r2, err := wire.SetString(r, "uri", alt); err == nil {
						if b, err := wire.Set(c, "resource", r2); err == nil {
							return b, true
						}
					}
				}
			}
		}
		return c, false
	})
}

// rewriteItems rewrites each item of obj's array member with f (which
// reports whether it changed the item), and returns obj unchanged when
// nothing changed or the member is not an array.
func rewriteItems(obj json.RawMessage, member string, f func(json.RawMessage) (json.RawMessage, bool)) json.RawMessage {
	arr := wire.Get(obj, member)
	if len(arr) == 0 || arr[0] != '[' {
		return obj
	}
	var items []json.RawMessage
	changed := false
	wire.EachItem(arr, func(_ int, c json.RawMessage) bool {
		c, ch := f(c)
		changed = changed || ch
		items = append(items, c)
		return true
	})
	if !changed {
		return obj
	}
	b, err := json.Marshal(items)
	if err != nil {
		return obj
	}
	if out, err := wire.Set(obj, member, b); err == nil {
		return out
	}
	return obj
}

// readResult rewrites a resources/read result's contents[].uri from the
// URI the server knows back to the one the client asked for.
func readResult(res json.RawMessage, original, asked string) json.RawMessage {
	return rewriteItems(res, "contents", func(c json.RawMessage) (json.RawMessage, bool) {
		if uri, ok := wire.GetString(c, "uri"); ok && uri == original {
			if b, err := wire.SetString(c, "uri", asked); err == nil {
				return b, true
			}
		}
		return c, false
	})
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
	lists, tmpls := make([][]string, len(servers)), make([][]string, len(servers))
	for i, s := range servers {
		s.mu.Lock()
		lists[i] = uiURIsOf(s.items[kindTools.index], s.items[kindResources.index])
		tmpls[i] = uiTemplatesOf(s.items[kindTemplates.index])
		s.mu.Unlock()
	}
	t := buildAppURIs(servers, lists)
	t.addTemplates(servers, tmpls)
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
// ui:// URIs are rewritten. A call without the member that unexposedTool
// reports goes to the one server with the tool, or is refused.
func (s *Session) appCall(ctx context.Context, m *wire.Message, stream Stream) Reply {
	r := s.gw.Router
	app, params, isApp, werr := appMeta(m.Params)
	if werr != nil {
		return errorReply(werr)
	}
	if !isApp { // unexposedTool: a name only servers' own tools have
		name, _ := wire.GetString(params, "name")
		it, werr := r.toolByOriginal(name)
		if werr != nil {
			return errorReply(werr)
		}
		if it == nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "Unknown tool: %s", name))
		}
		reply := s.guarded(ctx, m, stream, guardItem(kindTools, it), route{srv: it.server, params: params})
		if reply.Result != nil {
			reply.Result = r.appTable().rewriteResult(it.server, reply.Result)
		}
		return reply
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
		if ts, orig, ok := tab.target(uri); ok && ts == srv {
			original = orig
		}
	} else if srv, original = r.resourceTarget(uri); srv == nil {
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
		if g.Router.view(kindTools).byKey[name] == nil { // see unexposedTool
			if it, _ := g.Router.toolByOriginal(name); it != nil {
				return it.paramHeaders()
			}
		}
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

// completeRefURI is a completion/complete's params with ref.uri the URI
// (or template) its server knows.
func completeRefURI(params, ref json.RawMessage, asked, original string) (json.RawMessage, *wire.Error) {
	if original == asked {
		return params, nil
	}
	newRef, err := wire.SetString(ref, "uri", original)
	if err == nil {
		params, err = wire.Set(params, "ref", newRef)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "completion/complete params: %v", err)
	}
	return params, nil
}

// unexposedTool reports whether a tools/call names a tool by a name the
// gateway does not expose but some server's tool has as its own: an app's
// call forwarded without _meta[MetaApp] (through a gateway that prefixes
// that tool). appCall routes it when exactly one server has the tool, and
// refuses it, naming them, when several do: the gateway never guesses.
func (r *Router) unexposedTool(params json.RawMessage) bool {
	name, _ := wire.GetString(params, "name")
	v := r.view(kindTools)
	if v.byKey[name] != nil {
		return false
	}
	for _, it := range v.items {
		if it.server.builtin == nil && it.original == name {
			return true
		}
	}
	return false
}

// toolByOriginal finds the one server's tool known there as name; nil when
// none is, an error when several servers have one (the exposed names are
// given, and the member an app's call should carry).
func (r *Router) toolByOriginal(name string) (*item, *wire.Error) {
	var found []*item
	for _, it := range r.view(kindTools).items {
		if it.server.builtin == nil && it.original == name {
			found = append(found, it)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	var who []string
	for _, it := range found {
		n, _ := wire.GetString(it.def, "name")
		who = append(who, fmt.Sprintf("%q as %q", it.server.name, n))
	}
	return nil, wire.Errorf(wire.CodeInvalidParams, "Unknown tool: %s: several mcp servers offer a tool of that name (%s), so the gateway cannot tell which is meant: call it by its exposed name, or, for a call an MCP App makes, add params._meta[%q] with the app's ui:// URI",
		name, strings.Join(who, ", "), MetaApp)
}

// callResult rewrites the references to renamed ui:// URIs in the result
// of a tools/call server s answered; any other reply passes unchanged. A
// 2026-07-28 call resumed after waiting for its client's input
// (input.go) gets its final result through it.
func (r *Router) callResult(method string, s *server, reply Reply) Reply {
	if method == "tools/call" && reply.Result != nil && s != nil {
		reply.Result = r.appTable().rewriteResult(s, reply.Result)
	}
	return reply
}
