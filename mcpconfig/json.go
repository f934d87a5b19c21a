package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// member is one member of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

// members splits obj, a syntactically valid JSON object, into its members in
// document order, duplicates included.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	return ms, nil
}

// checkSyntax reports whether data is one JSON value; the error is a
// *json.SyntaxError, whose Offset says where.
func checkSyntax(data []byte) error {
	var v json.RawMessage
	return json.Unmarshal(data, &v)
}

// syntaxOffset returns where a syntax error was found, if err says.
func syntaxOffset(err error) (int64, bool) {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset, true
	}
	return 0, false
}

// lineColumn returns the 1-based line and column of the byte a
// *json.SyntaxError's Offset points at (Offset bytes were read, the last one
// at fault).
func lineColumn(data []byte, offset int64) (line, col int) {
	off := min(max(offset-1, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// kind names the JSON type of a valid raw value.
func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// describe names the JSON type of raw with its article, for messages.
func describe(raw []byte) string {
	switch k := kind(raw); k {
	case "object", "array":
		return "an " + k
	case "null":
		return "null"
	default:
		return "a " + k
	}
}

func isNull(raw []byte) bool { return kind(raw) == "null" }

// jsonString decodes raw if it is a JSON string.
func jsonString(raw []byte) (string, bool) {
	if kind(raw) != "string" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// stringList decodes raw if it is an array of strings; otherwise it says
// which item is not a string (bad >= 0), or that raw is no array (bad == -1).
func stringList(raw []byte) (list []string, bad int, ok bool) {
	if kind(raw) != "array" {
		return nil, -1, false
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, -1, false
	}
	list = make([]string, 0, len(items))
	for i, item := range items {
		s, ok := jsonString(item)
		if !ok {
			return nil, i, false
		}
		list = append(list, s)
	}
	return list, 0, true
}

// syntaxMessage renders a JSON syntax error for the mcp object.
func syntaxMessage(err error) string {
	if off, ok := syntaxOffset(err); ok {
		return fmt.Sprintf("invalid JSON at byte %d: %v", off, err)
	}
	return fmt.Sprintf("invalid JSON: %v", err)
}
