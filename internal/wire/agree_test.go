package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// readPaths are the members the gateway reads in a message (grep wire.Get,
// wire.GetString, wire.Member in internal/gateway, internal/front and
// internal/upstream), from the top of the message; "[0]" is an array's
// first item, as the gateway reads every item of a list.
var readPaths = [][]string{
	{"params", "name"},
	{"params", "uri"},
	{"params", "cursor"},
	{"params", "level"},
	{"params", "mode"},
	{"params", "progressToken"},
	{"params", "requestId"},
	{"params", "requestState"},
	{"params", "arguments"},
	{"params", "arguments", "text"},
	{"params", "inputResponses"},
	{"params", "notifications"},
	{"params", "capabilities"},
	{"params", "ref"},
	{"params", "ref", "type"},
	{"params", "ref", "name"},
	{"params", "ref", "uri"},
	{"params", "_meta"},
	{"params", "_meta", "progressToken"},
	{"params", "_meta", "io.modelcontextprotocol/protocolVersion"},
	{"params", "_meta", "io.modelcontextprotocol/clientInfo"},
	{"params", "_meta", "io.modelcontextprotocol/clientCapabilities"},
	{"params", "_meta", "io.modelcontextprotocol/logLevel"},
	{"result", "nextCursor"},
	{"result", "tools"},
	{"result", "tools", "[0]", "name"},
	{"result", "prompts", "[0]", "name"},
	{"result", "resources", "[0]", "uri"},
	{"result", "resourceTemplates", "[0]", "uriTemplate"},
	{"result", "resultType"},
	{"result", "inputRequests"},
	{"result", "requestState"},
	{"result", "capabilities"},
	{"result", "capabilities", "resources", "subscribe"},
	{"result", "instructions"},
	{"result", "ttlMs"},
	{"error", "code"},
	{"error", "message"},
}

// gatewayRead reads a path as the gateway does: wire.Get member by member
// from the raw fields Parse returned; a string also by GetString.
func gatewayRead(m *Message, path []string) (raw json.RawMessage, s string, isString bool) {
	switch path[0] {
	case "params":
		raw = m.Params
	case "result":
		raw = m.Result
	case "error":
		raw = m.Error
	}
	for i, k := range path[1:] {
		if k == "[0]" {
			raw = firstItem(raw)
			continue
		}
		if i == len(path)-2 {
			s, isString = GetString(raw, k)
		}
		raw = Get(raw, k)
	}
	return raw, s, isString
}

// firstItem returns the first item of a raw array, or nil.
func firstItem(arr json.RawMessage) json.RawMessage {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	i = skipSpace(arr, i+1)
	end, err := skipValue(arr, i)
	if err != nil {
		return nil
	}
	return arr[i:end]
}

// referenceRead reads a path in what encoding/json decoded (into maps: the
// last of repeated names wins, as in most parsers).
func referenceRead(v any, path []string) (any, bool) {
	for _, k := range path {
		if k == "[0]" {
			a, ok := v.([]any)
			if !ok || len(a) == 0 {
				return nil, false
			}
			v = a[0]
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzParseAgrees: for any input, either Parse refuses it, or the envelope
// and every member the gateway reads mean what encoding/json decodes from
// the same bytes (into maps, and into structs, whose fields it matches
// regardless of case), and every raw member Parse hands out for forwarding fits
// on one line. So no message can mean one thing to the gateway and another
// to a server or client. Its seeds, in testdata/fuzz/FuzzParseAgrees, are
// messages of every kind the gateway reads and attempts to make it read
// something else than a server would (repeated and escaped names, line
// breaks, a message smuggled in a string or on a second line).
func FuzzParseAgrees(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return // refused: it means nothing to anyone
		}
		ref, derr := decodeAny(b)
		env, ok := ref.(map[string]any)
		if derr != nil || !ok || !json.Valid(b) {
			t.Fatalf("Parse(%q) accepted what encoding/json refuses: %v", b, derr)
		}
		// The envelope.
		if v, _ := env["jsonrpc"].(string); v != "2.0" {
			t.Errorf("Parse(%q) accepted jsonrpc %v", b, env["jsonrpc"])
		}
		if method, ok := env["method"]; ok && method != m.Method {
			t.Errorf("Parse(%q).Method = %q, encoding/json %v", b, m.Method, method)
		} else if !ok && m.Method != "" {
			t.Errorf("Parse(%q).Method = %q, encoding/json none", b, m.Method)
		}
		for _, x := range []struct {
			name     string
			raw      json.RawMessage
			nullIsNo bool
		}{{"id", m.ID, true}, {"params", m.Params, true}, {"result", m.Result, false}, {"error", m.Error, false}} {
			want, present := env[x.name]
			if x.nullIsNo && want == nil {
				present = false
			}
			if !present {
				if x.raw != nil {
					t.Errorf("Parse(%q).%s = %s, encoding/json none", b, x.name, x.raw)
				}
				continue
			}
			sameValue(t, b, x.name, x.raw, want)
			if bytes.ContainsAny(x.raw, "\r\n") {
				t.Errorf("Parse(%q).%s = %q holds a line break", b, x.name, x.raw)
			}
		}
		if m.ID != nil {
			switch env["id"].(type) {
			case string, json.Number:
			default:
				t.Errorf("Parse(%q) accepted the id %s", b, m.ID)
			}
		}
		agreesWithFolding(t, b, m)
		// What the gateway reads inside them.
		for _, path := range readPaths {
			raw, s, isString := gatewayRead(m, path)
			want, present := referenceRead(env, path)
			name := strings.Join(path, ".")
			if !present {
				if raw != nil {
					t.Errorf("Parse(%q): the gateway reads %s = %s, encoding/json none", b, name, raw)
				}
				continue
			}
			sameValue(t, b, name, raw, want)
			if ws, ok := want.(string); ok != isString || ws != s {
				t.Errorf("Parse(%q): the gateway reads the string %s = %q (%v), encoding/json %#v", b, name, s, isString, want)
			}
		}
	})
}

// foldingRead is what a parser that matches names to fields regardless of
// case (Go's encoding/json into structs, as mcp-go's servers decode) reads
// of the members the gateway reads in the envelope and params.
type foldingRead struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  *struct {
		Name          json.RawMessage `json:"name"`
		URI           json.RawMessage `json:"uri"`
		Cursor        json.RawMessage `json:"cursor"`
		ProgressToken json.RawMessage `json:"progressToken"`
		RequestState  json.RawMessage `json:"requestState"`
		Arguments     *struct {
			Text json.RawMessage `json:"text"`
		} `json:"arguments"`
		Ref *struct {
			Type json.RawMessage `json:"type"`
			Name json.RawMessage `json:"name"`
		} `json:"ref"`
		Meta *struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
	Result *struct {
		NextCursor json.RawMessage `json:"nextCursor"`
		ResultType json.RawMessage `json:"resultType"`
	} `json:"result"`
}

// agreesWithFolding compares what the gateway reads in an accepted message
// with what a case-insensitive struct decoder reads.
func agreesWithFolding(t *testing.T, b []byte, m *Message) {
	t.Helper()
	var f foldingRead
	if json.Unmarshal(b, &f) != nil {
		return // a type the structs do not take (params that is no object...)
	}
	// same compares a member the gateway reads with what the folding
	// decoder read. A member the gateway does not see at all (only a
	// differently cased name was there) is a failure where Parse refuses
	// such names (strict: the vocabulary of vocabulary.go); elsewhere (a
	// tool's arguments, which the gateway checks against the tool's
	// schema; a result) the gateway reads no such member and fails closed.
	same := func(name string, got, want json.RawMessage, strict bool) {
		t.Helper()
		if len(want) == 0 || string(want) == "null" {
			return // absent, or null, which leaves a field as it was
		}
		if got == nil {
			if strict {
				t.Errorf("Parse(%q): a case-insensitive decoder reads %s = %s, the gateway none", b, name, want)
			}
			return
		}
		g, _ := decodeAny(got)
		w, _ := decodeAny(want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("Parse(%q): the gateway reads %s = %s, a case-insensitive decoder %s", b, name, got, want)
		}
	}
	same("method", AppendString(nil, m.Method), f.Method, true)
	same("id", m.ID, f.ID, true)
	if p := f.Params; p != nil {
		same("params.name", Get(m.Params, "name"), p.Name, true)
		same("params.uri", Get(m.Params, "uri"), p.URI, true)
		same("params.cursor", Get(m.Params, "cursor"), p.Cursor, true)
		same("params.progressToken", Get(m.Params, "progressToken"), p.ProgressToken, true)
		same("params.requestState", Get(m.Params, "requestState"), p.RequestState, true)
		// The objects the gateway reads in params: present to the gateway
		// whenever the folding decoder found them.
		for _, o := range []struct {
			name    string
			present bool
		}{{"arguments", p.Arguments != nil}, {"ref", p.Ref != nil}, {"_meta", p.Meta != nil}} {
			if o.present && Get(m.Params, o.name) == nil {
				t.Errorf("Parse(%q): a case-insensitive decoder reads params.%s, the gateway none", b, o.name)
			}
		}
		if p.Arguments != nil {
			same("params.arguments.text", Get(Get(m.Params, "arguments"), "text"), p.Arguments.Text, false)
		}
		if p.Ref != nil {
			same("params.ref.type", Get(Get(m.Params, "ref"), "type"), p.Ref.Type, true)
			same("params.ref.name", Get(Get(m.Params, "ref"), "name"), p.Ref.Name, true)
		}
		if p.Meta != nil {
			same("params._meta.progressToken", Get(Get(m.Params, "_meta"), "progressToken"), p.Meta.ProgressToken, true)
		}
	}
	if r := f.Result; r != nil {
		same("result.nextCursor", Get(m.Result, "nextCursor"), r.NextCursor, false)
		same("result.resultType", Get(m.Result, "resultType"), r.ResultType, false)
	}
}

// sameValue fails unless raw decodes to want.
func sameValue(t *testing.T, b []byte, name string, raw json.RawMessage, want any) {
	t.Helper()
	got, err := decodeAny(raw)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(%q): %s = %s (%v), encoding/json %#v", b, name, raw, err, want)
	}
}
