package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Member locates the value of a top-level member of a JSON object: it returns
// the byte offsets [start,end) of the value in obj, or ok=false when the object
// has no such member. It decodes nothing and allocates nothing.
func Member(obj []byte, key string) (start, end int, ok bool, err error) {
	return scanMember(obj, key)
}

// GetString returns the string value of a top-level member of obj.
func GetString(obj []byte, key string) (string, bool) {
	start, end, ok, err := Member(obj, key)
	if err != nil || !ok {
		return "", false
	}
	return unquote(obj[start:end])
}

// unquote decodes a JSON string, without allocating when it has no escapes.
func unquote(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	raw := b[1 : len(b)-1]
	for _, c := range raw {
		if c == '\\' || c < 0x20 {
			var s string
			if json.Unmarshal(b, &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(raw), true
}

// SetString returns a copy of obj with the top-level member key set to the
// string value. Every other byte of obj is kept as it was, so unknown fields and
// their order survive.
func SetString(obj []byte, key, value string) ([]byte, error) {
	start, end, ok, err := Member(obj, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("object has no %q member", key)
	}
	out := make([]byte, 0, len(obj)+len(value)+2)
	out = append(out, obj[:start]...)
	out = AppendString(out, value)
	return append(out, obj[end:]...), nil
}

// Get returns the raw value of a top-level member of obj, or nil.
func Get(obj []byte, key string) json.RawMessage {
	start, end, ok, err := Member(obj, key)
	if err != nil || !ok {
		return nil
	}
	return json.RawMessage(obj[start:end])
}

// Set returns a copy of obj with the top-level member key set to the raw
// value, added at the end when obj has no such member. Every other byte of
// obj is kept. A nil or empty obj is treated as {}.
func Set(obj []byte, key string, value json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(obj)) == 0 || string(bytes.TrimSpace(obj)) == "null" {
		obj = []byte("{}")
	}
	start, end, ok, err := Member(obj, key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	if ok {
		out = append(out, obj[:start]...)
		out = append(out, value...)
		return append(out, obj[end:]...), nil
	}
	closing := bytes.LastIndexByte(obj, '}')
	out = append(out, obj[:closing]...)
	if bytes.ContainsAny(bytes.TrimSpace(obj[1:closing]), "\"") {
		out = append(out, ',')
	}
	out = AppendString(out, key)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[closing:]...), nil
}

// Delete returns obj without its top-level members named one of keys, and
// whether it removed any. The members kept are copied as they are, in their
// order; only the white space between members is not kept. obj itself is
// returned when nothing is removed or it is not an object.
func Delete(obj []byte, keys ...string) ([]byte, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return obj, false
	}
	type span struct{ start, end int }
	var buf [16]span
	kept, dropped := buf[:0], false
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		start := i
		kend, err := skipString(obj, i)
		if err != nil {
			return obj, false
		}
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return obj, false
		}
		vend, err := skipValue(obj, skipSpace(obj, i+1))
		if err != nil {
			return obj, false
		}
		if slices.ContainsFunc(keys, func(k string) bool { return keyEquals(obj, start, kend, k) }) {
			dropped = true
		} else {
			kept = append(kept, span{start, vend})
		}
		if i = skipSpace(obj, vend); i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if !dropped {
		return obj, false
	}
	out := append(make([]byte, 0, len(obj)), '{')
	for n, m := range kept {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, obj[m.start:m.end]...)
	}
	return append(out, '}'), true
}

// EachMember calls f with each top-level member of the object obj, in
// order, until f returns false: its name, decoded (a name without escapes
// is a slice of obj, not a copy: f must not keep it past its call), and
// its raw value. A malformed object ends the iteration early.
func EachMember(obj []byte, f func(name []byte, value json.RawMessage) bool) {
	for it := (members{obj: obj}); it.next(); {
		name := it.key
		if bytes.IndexByte(name, '\\') >= 0 {
			s, ok := unquote(it.quoted)
			if !ok {
				return
			}
			name = []byte(s)
		}
		if !f(name, it.value) {
			return
		}
	}
}

// EachItem calls f with each item of the array arr, in order, until f
// returns false. Anything but a valid array ends it early.
func EachItem(arr []byte, f func(i int, value json.RawMessage) bool) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	for n, i := 0, skipSpace(arr, i+1); i < len(arr) && arr[i] != ']'; n++ {
		end, err := skipValue(arr, i)
		if err != nil || !f(n, arr[i:end]) {
			return
		}
		if i = skipSpace(arr, end); i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
}

// FoldedMember returns the first top-level member name of obj that is not
// the name of a member of declared but equal to one regardless of case, as
// Go's encoding/json (so mcp-go's servers) matches names to struct fields:
// ASCII letters in any case, and the runes that fold to them (ſ to s, the
// Kelvin sign to k); want is that declared name. Names that are ASCII and
// unescaped on both sides are compared without allocating.
func FoldedMember(obj, declared []byte) (name, want string, ok bool) {
	EachMember(obj, func(n []byte, _ json.RawMessage) bool {
		exact, folded := false, ""
		EachMember(declared, func(d []byte, _ json.RawMessage) bool {
			switch {
			case string(n) == string(d):
				exact = true
				return false
			case folded == "" && equalFold(n, d):
				folded = string(d)
			}
			return true
		})
		if !exact && folded != "" {
			name, want, ok = string(n), folded, true
			return false
		}
		return true
	})
	return name, want, ok
}

// equalFold reports whether two decoded names are equal regardless of
// case as encoding/json matches them (foldName).
func equalFold(a, b []byte) bool {
	if len(a) == len(b) && isASCII(a) && isASCII(b) {
		return asciiEqualFold(a, b)
	}
	if isASCII(a) && isASCII(b) {
		return false
	}
	return foldName(string(a)) == foldName(string(b))
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// JoinPath appends a member's name to a path such as "params.arguments",
// as Parse's errors name members: after a dot when it reads as an
// identifier, else quoted in brackets.
func JoinPath(path, name string) string {
	return string(appendName([]byte(path), name))
}
