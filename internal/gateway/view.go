package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// relistTimeout bounds a background re-listing of one server.
const relistTimeout = 30 * time.Second

// listKind describes one kind of list the router merges.
type listKind struct {
	index      int
	method     string // "tools/list"
	field      string // "tools": the result's array member
	key        string // the member that identifies an item: "name", "uri", "uriTemplate"
	rename     bool   // exposed names follow the naming rule (tools, prompts); else duplicates are hidden
	capability string // the server capability that offers it
	changed    string // the notification announcing a change
}

var (
	kindTools     = &listKind{0, "tools/list", "tools", "name", true, "tools", "notifications/tools/list_changed"}
	kindPrompts   = &listKind{1, "prompts/list", "prompts", "name", true, "prompts", "notifications/prompts/list_changed"}
	kindResources = &listKind{2, "resources/list", "resources", "uri", false, "resources", "notifications/resources/list_changed"}
	kindTemplates = &listKind{3, "resources/templates/list", "resourceTemplates", "uriTemplate", false, "resources", "notifications/resources/list_changed"}
	kinds         = []*listKind{kindTools, kindPrompts, kindResources, kindTemplates}
)

// kindByMethod maps a list method to its kind.
func kindByMethod(method string) *listKind {
	for _, k := range kinds {
		if k.method == method {
			return k
		}
	}
	return nil
}

// item is one exposed entry of a merged list.
type item struct {
	server   *server
	original string          // its key on its server
	def      json.RawMessage // the definition as exposed (renamed when needed)
	match    *uriTemplate    // for resource templates
	canon    string          // for resources and templates: normalizeURI(original)
	params   paramHeaderCache
}

// serverItems is one server's listing, input to buildView.
type serverItems struct {
	server *server
	items  []json.RawMessage
}

// view is an immutable merged list with its pages already encoded, so a
// list request is answered by copying bytes.
type view struct {
	kind     *listKind
	items    []*item
	byKey    map[string]*item
	pages    []json.RawMessage
	pageSize int
	warnings []string
}

// buildView merges the servers' listings (servers in sorted order). Named
// kinds follow the naming rule; for resources and templates the first server
// in sorted order offering a URI keeps it and later duplicates are hidden.
//
// claims (named kinds only; nil otherwise) are the names exposed so far:
// an item keeps the name it was given before, and no other item takes a
// name claimed by another, so a server added later never moves a name; the
// names given now are added to claims. With no claims yet this is the
// naming rule over the servers in sorted order.
func buildView(lists []serverItems, kind *listKind, opts RouterOptions, claims nameClaims) *view {
	v := &view{kind: kind, byKey: map[string]*item{}, pageSize: opts.PageSize}
	keys := make([][]string, len(lists))
	exposed := make([][]string, len(lists)) // "" until named
	for i, l := range lists {
		keys[i] = make([]string, len(l.items))
		exposed[i] = make([]string, len(l.items))
		for j, def := range l.items {
			key, ok := wire.GetString(def, kind.key)
			if !ok || key == "" {
				v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: a %s entry without %q is skipped", l.server.name, kind.method, kind.key))
				continue
			}
			keys[i][j] = key
		}
	}
	taken := map[string]*server{} // exposed name → its server
	// First the items named before keep their names...
	if claims != nil {
		held := claims.byOwner()
		for i, l := range lists {
			for j, key := range keys[i] {
				if name, ok := held[claim{l.server, key}]; ok && key != "" && taken[name] == nil {
					exposed[i][j], taken[name] = name, l.server
				}
			}
		}
	}
	// ...then the others, in sorted order, take the first name neither
	// taken now nor claimed by another item.
	for i, l := range lists {
		for j, key := range keys[i] {
			if key == "" || exposed[i][j] != "" {
				continue
			}
			candidates := []string{key}
			if kind.rename && l.server.builtin == nil {
				candidates = opts.Prefix.candidates(l.server.name, key)
			}
			for _, c := range candidates {
				if owner, claimed := claims[c]; taken[c] == nil && (!claimed || owner == claim{l.server, key}) {
					exposed[i][j], taken[c] = c, l.server
					break
				}
			}
			if exposed[i][j] == "" {
				owner := taken[candidates[0]]
				if owner == nil {
					owner = claims[candidates[0]].server
				}
				v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: %s %q is hidden: server %q offers it too and came first",
					l.server.name, kind.key, key, owner.name))
				continue
			}
			if claims != nil {
				claims[exposed[i][j]] = claim{l.server, key}
			}
		}
	}
	for i, l := range lists {
		for j, def := range l.items {
			name := exposed[i][j]
			if name == "" {
				continue
			}
			key := keys[i][j]
			it := &item{server: l.server, original: key, def: def}
			if name != key {
				renamed, err := wire.SetString(def, kind.key, name)
				if err != nil {
					v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: %q is skipped: %v", l.server.name, key, err))
					continue
				}
				it.def = renamed
			}
			switch kind {
			case kindTemplates:
				it.match, it.canon = parseURITemplate(key), normalizeURI(key)
			case kindResources:
				it.canon = normalizeURI(key)
			}
			v.byKey[name] = it
			v.items = append(v.items, it)
		}
	}
	v.pages = encodePages(v.items, kind.field, opts.PageSize)
	return v
}

func encodePages(items []*item, field string, size int) []json.RawMessage {
	var pages []json.RawMessage
	for start := 0; start == 0 || start < len(items); start += size {
		end := min(start+size, len(items))
		b := []byte(`{"`)
		b = append(b, field...)
		b = append(b, `":[`...)
		for i, it := range items[start:end] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, it.def...)
		}
		b = append(b, ']')
		if end < len(items) {
			b = append(b, `,"nextCursor":`...)
			b = wire.AppendString(b, encodeCursor(end))
		}
		b = append(b, '}')
		pages = append(pages, b)
	}
	return pages
}

// page answers a list request whose params may carry a cursor.
func (v *view) page(params json.RawMessage) (json.RawMessage, *wire.Error) {
	cursor, _ := wire.GetString(params, "cursor")
	if cursor == "" {
		return v.pages[0], nil
	}
	offset, ok := decodeCursor(cursor)
	if !ok || offset%v.pageSize != 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid cursor %q: list again without a cursor", cursor)
	}
	// A cursor from before a list change may point past the end: that is an
	// empty last page, not an error.
	if i := offset / v.pageSize; i < len(v.pages) {
		return v.pages[i], nil
	}
	return json.RawMessage(`{"` + v.kind.field + `":[]}`), nil
}

// sameAs reports whether v exposes exactly what o exposes.
func (v *view) sameAs(o *view) bool {
	if len(v.items) != len(o.items) {
		return false
	}
	for i, it := range v.items {
		if !bytes.Equal(it.def, o.items[i].def) {
			return false
		}
	}
	return true
}
