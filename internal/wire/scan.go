package wire

import "errors"

// A minimal JSON scanner for the hot path: it finds the top-level members of
// an object without decoding or allocating. It assumes well-formed JSON in
// the values it skips (the message was either validated by Parse or is
// forwarded unchanged, so a malformed value fails at its consumer).

var errSyntax = errors.New("malformed JSON")

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
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
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
	for _, c := range raw {
		if c == '\\' {
			s, ok := unquote(b[start:end])
			return ok && s == key
		}
	}
	return string(raw) == key
}

// scanMember locates a top-level member of the object in obj.
func scanMember(obj []byte, key string) (start, end int, ok bool, err error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false, errors.New("not a JSON object")
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

// eachMember calls f with every top-level member of a valid JSON object;
// key is the member's name as written, without its quotes.
func eachMember(obj []byte, f func(key, value []byte) error) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errors.New("not a JSON object")
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		kend, err := skipString(obj, i)
		if err != nil {
			return err
		}
		key := obj[i+1 : kend-1]
		i = skipSpace(obj, kend) + 1 // past ':'
		i = skipSpace(obj, i)
		vend, err := skipValue(obj, i)
		if err != nil {
			return err
		}
		if err := f(key, obj[i:vend]); err != nil {
			return err
		}
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return nil
}
