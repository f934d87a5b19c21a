package wire

import (
	"bytes"
	"errors"
	"math"
	"unicode"
	"unicode/utf8"
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
	quoted     []byte // key with its quotes
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
	it.key, it.quoted = b[i+1:kend-1], b[i:kend]
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

// maxDepth is the deepest nesting check accepts: encoding/json's own limit,
// so that check and json.Valid agree. The scan keeps its own stack, not Go's:
// any depth costs a few bytes a level, never a stack overflow.
const maxDepth = 10000

// maxLinearNames is how many names of one object check compares one by one;
// an object with more (or with a name that needs decoding or folding) gets a
// set of its names.
const maxLinearNames = 16

// frame is an object or array open around the scan.
type frame struct {
	open  byte  // '{' or '['
	set   bool  // the object's names are in check's sets[depth]
	vocab vocab // the names the gateway reads in the object
	names int32 // the object's first name in check's names
}

// nameSpan is a member name in the message, quotes included.
type nameSpan struct{ start, end int32 }

// finding is the first member check found that makes a message mean
// different things to different parsers.
type finding struct {
	at   int        // the offset of its name, or -1: none
	kind repetition // what is wrong with it
	want string     // for spelledButForCase: the name the gateway reads
}

// check reports whether b is exactly one JSON value, as json.Valid does
// (fuzzed against it), and the first member name (at, or -1) that repeats
// an earlier name of its object (compared decoded: "n\u0061me" is "name"):
// repeated, or repeatedButForCase when it repeats it but for case (counted
// within caseDepth); or that is a name the gateway reads but for case
// without being it (spelledButForCase, see vocabulary.go). JSON parsers
// disagree on a repeated name (most keep the last, some the first, the
// gateway's scanner finds the first), and some match names regardless of
// case, so a message holding one can mean one thing to the gateway and
// another to a server: Parse refuses it. One pass that allocates nothing
// for an ordinary message, faster than json.Valid (BenchmarkParse).
func check(b []byte, caseDepth int) (found finding, ok bool) {
	found.at = -1
	if len(b) > math.MaxInt32 {
		return found, false
	}
	// The open objects and arrays, and the names of the open objects: on
	// this stack unless the message is deep or has many names.
	var stackBuf [64]frame
	var namesBuf [32]nameSpan
	stack, names := stackBuf[:0], namesBuf[:0]
	var sets []nameSet // by depth, for objects with a set
	var key nameSpan   // the name of the member whose value is next
	var keyPlain bool  // and whether it is plain (validName)
	// name checks a member's name and its colon at b[i], notes the name in
	// the innermost object, and returns the index of its value, or -1.
	name := func(i int) int {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end, plain := validName(b, i)
		if end < 0 {
			return -1
		}
		key, keyPlain = nameSpan{int32(i), int32(end)}, plain
		if found.at < 0 {
			f := &stack[len(stack)-1]
			var r repetition
			names, sets, r = note(b, i, end, plain, f, len(stack)-1, caseDepth, names, sets)
			if r != noRepetition {
				found = finding{at: i, kind: r}
			} else if f.vocab != vocabNone {
				if w := f.vocab.misspelled(b, i, end, plain); w != "" {
					found = finding{at: i, kind: spelledButForCase, want: w}
				}
			}
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		return skipSpace(b, i+1)
	}
	i := skipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return found, false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return found, false
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				break
			}
			fr := frame{open: c, names: int32(len(names))}
			switch {
			case c == '[':
			case len(stack) == 0:
				fr.vocab = vocabEnvelope
			case stack[len(stack)-1].open == '{':
				fr.vocab = stack[len(stack)-1].vocab.child(b, int(key.start), int(key.end), keyPlain)
			}
			stack = append(stack, fr)
			if c == '{' {
				if i = name(i); i < 0 {
					return found, false
				}
			}
			continue
		case c == '"':
			if i = validString(b, i); i < 0 {
				return found, false
			}
		case c == 't':
			if !hasLiteral(b, i, "true") {
				return found, false
			}
			i += 4
		case c == 'f':
			if !hasLiteral(b, i, "false") {
				return found, false
			}
			i += 5
		case c == 'n':
			if !hasLiteral(b, i, "null") {
				return found, false
			}
			i += 4
		default:
			if i = validNumber(b, i); i < 0 {
				return found, false
			}
		}
		// After a value: close what it ends, then a comma or the end.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return found, i == len(b)
			}
			if i >= len(b) {
				return found, false
			}
			f := stack[len(stack)-1]
			if b[i] == f.open+2 {
				if f.open == '{' {
					if f.set {
						sets[len(stack)-1].clear()
					}
					names = names[:f.names]
				}
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return found, false
			}
			i = skipSpace(b, i+1)
			if f.open == '{' {
				if i = name(i); i < 0 {
					return found, false
				}
			}
			break
		}
	}
}

// maxCaseDepth is the deepest object whose names must differ also
// regardless of case: the envelope, params, result and error, and the
// objects in them (_meta, ref, arguments). Parsers that match names to
// fields regardless of case (Go's encoding/json, so mcp-go's servers and
// clients; .NET's on the web) read {"name":"a","Name":"b"} as "b" where the
// gateway reads "a". Deeper objects (a tool's own data) may have such names.
const maxCaseDepth = 2

// responseCaseDepth is maxCaseDepth for a response: the gateway reads no
// member of a result's or an error's objects (a tool's structuredContent,
// its own data, may well have "id" and "ID"), so only the envelope and
// the result or error object itself must differ regardless of case.
const responseCaseDepth = 1

// repetition is what note found.
type repetition int

const (
	noRepetition       repetition = iota
	repeated                      // the same name again
	repeatedButForCase            // the same name but for case, where that counts
	spelledButForCase             // a name the gateway reads, but for case
)

// nameSet holds the names of an object with many names or with names that
// need decoding (escapes) or folding (non-ASCII, compared regardless of
// case as encoding/json does).
type nameSet struct {
	exact  map[string]struct{}
	folded map[string]struct{} // only within maxCaseDepth
}

func (s *nameSet) clear() {
	clear(s.exact)
	clear(s.folded)
}

// note records the name b[start:end] (quotes included) of a member of the
// innermost object f, at depth, and reports whether the object already had
// it. plain: the name has no escape and only ASCII. names holds the names
// of the open objects, f's last; sets the set of names of objects that
// have one, by depth.
func note(b []byte, start, end int, plain bool, f *frame, depth, caseDepth int, names []nameSpan, sets []nameSet) ([]nameSpan, []nameSet, repetition) {
	name := b[start:end]
	byCase := depth <= caseDepth
	if !f.set {
		mine := names[f.names:]
		// A name with an escape is compared decoded, one with non-ASCII
		// (valid UTF-8: Parse checks) as written but for case folding.
		if len(mine) < maxLinearNames && (plain || !byCase && bytes.IndexByte(name, '\\') < 0) {
			r := noRepetition
			for _, n := range mine {
				if int(n.end-n.start) != len(name) {
					continue
				}
				prev := b[n.start:n.end]
				if string(prev) == string(name) {
					return names, sets, repeated
				}
				if byCase && r == noRepetition && asciiEqualFold(prev, name) {
					r = repeatedButForCase // unless an exact repetition follows
				}
			}
			if r != noRepetition {
				return names, sets, r
			}
			return append(names, nameSpan{int32(start), int32(end)}), sets, noRepetition
		}
		// The object changes to a set of its names, decoded and folded.
		for len(sets) <= depth {
			sets = append(sets, nameSet{})
		}
		if sets[depth].exact == nil {
			sets[depth].exact = make(map[string]struct{}, 2*maxLinearNames)
		}
		if byCase && sets[depth].folded == nil {
			sets[depth].folded = make(map[string]struct{}, 2*maxLinearNames)
		}
		for _, n := range mine {
			s, _ := unquote(b[n.start:n.end])
			sets[depth].exact[s] = struct{}{}
			if byCase {
				sets[depth].folded[foldName(s)] = struct{}{}
			}
		}
		names = names[:f.names]
		f.set = true
	}
	s, _ := unquote(name)
	set := &sets[depth]
	if _, seen := set.exact[s]; seen {
		return names, sets, repeated
	}
	set.exact[s] = struct{}{}
	if byCase {
		folded := foldName(s)
		if _, seen := set.folded[folded]; seen {
			return names, sets, repeatedButForCase
		}
		set.folded[folded] = struct{}{}
	}
	return names, sets, noRepetition
}

// asciiEqualFold reports whether two ASCII names of the same length differ
// only in the case of letters.
func asciiEqualFold(a, b []byte) bool {
	for i := range a {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// foldName folds a name as encoding/json matches names to fields: ASCII
// letters to upper case, any other rune to the smallest of its case-fold
// orbit (so "ſ" is "S" and the Kelvin sign "K").
func foldName(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z':
			r -= 'a' - 'A'
		case r >= utf8.RuneSelf:
			for {
				r2 := unicode.SimpleFold(r)
				if r2 <= r {
					r = r2
					break
				}
				r = r2
			}
		}
		out = append(out, r)
	}
	return string(out)
}

// validString checks the string at b[i] == '"' and returns the index past
// it, or -1.
func validString(b []byte, i int) int {
	end, _ := validName(b, i)
	return end
}

// validName is validString also reporting whether the string is plain:
// no escape and only ASCII, so that its bytes are its value, whose case
// folds byte by byte.
func validName(b []byte, i int) (end int, plain bool) {
	plain = true
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(b) {
				return -1, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1, false
					}
				}
				i += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return -1, false
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
