package wire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in                   string
		req, notif, response bool
		wantErr              bool
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, req: true},
		{in: `{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":[1,2]}}`, req: true},
		{in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, notif: true},
		{in: `{"jsonrpc":"2.0","id":7,"result":{}}`, response: true},
		{in: `{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"m"}}`, response: true},
		{in: `{"jsonrpc":"1.0","id":1,"method":"x"}`, wantErr: true},
		{in: `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, wantErr: true},
		{in: `{"jsonrpc":"2.0","id":1}`, wantErr: true},
		{in: `not json`, wantErr: true},
		{in: ``, wantErr: true},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("Parse(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if m.IsRequest() != tt.req || m.IsNotification() != tt.notif || m.IsResponse() != tt.response {
			t.Errorf("Parse(%s): request=%v notification=%v response=%v", tt.in, m.IsRequest(), m.IsNotification(), m.IsResponse())
		}
	}
}

func TestSetStringKeepsEverythingElse(t *testing.T) {
	in := `{"inputSchema":{"name":"inner","$defs":{}}, "name" : "echo","x-unknown":[1,{"name":"y"}]}`
	out, err := SetString([]byte(in), "name", "srv_echo")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inputSchema":{"name":"inner","$defs":{}}, "name" : "srv_echo","x-unknown":[1,{"name":"y"}]}`
	if string(out) != want {
		t.Errorf("SetString =\n%s\nwant\n%s", out, want)
	}
	if s, _ := GetString(out, "name"); s != "srv_echo" {
		t.Errorf("GetString = %q", s)
	}
	if _, err := SetString([]byte(`{"a":1}`), "name", "x"); err == nil {
		t.Error("SetString on an object without the member: want error")
	}
}

func TestAppend(t *testing.T) {
	got := string(AppendResult(nil, json.RawMessage(`"id-1"`), json.RawMessage(`{"tools":[]}`)))
	if want := `{"jsonrpc":"2.0","id":"id-1","result":{"tools":[]}}`; got != want {
		t.Errorf("AppendResult = %s, want %s", got, want)
	}
	got = string(AppendError(nil, nil, &Error{Code: CodeInvalidRequest, Message: `bad "x"`}))
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"x\""}}`; got != want {
		t.Errorf("AppendError = %s, want %s", got, want)
	}
	got = string(AppendIntRequest(nil, 42, "tools/call", json.RawMessage(`{"name":"e"}`)))
	if want := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"e"}}`; got != want {
		t.Errorf("AppendIntRequest = %s, want %s", got, want)
	}
	got = string(AppendNotification(nil, "notifications/initialized", nil))
	if want := `{"jsonrpc":"2.0","method":"notifications/initialized"}`; got != want {
		t.Errorf("AppendNotification = %s, want %s", got, want)
	}
}

func TestSetAndGet(t *testing.T) {
	tests := []struct{ in, key, value, want string }{
		{`{"a":1,"_meta":{"x":2}}`, "_meta", `{"progressToken":"p1"}`, `{"a":1,"_meta":{"progressToken":"p1"}}`},
		{`{"a":1}`, "_meta", `{}`, `{"a":1,"_meta":{}}`},
		{`{}`, "k", `"v"`, `{"k":"v"}`},
		{``, "k", `1`, `{"k":1}`},
		{` { } `, "k", `1`, ` { "k":1} `},
	}
	for _, tt := range tests {
		got, err := Set([]byte(tt.in), tt.key, json.RawMessage(tt.value))
		if err != nil || string(got) != tt.want {
			t.Errorf("Set(%s, %s, %s) = %s, %v; want %s", tt.in, tt.key, tt.value, got, err, tt.want)
		}
	}
	if got := Get([]byte(`{"a":{"b":[1]},"c":2}`), "a"); string(got) != `{"b":[1]}` {
		t.Errorf("Get = %s", got)
	}
	if got := Get([]byte(`{"a":1}`), "z"); got != nil {
		t.Errorf("Get of a missing member = %s", got)
	}
}

func TestParseAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not exact under the race detector")
	}
	msg := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":3}}}`)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Parse(msg); err != nil {
			t.Fatal(err)
		}
	})
	// The message itself: the members stay in msg, and an MCP method's name
	// is a constant.
	if allocs > 1 {
		t.Errorf("Parse allocates %.0f times per message, want at most 1", allocs)
	}
	var m Message
	if n := testing.AllocsPerRun(100, func() {
		if err := ParseInto(&m, msg); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ParseInto allocates %.0f times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { Member(msg, "params") }); n != 0 {
		t.Errorf("Member allocates %.0f times, want 0", n)
	}
	// A missing _meta, then a member of it: what a call without a progress
	// token looks up.
	if n := testing.AllocsPerRun(100, func() { Get(Get(msg, "result"), "progressToken") }); n != 0 {
		t.Errorf("Get of nil allocates %.0f times, want 0", n)
	}
}

func TestParseMethod(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, "tools/call"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call2"}`, "tools/call2"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, "tools/call"},
		{`{"jsonrpc":"2.0","method":"x\u00e9"}`, "xé"},
		{`{"method":"ping", "id":"a" ,"jsonrpc":"2\u002e0"}`, "ping"},
	} {
		m, err := Parse([]byte(tt.in))
		if err != nil || m.Method != tt.want {
			t.Errorf("Parse(%s): method %q, %v; want %q", tt.in, m.Method, err, tt.want)
		}
	}
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":7}`)); err == nil {
		t.Error("a method that is no string: want an error")
	}
	// A repeated member is refused, not resolved (see TestParseDuplicates).
	var dup *DuplicateError
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`)); !errors.As(err, &dup) || dup.Path != "id" {
		t.Errorf("duplicate id: %v, want a *DuplicateError for id", err)
	}
}
