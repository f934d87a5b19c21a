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

// listKind describes one kind of named list the router merges.
type listKind struct {
	method string // "tools/list"
	field  string // "tools": the result's array member

	changedNotification string // "notifications/tools/list_changed"
}

var toolsKind = listKind{method: "tools/list", field: "tools", changedNotification: "notifications/tools/list_changed"}

// item is one exposed entry of a merged list.
type item struct {
	server   *server
	original string          // the name on its server
	def      json.RawMessage // the definition as exposed (renamed when needed)
}

// serverItems is one server's listing, input to buildView.
type serverItems struct {
	server *server
	items  []json.RawMessage
}

// view is an immutable merged list with its pages already encoded, so a
// list request is answered by copying bytes.
type view struct {
	kind     listKind
	items    []*item
	byName   map[string]*item
	pages    []json.RawMessage
	pageSize int
	warnings []string
}

// buildView merges the servers' listings (servers in sorted order) under the
// naming rule and encodes the pages.
func buildView(lists []serverItems, kind listKind, opts RouterOptions) *view {
	v := &view{kind: kind, byName: map[string]*item{}, pageSize: opts.PageSize}
	for _, l := range lists {
		for _, def := range l.items {
			name, ok := wire.GetString(def, "name")
			if !ok || name == "" {
				v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: a %s entry without a name is skipped", l.server.name, kind.method))
				continue
			}
			exposed := ""
			for _, c := range opts.Prefix.candidates(l.server.name, name) {
				if _, taken := v.byName[c]; !taken {
					exposed = c
					break
				}
			}
			if exposed == "" {
				v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: %q is skipped: its name is already taken by another server", l.server.name, name))
				continue
			}
			it := &item{server: l.server, original: name, def: def}
			if exposed != name {
				renamed, err := wire.SetString(def, "name", exposed)
				if err != nil {
					v.warnings = append(v.warnings, fmt.Sprintf("mcp server %q: %q is skipped: %v", l.server.name, name, err))
					continue
				}
				it.def = renamed
			}
			v.byName[exposed] = it
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
	return v.emptyPage(), nil
}

func (v *view) emptyPage() json.RawMessage {
	return json.RawMessage(`{"` + v.kind.field + `":[]}`)
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
