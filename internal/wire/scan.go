package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A minimal JSON scanner for the hot path: it finds the top-level members of
// an object without decoding or allocating. It assumes well-formed JSON in
// the values it skips (the message was either validated by Parse or is
// forwarded unchanged, so a malformed value fails at its consumer).

var (
	errSyntax    = errors.New("malformed JSON")
	errNotObject = errors.New("not a JSON object")
)

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
// It looks for quotes with bytes.IndexByte; a quote preceded by an odd
// number of backslashes is escaped.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		i += q
		escapes := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			return i + 1, nil
		}
		i++
	}
	return 0, errSyntax
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errSyntax
	default: // number, true, false, null
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == start {
					return 0, errSyntax
				}
				return i, nil
			}
			i++
		}
		if i == start {
			return 0, errSyntax
		}
		return i, nil
	}
}

// keyEquals reports whether the JSON string b[start:end] (quotes included)
// is key; escaped keys are compared decoded, the slow way.
func keyEquals(b []byte, start, end int, key string) bool {
	raw := b[start+1 : end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == key
	}
	s, ok := unquote(b[start:end])
	return ok && s == key
}

// scanMember locates a top-level member of the object in obj.
func scanMember(obj []byte, key string) (start, end int, ok bool, err error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false, errNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return 0, 0, false, nil
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return 0, 0, false, errSyntax
		}
		kend, err := skipString(obj, i)
		if err != nil {
			return 0, 0, false, err
		}
		match := keyEquals(obj, i, kend, key)
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return 0, 0, false, errSyntax
		}
		i = skipSpace(obj, i+1)
		vend, err := skipValue(obj, i)
		if err != nil {
			return 0, 0, false, err
		}
		if match {
			return i, vend, true, nil
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) {
			break
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return 0, 0, false, nil
		default:
			return 0, 0, false, errSyntax
		}
	}
	return 0, 0, false, errSyntax
}

// members iterates over the top-level members of a valid JSON object:
//
//	for it := (members{obj: b}); it.next(); { ... it.key, it.value ... }
//
// key is the member's name as written, without its quotes. A malformed
// object ends the iteration early.
type members struct {
	obj        []byte
	i          int
	started    bool
	key, value []byte
}

func (it *members) next() bool {
	b := it.obj
	i := it.i
	if !it.started {
		it.started = true
		i = skipSpace(b, 0)
		if i >= len(b) || b[i] != '{' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		return false
	}
	kend, err := skipString(b, i)
	if err != nil {
		return false
	}
	it.key = b[i+1 : kend-1]
	i = skipSpace(b, kend)
	if i >= len(b) || b[i] != ':' {
		return false
	}
	i = skipSpace(b, i+1)
	vend, err := skipValue(b, i)
	if err != nil {
		return false
	}
	it.value = b[i:vend]
	i = skipSpace(b, vend)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	it.i = i
	return true
}

// maxValidDepth is the nesting valid checks itself; deeper values (which
// MCP messages never are) go to json.Valid.
const maxValidDepth = 64

// valid reports whether b is exactly one JSON value, as json.Valid does
// (fuzzed against it), in a single pass that allocates nothing: several
// times faster on the small messages of a call.
func valid(b []byte) bool {
	var stack [maxValidDepth]byte // the open '{' and '['
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth == maxValidDepth {
				return json.Valid(b)
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			stack[depth] = c
			depth++
			if c == '{' {
				if i = validKey(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return false
			}
			i += 4
		default:
			if i = validNumber(b, i); i < 0 {
				return false
			}
		}
		// After a value: close what it ends, then a comma or the end.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			open := stack[depth-1]
			if b[i] == open+2 {
				depth--
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if open == '{' {
				if i = validKey(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// validKey checks a member's name and its colon at b[i], and returns the
// index of its value, or -1.
func validKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// validString checks the string at b[i] == '"' and returns the index past
// it, or -1.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		case c < 0x20:
			return -1
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber checks the number at b[i] and returns the index past it, or
// -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}
