package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestParseFoldedNames: a member spelled as a name the gateway reads but
// for case (ASCII case, the long s, the Kelvin sign, escaped or not) is
// refused with a *FoldedNameError naming it and the name it stands for,
// in the envelope, params and the objects of params the gateway reads.
func TestParseFoldedNames(t *testing.T) {
	for _, tc := range []struct{ in, path, want string }{
		// Envelope.
		{`{"jsonrpc":"2.0","ID":1,"method":"ping"}`, "ID", "id"},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, "Method", "method"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","PARAMS":{"name":"a"}}`, "PARAMS", "params"},
		{`{"JSONRPC":"2.0","id":1,"method":"ping"}`, "JSONRPC", "jsonrpc"},
		{`{"jsonrpc":"2.0","id":1,"Result":{}}`, "Result", "result"},
		{`{"jsonrpc":"2.0","id":1,"\u0045rror":{"code":1,"message":"m"}}`, "Error", "error"},
		// Params.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","ARGUMENTS":{"path":"/etc/passwd"}}}`, "params.ARGUMENTS", "arguments"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","Arguments":{"path":"/etc/passwd"}}}`, "params.Arguments", "arguments"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"read_file","arguments":{}}}`, "params.Name", "name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"N\u0061me":"read_file"}}`, "params.Name", "name"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":"note://secret"}}`, "params.URI", "uri"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"Cursor":"x"}}`, "params.Cursor", "cursor"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_META":{"progressToken":1}}}`, "params._META", "_meta"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","reque\u017ftState":"x"}}`, `params["requeſtState"]`, "requestState"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"argument\u017f\":{}}}", `params["argumentſ"]`, "arguments"},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestid":1}}`, "params.requestid", "requestId"},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolversion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "params.protocolversion", "protocolVersion"},
		// params._meta.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progresstoken":1}}}`, "params._meta.progresstoken", "progressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressTo\u212aen":1}}}`, "params._meta[\"progressTo\u212aen\"]", "progressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/PROTOCOLVERSION":"2026-07-28"}}}`, `params._meta["io.modelcontextprotocol/PROTOCOLVERSION"]`, "io.modelcontextprotocol/protocolVersion"},
		// params.ref, params.argument, params.context.
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","NAME":"p"}}}`, "params.ref.NAME", "name"},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"Type":"ref/resource","uri":"x"}}}`, "params.ref.Type", "type"},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","Value":"v"}}}`, "params.argument.Value", "value"},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"context":{"ARGUMENTS":{}}}}`, "params.context.ARGUMENTS", "arguments"},
	} {
		_, err := Parse([]byte(tc.in))
		var fe *FoldedNameError
		if !errors.As(err, &fe) {
			t.Errorf("Parse(%s) = %v, want a *FoldedNameError", tc.in, err)
			continue
		}
		if fe.Path != tc.path || fe.Want != tc.want {
			t.Errorf("Parse(%s): path %q for %q, want %q for %q", tc.in, fe.Path, fe.Want, tc.path, tc.want)
		}
		if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), `"`+tc.want+`"`) {
			t.Errorf("Parse(%s): error %q does not name %s and %q", tc.in, err, tc.path, tc.want)
		}
	}
	// Names the gateway does not read may be in any case, and a tool's
	// own data (arguments, results, error data) may hold any names.
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"escaped but exact","arguments":{"PATH":"/x","Name":1,"URI":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Reason":"x","Task":{"TTL":1},"_meta":{"Foo":1,"TRACEID":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","\u017f":1,"\u212a":2,"é":3}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"Tools":[{"Name":"x"}],"NextCursor":"c","structuredContent":{"ID":1,"URI":"u"}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"URI":"a","Name":"b"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"Name":{"type":"string"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","inputResponses":{"Name":{"action":"accept","content":{"URI":"x"}}}}}`,
	} {
		if _, err := Parse([]byte(in)); err != nil {
			t.Errorf("Parse(%s): %v", in, err)
		}
	}
}

// TestVocabularyCoversReadPaths: every member of the envelope, params and
// the objects of params that the fuzz targets know the gateway reads is in
// the vocabulary of its object, so a differently cased spelling of it is
// refused.
func TestVocabularyCoversReadPaths(t *testing.T) {
	for _, p := range readPaths {
		if p[0] != "params" {
			continue
		}
		v := vocabParams
		for _, k := range p[1 : len(p)-1] {
			b := AppendString(nil, k)
			v = v.child(b, 0, len(b), true)
		}
		if v == vocabNone {
			continue // params.arguments.text: a tool's data
		}
		if last := p[len(p)-1]; !slices.Contains(vocabNames[v], last) {
			t.Errorf("%s is read but not in its object's vocabulary %q", strings.Join(p, "."), vocabNames[v])
		}
	}
	for _, w := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
		if !slices.Contains(envelopeNames, w) {
			t.Errorf("the envelope's vocabulary lacks %s", w)
		}
	}
}

// TestMisspelledAllocs: the check of an ordinary message's names against
// the vocabulary allocates nothing (Parse's allocation test covers the
// whole message).
func TestMisspelledAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
	b := []byte(`"progressToken"`)
	if n := testing.AllocsPerRun(100, func() { vocabMeta.misspelled(b, 0, len(b), true) }); n != 0 {
		t.Errorf("misspelled allocates %.0f times, want 0", n)
	}
	var m Message
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if n := testing.AllocsPerRun(100, func() { _ = ParseInto(&m, msg) }); n != 0 {
		t.Errorf("ParseInto allocates %.0f times, want 0", n)
	}
}

// TestFoldedMember: the first name of obj that is a declared name but for
// case, as encoding/json folds; exact and undeclared names are not.
func TestFoldedMember(t *testing.T) {
	declared := `{"path":{},"kind":{},"Same":{},"same":{}}`
	for _, tc := range []struct{ obj, name, want string }{
		{`{"PATH":1}`, "PATH", "path"},
		{`{"path":1,"Path":2}`, "Path", "path"},
		{`{"pat\u0048":1}`, "patH", "path"},
		{`{"pat\u0068":1}`, "", ""},
		{`{"\u212aind":1}`, "\u212aind", "kind"},
		{`{"\u017fame":1}`, "ſame", "Same"},
		{`{"same":1,"SAME":1}`, "SAME", "Same"},
		{`{"other":1,"OTHER":1,"é":1}`, "", ""},
		{`{}`, "", ""},
		{`not an object`, "", ""},
	} {
		name, want, ok := FoldedMember([]byte(tc.obj), []byte(declared))
		if name != tc.name || want != tc.want || ok != (tc.name != "") {
			t.Errorf("FoldedMember(%s) = %q, %q, %v; want %q, %q", tc.obj, name, want, ok, tc.name, tc.want)
		}
	}
	if raceEnabled {
		return
	}
	obj, decl := []byte(`{"path":"/a","mode":"r","Other":1}`), []byte(`{"path":{},"mode":{}}`)
	if n := testing.AllocsPerRun(100, func() { FoldedMember(obj, decl) }); n != 0 {
		t.Errorf("FoldedMember of plain names allocates %.0f times, want 0", n)
	}
}

func TestEachMemberAndItem(t *testing.T) {
	var got []string
	EachMember([]byte(` { "a" : 1 , "b\u0063" : [2] , "d":{"e":3}} `), func(name []byte, v json.RawMessage) bool {
		got = append(got, string(name)+"="+string(v))
		return true
	})
	if want := []string{"a=1", "bc=[2]", `d={"e":3}`}; !slices.Equal(got, want) {
		t.Errorf("EachMember: %q, want %q", got, want)
	}
	got = nil
	EachItem([]byte(` [ 1 , {"a":[]} , "x" ] `), func(i int, v json.RawMessage) bool {
		got = append(got, strconv.Itoa(i)+"="+string(v))
		return i < 1
	})
	if want := []string{"0=1", `1={"a":[]}`}; !slices.Equal(got, want) {
		t.Errorf("EachItem, stopped after the second: %q, want %q", got, want)
	}
	EachItem([]byte(`{}`), func(int, json.RawMessage) bool { t.Error("EachItem of an object"); return true })
	EachItem([]byte(`[]`), func(int, json.RawMessage) bool { t.Error("EachItem of []"); return true })
	if got := JoinPath("params.arguments", "a b"); got != `params.arguments["a b"]` {
		t.Errorf("JoinPath = %s", got)
	}
}

// FuzzParseVocabulary: no message Parse accepts holds, in the objects the
// gateway reads (the envelope, params, params._meta, params.ref,
// params.argument, params.context), a name that encoding/json would match
// to one of the gateway's names (bytes.EqualFold, the folding it uses)
// without being it. The reference is encoding/json's decoding and
// bytes.EqualFold, not the scanner's own folding.
func FuzzParseVocabulary(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/tmp"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","ARGUMENTS":{"path":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"URI":"note://secret"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progre\u017f\u017fToken":7}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressTo\u212aen":7}}}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"tools/call","PARAMS":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","NAME":"p"},"argument":{"name":"a","Value":"v"},"context":{"Arguments":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"Tools":[],"NextCursor":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Parse(b); err != nil {
			return
		}
		var env map[string]any
		if json.Unmarshal(b, &env) != nil {
			t.Fatalf("Parse(%q) accepted what encoding/json cannot decode into a map", b)
		}
		folded := func(where string, obj any, words []string) {
			m, ok := obj.(map[string]any)
			if !ok {
				return
			}
			for k := range m {
				for _, w := range words {
					if k != w && bytes.EqualFold([]byte(k), []byte(w)) {
						t.Errorf("Parse(%q) accepted %s member %q, which encoding/json reads as %q", b, where, k, w)
					}
				}
			}
		}
		folded("the envelope's", env, envelopeNames)
		params := env["params"]
		folded("params'", params, paramsNames)
		if p, ok := params.(map[string]any); ok {
			folded("params._meta's", p["_meta"], metaNames)
			folded("params.ref's", p["ref"], refNames)
			folded("params.argument's", p["argument"], argumentNames)
			folded("params.context's", p["context"], contextNames)
		}
	})
}
