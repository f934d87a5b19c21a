package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// valid reports whether b is exactly one JSON value, as json.Valid does:
// check's verdict alone, for the tests and benchmarks that compare it with
// json.Valid.
func valid(b []byte) bool {
	_, ok := check(b, maxCaseDepth)
	return ok
}

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
	`{"a":"ends in a backslash\\","name":"after it"}`,
	`{"a":"\\\"still a string\\\\","name":"\\"}`,
	`{"a\\":1,"name":[{"x":"\\\\\""}]}`,
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

// FuzzParse compares Parse with decoding the envelope by encoding/json.
func FuzzParse(f *testing.F) {
	for _, c := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
		`{ "error" : {"code":1}, "id" : null, "jsonrpc" : "2.0" }`,
		// Envelope names but for case, which encoding/json takes for them.
		`{"jsonrpc":"2.0","ID":1,"Method":"tools/call","PARAMS":{"name":"e"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","Param\u017f":{}}`,
	} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ref struct {
			JSONRPC *string         `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  *string         `json:"method"`
			Params  json.RawMessage `json:"params"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		m, err := Parse(b)
		if err == nil && oddKeys(b) {
			t.Errorf("Parse(%q) accepted an envelope whose names repeat or differ from its members' only by case", b)
		}
		if json.Unmarshal(b, &ref) != nil || oddKeys(b) || !utf8.Valid(b) {
			if err == nil && !json.Valid(b) {
				t.Errorf("Parse(%q) accepted invalid JSON", b)
			}
			// A type mismatch (say a numeric method), odd keys, or invalid
			// UTF-8 (which encoding/json replaces): not compared.
			return
		}
		if ref.JSONRPC == nil || *ref.JSONRPC != "2.0" {
			if err == nil {
				t.Errorf("Parse(%q) accepted jsonrpc %v", b, ref.JSONRPC)
			}
			return
		}
		if err != nil {
			if ref.Method == nil && ref.Result == nil && ref.Error == nil {
				return
			}
			if id := bytes.TrimSpace(ref.ID); len(id) > 0 && (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
				if id[0] != 'n' || ref.Method != nil {
					return // an id that is no string or number (TestParseIDs)
				}
			}
			if ref.Method != nil && *ref.Method == "" && ref.Result == nil && ref.Error == nil {
				return
			}
			t.Fatalf("Parse(%q): %v", b, err)
		}
		eq := func(what string, got, want json.RawMessage) {
			if string(want) == "null" && what != "result" && what != "error" {
				want = nil
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Parse(%q).%s = %q, want %q", b, what, got, want)
			}
		}
		eq("id", m.ID, ref.ID)
		eq("params", m.Params, ref.Params)
		eq("result", m.Result, ref.Result)
		eq("error", m.Error, ref.Error)
		if ref.Method != nil && m.Method != *ref.Method {
			t.Errorf("Parse(%q).Method = %q, want %q", b, m.Method, *ref.Method)
		}
	})
}

// oddKeys reports whether a JSON object repeats a top-level key, or has one
// that encoding/json would take for an envelope member (it matches names
// without regard to case; the wire, like JSON-RPC, does not).
func oddKeys(obj []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	seen := map[string]bool{}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		s, _ := k.(string)
		if seen[s] {
			return true
		}
		seen[s] = true
		for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
			if s != name && strings.EqualFold(s, name) {
				return true
			}
		}
	}
	return false
}

var validCases = []string{
	`{}`, `[]`, ` {"a" : [1, -2.5e+3, true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"], "b": {}} `,
	`"s"`, `0`, `-0`, `1e5`, `1E-5`, `[[[]]]`, `{"a":{"b":{"c":[{}]}}}`,
	`{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`tru`, `truex`, `nul`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", `"abc`, `{"a":1}}`, `{"a":1} x`,
	`{"a" 1}`, `{1:2}`, `[1 2]`, ``, ` `, "\"\xff\"", `{"a":[1,{"b":2}],"c":"}"}`,
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
	for _, n := range []int{65, maxDepth, maxDepth + 1, 100_000} {
		for _, deep := range []string{
			strings.Repeat("[", n) + strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1),
			strings.Repeat("[", n) + strings.Repeat("]", n-1), // one short
		} {
			if got, want := valid([]byte(deep)), json.Valid([]byte(deep)); got != want {
				t.Errorf("valid of %d levels (%.12s…) = %v, json.Valid says %v", n, deep, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world from the benchmark"},"_meta":{"progressToken":3}}}`)
	b.Run("wire", func(b *testing.B) {
		for b.Loop() {
			valid(msg)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(msg)
		}
	})
}

// BenchmarkModernLookups does the lookups the gateway makes in the params of
// one 2026-07-28 tools/call (its _meta carries the client's version, info
// and capabilities).
func BenchmarkModernLookups(b *testing.B) {
	params := []byte(`{"name":"echo","arguments":{"text":"hello world from the benchmark"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"mcp-gateway-bench","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}`)
	for b.Loop() {
		for range 4 {
			meta := Get(params, "_meta")
			for _, k := range []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities", "progressToken"} {
				Get(meta, k)
			}
		}
		GetString(params, "name")
		GetString(params, "requestState")
	}
}

func TestDelete(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":{"c":[1,"}"]},"d":"x"}`, `{"a":1,"d":"x"}`},
		{`{"b":2}`, `{}`},
		{`{ "a" : 1 , "b" : 2 , "c" : 3 }`, `{"a" : 1,"c" : 3}`},
		{`{"\u0062":2,"a":1}`, `{"a":1}`},
		{`{"a":"b","bb":1}`, ``}, // nothing removed
		{`{}`, ``},
		{`[1]`, ``},
	} {
		got, removed := Delete([]byte(c.in), "b")
		if c.want == "" {
			if removed || string(got) != c.in {
				t.Errorf("Delete(%s) = %s, %v; want it unchanged", c.in, got, removed)
			}
			continue
		}
		if !removed || string(got) != c.want {
			t.Errorf("Delete(%s) = %s, %v; want %s, true", c.in, got, removed, c.want)
		}
	}
}

// FuzzDelete checks Delete against decoding: the members left are the
// others, in their order, with their values as written.
func FuzzDelete(f *testing.F) {
	for _, c := range memberCases {
		f.Add([]byte(c), "name")
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		if !json.Valid(obj) || !utf8.Valid(obj) || !utf8.ValidString(key) {
			return // encoding/json, the reference, decodes invalid UTF-8 as U+FFFD
		}
		got, removed := Delete(obj, key)
		_, wantRemoved := memberByDecoding(obj, key)
		if removed != wantRemoved {
			t.Fatalf("Delete(%q, %q) removed %v; decoding finds the key: %v", obj, key, removed, wantRemoved)
		}
		if !removed {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("Delete(%q, %q) = %q: not JSON", obj, key, got)
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(obj, &before) != nil {
			return
		}
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("Delete(%q, %q) = %q: %v", obj, key, got, err)
		}
		if _, ok := after[key]; ok {
			t.Fatalf("Delete(%q, %q) = %q still has the key", obj, key, got)
		}
		delete(before, key)
		if len(before) != len(after) {
			t.Fatalf("Delete(%q, %q) = %q: %d members, want %d", obj, key, got, len(after), len(before))
		}
		for k, v := range after {
			if !bytes.Equal(bytes.TrimSpace(v), bytes.TrimSpace(before[k])) {
				t.Fatalf("Delete(%q, %q) = %q: member %q changed", obj, key, got, k)
			}
		}
	})
}
