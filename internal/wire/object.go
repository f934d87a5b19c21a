package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Member locates the value of a top-level member of a JSON object: it returns
// the byte offsets [start,end) of the value in obj, or ok=false when the object
// has no such member.
func Member(obj []byte, key string) (start, end int, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, false, err
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return 0, 0, false, errors.New("not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, false, err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, false, err
		}
		if name == key {
			end := int(dec.InputOffset())
			return end - len(v), end, true, nil
		}
	}
	return 0, 0, false, nil
}

// GetString returns the string value of a top-level member of obj.
func GetString(obj []byte, key string) (string, bool) {
	start, end, ok, err := Member(obj, key)
	if err != nil || !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(obj[start:end], &s) != nil {
		return "", false
	}
	return s, true
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
