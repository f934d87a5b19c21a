package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// memberByDecoding is the slow, obviously right reference for Member.
func memberByDecoding(obj []byte, key string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

var memberCases = []string{
	`{"name":"echo","arguments":{"a":"}{\"name\":1"}}`,
	`{ "a" : [1, {"name": "inner"}, "]"] , "name" : "x\"y" }`,
	`{"n\u0061me":"escaped key","other":null}`,
	`{}`,
	`{"name":true,"x":-1.5e3}`,
	`{"_meta":{"progressToken":7},"name":"t"}`,
	"{\n\t\"name\"\t:\n\"tabs\"\n}",
}

func TestMemberMatchesDecoding(t *testing.T) {
	for _, c := range memberCases {
		for _, key := range []string{"name", "arguments", "a", "_meta", "missing", "other", "x"} {
			start, end, ok, err := Member([]byte(c), key)
			want, wantOK := memberByDecoding([]byte(c), key)
			if err != nil || ok != wantOK || (ok && !bytes.Equal(bytes.TrimSpace([]byte(c)[start:end]), want)) {
				t.Errorf("Member(%s, %q) = %q %v %v; want %q %v", c, key, []byte(c)[start:end], ok, err, want, wantOK)
			}
		}
	}
	for _, bad := range []string{`[1]`, `{"a":}`, `{"a" 1}`, `{"a":"unterminated}`, `{"a":1,}`, ``} {
		if _, _, _, err := Member([]byte(bad), "zz"); err == nil {
			t.Errorf("Member(%q): want an error", bad)
		}
	}
}

func FuzzMember(f *testing.F) {
	for _, c := range memberCases {
		f.Add([]byte(c), "name")
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		want, wantOK := memberByDecoding(obj, key)
		if want == nil && !wantOK {
			var m map[string]json.RawMessage
			if json.Unmarshal(obj, &m) != nil {
				return // not an object: Member's answer is not compared
			}
		}
		// Duplicate keys: encoding/json keeps the last, Member the first.
		dec := json.NewDecoder(bytes.NewReader(obj))
		seen, dup := map[string]bool{}, false
		if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
			for dec.More() {
				k, _ := dec.Token()
				var v json.RawMessage
				if dec.Decode(&v) != nil {
					return
				}
				if s, _ := k.(string); seen[s] {
					dup = true
				} else {
					seen[s] = true
				}
			}
		}
		if dup {
			return
		}
		start, end, ok, err := Member(obj, key)
		if err != nil || ok != wantOK || (ok && !bytes.Equal(obj[start:end], bytes.TrimSpace(want))) {
			t.Errorf("Member(%q, %q) = [%d:%d] %v %v; want %q %v", obj, key, start, end, ok, err, want, wantOK)
		}
	})
}
