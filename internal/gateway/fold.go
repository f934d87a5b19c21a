package gateway

import (
	"encoding/json"
	"strconv"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// A tool's arguments are the tool's own data: wire.Parse lets them hold
// any names. But the guard decides on them (a policy's context.args), and
// a server that decodes them into a struct with Go's encoding/json (every
// mcp-go server with a typed handler) reads {"PATH":"/etc/passwd"} as its
// field Path, which a policy on context.args.path never sees. The gateway
// knows which names the tool declares (its inputSchema's properties):
// a member that is not spelled as one of them but equals one regardless
// of case is refused, before the guard decides and whatever it would.

// maxFoldDepth is how deep foldedArgument follows the properties a schema
// declares for nested objects.
const maxFoldDepth = 32

// foldedArgument refuses a tools/call whose arguments hold a member that
// differs only by case (as encoding/json folds it) from a property the
// tool's inputSchema declares, at any depth the schema declares
// properties for (properties of objects, items of arrays). A tool that
// declares no properties cannot be protected this way (docs/policy.md).
func foldedArgument(m *wire.Message, gi GuardItem) *wire.Error {
	if m.Method != "tools/call" || gi.Kind != GuardTool && gi.Kind != GuardBuiltin {
		return nil
	}
	args := wire.Get(m.Params, "arguments")
	if len(args) == 0 || args[0] != '{' {
		return nil
	}
	path, want := foldedIn(args, wire.Get(gi.Def, "inputSchema"), "params.arguments", 0)
	if path == "" {
		return nil
	}
	return wire.Errorf(wire.CodeInvalidRequest,
		"member %s is %q but for case, which some servers ignore and the gateway's policy does not; tool %q declares %q: spell it %q",
		path, want, gi.Name, want, want)
}

// foldedIn finds, in value at path, the first member misspelled against
// schema's properties, and returns its path and the declared name, or "".
func foldedIn(value, schema json.RawMessage, path string, depth int) (string, string) {
	if depth > maxFoldDepth || len(value) == 0 || len(schema) == 0 {
		return "", ""
	}
	var found, want string
	switch value[0] {
	case '{':
		props := wire.Get(schema, "properties")
		if len(props) == 0 || props[0] != '{' {
			return "", ""
		}
		if name, w, ok := wire.FoldedMember(value, props); ok {
			return wire.JoinPath(path, name), w
		}
		wire.EachMember(value, func(name []byte, v json.RawMessage) bool {
			if len(v) == 0 || v[0] != '{' && v[0] != '[' {
				return true
			}
			if sub := wire.Get(props, string(name)); sub != nil {
				found, want = foldedIn(v, sub, wire.JoinPath(path, string(name)), depth+1)
			}
			return found == ""
		})
	case '[':
		items := wire.Get(schema, "items")
		if len(items) == 0 || items[0] != '{' {
			return "", ""
		}
		wire.EachItem(value, func(i int, v json.RawMessage) bool {
			if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
				found, want = foldedIn(v, items, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
			return found == ""
		})
	}
	return found, want
}
