package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseDuplicates: a message that repeats a member name in any object
// is refused with a *DuplicateError naming the member, whichever object it
// is in and however the names are written.
func TestParseDuplicates(t *testing.T) {
	for _, tc := range []struct{ in, path string }{
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "id"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, "method"},
		{`{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"}`, "jsonrpc"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{"name":"x"}}`, "params"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","arguments":{},"name":"denied"}}`, "params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","n\u0061me":"denied"}}`, "params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"allowed","name":"denied"}}`, "params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\u006e\u0061me":"a","na\u006de":"b"}}`, "params.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","uri":"file:///etc/passwd"}}`, "params.uri"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"progressToken":1,"progressToken":2}}}`, "params._meta.progressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"a":1,"b":{"c":[{"d":1,"d":2}]}}}}`, "params.arguments.b.c[0].d"},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"a","name":"b"}}}`, "params.ref.name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}}`, `params._meta["io.modelcontextprotocol/protocolVersion"]`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b","name":"c"}],"nextCursor":"x"}}`, "result.tools[1].name"},
		{`{"jsonrpc":"2.0","id":1,"result":{"nextCursor":"x","tools":[],"nextCursor":"y"}}`, "result.nextCursor"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"a","code":2}}`, "error.code"},
		{"{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\r\n\"name\":\"b\"}}", "params.name"},
		// Many names: the object's names go into a set.
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{` + manyNames(40) + `,"k7":0}}`, "params.k7"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{` + manyNames(40) + `,"k\u0037":0}}`, "params.k7"},
		// é written raw and escaped is one name.
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"é":1,"\u00e9":2}}`, `params["é"]`},
		// Names that differ only in case, in the objects the gateway reads.
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a\u0062":1,"aA":{"aa":1},"Aa":2}}`, "params.Aa"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","Name":"denied"}}`, "params.Name"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","NAME":"denied"}}`, "params.NAME"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"a"}}`, "Method"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1,"ProgressToken":2}}}`, "params._meta.ProgressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"path":"/ok","Path":"/etc"}}}`, "params.arguments.Path"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"s","reque\u017ftState":"t"}}`, "params[\"requeſtState\"]"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"kind":1,"\u212aind":2}}}`, "params._meta[\"\u212aind\"]"},
		{`{"jsonrpc":"2.0","id":1,"result":{"nextCursor":"a","NextCursor":"b","tools":[]}}`, "result.NextCursor"},
		// A response's data may repeat a name but for case; an exact
		// repetition after it is still found.
		{`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"id":1,"ID":2},"content":[],"content":[]}}`, "result.content"},
		{`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"id":1,"ID":2,"id":3}}}`, "result.structuredContent.id"},
		// Deeper than 16 levels: the path is cut.
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat(`{"a":`, 20) + `{"z":1,"z":2}` + strings.Repeat("}", 20) + `}`, "params" + strings.Repeat(".a", 15) + ".…"},
	} {
		_, err := Parse([]byte(tc.in))
		var dup *DuplicateError
		if !errors.As(err, &dup) {
			t.Errorf("Parse(%s) = %v, want a *DuplicateError", tc.in, err)
			continue
		}
		if dup.Path != tc.path {
			t.Errorf("Parse(%s): path %q, want %q", tc.in, dup.Path, tc.path)
		}
		if !strings.Contains(err.Error(), tc.path) {
			t.Errorf("Parse(%s): error %q does not name %s", tc.in, err, tc.path)
		}
	}
	// The same names in different objects, or in an object and its member,
	// are no repetition.
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"name":"b","id":1,"params":{"name":"c"}},"_meta":{"name":"d"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","x":{"name":1}},{"name":"b"},{"name":"a"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"b":1},"b":{"a":1},"c":[{"a":1},{"a":1}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{` + manyNames(40) + `,"inner":{` + manyNames(40) + `},"after":{` + manyNames(3) + `}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a\u0062":1,"aA":{"aa":1},"ab ":3}}`,
		// Names that differ only in case, deeper than the objects the
		// gateway reads: a tool's own data.
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"headers":{"Content-Type":"a","content-type":"b"},"x":[{"id":1,"ID":2}]}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"t","Type":"u"}],"structuredContent":{"a":{"k":1,"K":2}}}}`,
		// A tool's structured result is its own data, even at the top of
		// structuredContent: a stdio server answering it is no bad output.
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"id":1,"ID":2}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"uri":"a","URI":"b"}}}`,
	} {
		if _, err := Parse([]byte(in)); err != nil {
			t.Errorf("Parse(%s): %v", in, err)
		}
	}
}

func manyNames(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String()
}

// TestParseIDs: an id is a string or a number (kept as written, however
// long); a request's may not be null; a response's null id is no id.
func TestParseIDs(t *testing.T) {
	huge := "1" + strings.Repeat("0", 400)
	for _, tc := range []struct {
		in, id string
		ok     bool
	}{
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}`, `"a"`, true},
		{`{"jsonrpc":"2.0","id":"","method":"ping"}`, `""`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, `7`, true},
		{`{"jsonrpc":"2.0","id":-7,"method":"ping"}`, `-7`, true},
		{`{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}`, `1.5e300`, true},
		{`{"jsonrpc":"2.0","id":` + huge + `,"method":"ping"}`, huge, true},
		{`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, `1e400`, true},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":false,"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":{},"result":{}}`, ``, false},
		{`{"jsonrpc":"2.0","id":true,"error":{"code":1,"message":"m"}}`, ``, false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}`, ``, true},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, ``, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``, true},
	} {
		m, err := Parse([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%.80s) error = %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if err != nil {
			if errors.Is(err, ErrNotJSON) {
				t.Errorf("Parse(%.80s) = %v: a bad id is no JSON syntax error", tc.in, err)
			}
			continue
		}
		if string(m.ID) != tc.id {
			t.Errorf("Parse(%.80s).ID = %s, want %s", tc.in, m.ID, tc.id)
		}
	}
}

// TestParseBadInput: what no peer should send is refused with an error,
// not a crash, and JSON errors are told apart from JSON-RPC ones.
func TestParseBadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		notJSON bool
		batch   bool
	}{
		{"100000 [", strings.Repeat("[", 100_000), false, true},
		{"100000 [ closed", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), false, true},
		{"100000 levels in params", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + "}", true, false},
		{"10001 levels", `{"jsonrpc":"2.0","id":1,"method":"x","params":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + "}", true, false},
		{"unclosed deep object", strings.Repeat(`{"a":`, 100_000), true, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false, true},
		{"empty batch", ` [] `, false, true},
		{"two messages", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, true, false},
		{"two messages on two lines", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", true, false},
		{"invalid UTF-8 in a value", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ech\xffo\"}}", true, false},
		{"invalid UTF-8 in a name", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"n\xc3me\":\"a\",\"name\":\"b\"}}", true, false},
		{"a raw line break in a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"b\nc\"}}", true, false},
		{"a number", `17`, true, false},
		{"a string", `"x"`, true, false},
		{"empty", "  \r\n", true, false},
		{"huge number param", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":` + strings.Repeat("9", 100_000) + `}}`, false, false},
	} {
		_, err := Parse([]byte(tc.in))
		switch {
		case tc.batch:
			if !errors.Is(err, ErrBatch) {
				t.Errorf("%s: %v, want ErrBatch", tc.name, err)
			}
		case tc.notJSON:
			if !errors.Is(err, ErrNotJSON) {
				t.Errorf("%s: %v, want ErrNotJSON", tc.name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
	// JSON-RPC errors in valid JSON are not ErrNotJSON.
	for _, in := range []string{
		`{"jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":7}`,
		`{"jsonrpc":"2.0","id":1,"id":1,"method":"x"}`,
	} {
		if _, err := Parse([]byte(in)); err == nil || errors.Is(err, ErrNotJSON) {
			t.Errorf("Parse(%s) = %v, want a JSON-RPC error that is not ErrNotJSON", in, err)
		}
	}
}

// TestParseOneLine: a message holding line breaks between its tokens (CR,
// LF, CRLF) is handed out compacted: no raw member holds a line break, so
// none can split into two messages on a line-framed peer.
func TestParseOneLine(t *testing.T) {
	in := "{\r\n  \"jsonrpc\": \"2.0\",\n  \"id\": \r 1,\n  \"method\": \"tools/call\",\n  \"params\": {\n    \"name\": \"echo\",\r\n    \"arguments\": {\"text\": \"a\\nb\\r\"},\r" +
		"    \"_meta\": {\"progressToken\":\n 5}\n  },\n \"result\": {\n\"x\": [1,\n2]},\r\n \"error\": {\"code\":\r1}\n}\n"
	m, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	for what, raw := range map[string][]byte{"id": m.ID, "params": m.Params, "result": m.Result, "error": m.Error} {
		if bytes.ContainsAny(raw, "\r\n") {
			t.Errorf("%s holds a line break: %q", what, raw)
		}
	}
	if want := `{"name":"echo","arguments":{"text":"a\nb\r"},"_meta":{"progressToken":5}}`; string(m.Params) != want {
		t.Errorf("params = %s, want %s", m.Params, want)
	}
	if string(m.ID) != "1" || string(m.Result) != `{"x":[1,2]}` || string(m.Error) != `{"code":1}` {
		t.Errorf("id %s result %s error %s", m.ID, m.Result, m.Error)
	}
	// A message that is one line already is handed out as it is: its raw
	// members alias it.
	one := []byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{ "a" : 1 }}`)
	m, err = Parse(one)
	if err != nil || string(m.Params) != `{ "a" : 1 }` || &m.Params[0] != &one[len(one)-12] {
		t.Errorf("one-line message: params %q, %v; want them in place", m.Params, err)
	}
}

// The messages of the benchmarks: a typical tools/call, and a 100 KB
// tools/list result of 150 tools with their schemas.
var (
	benchCall = []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world from the benchmark"},"_meta":{"progressToken":3}}}`)
	benchList = func() []byte {
		var tools []string
		for i := 0; len(strings.Join(tools, ",")) < 100_000; i++ {
			tools = append(tools, fmt.Sprintf(`{"name":"tool_%d","title":"Tool %d","description":"Does thing %d with its arguments and answers with the result, as documented at length here.",`+
				`"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"a path"},"count":{"type":"integer","minimum":0},"mode":{"type":"string","enum":["a","b","c"]},"tags":{"type":"array","items":{"type":"string"}}},"required":["path"],"additionalProperties":false},`+
				`"annotations":{"readOnlyHint":true,"openWorldHint":false}}`, i, i, i))
		}
		return []byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[` + strings.Join(tools, ",") + `],"nextCursor":"c2"}}`)
	}()
)

// BenchmarkParse measures Parse, whose cost is mostly check's; compare
// with json.Valid, and with the scan without name checks (valid, which is
// check: run with -bench 'Parse|Valid').
func BenchmarkParse(b *testing.B) {
	for _, bm := range []struct {
		name string
		msg  []byte
	}{{"call", benchCall}, {"list100KB", benchList}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.msg)))
			var m Message
			for b.Loop() {
				if err := ParseInto(&m, bm.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bm.name+"/encoding-json-Valid", func(b *testing.B) {
			b.SetBytes(int64(len(bm.msg)))
			for b.Loop() {
				json.Valid(bm.msg)
			}
		})
	}
}

// TestDeepInputElsewhere: the other readers of raw JSON take 100000 levels
// without a stack overflow (none of them recurses).
func TestDeepInputElsewhere(t *testing.T) {
	deep := []byte(`{"a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `,"b":1}`)
	if v := Get(deep, "b"); string(v) != "1" {
		t.Errorf("Get past a deep member = %s", v)
	}
	if out, removed := Delete(deep, "a"); !removed || string(out) != `{"b":1}` {
		t.Errorf("Delete of a deep member = %.40s, %v", out, removed)
	}
	if _, err := OneLine(append([]byte("\n"), deep...)); err == nil {
		t.Error("OneLine of JSON nested past encoding/json's limit: want an error")
	}
	if _, err := Set(deep, "c", json.RawMessage(`2`)); err != nil {
		t.Errorf("Set beside a deep member: %v", err)
	}
}
