package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

const foldTool = `{"name":"read_file","inputSchema":{"type":"object","properties":{` +
	`"path":{"type":"string"},` +
	`"options":{"type":"object","properties":{"mode":{"type":"string"},"kind":{"type":"string"}}},` +
	`"files":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"}}}},` +
	`"Same":{"type":"string"},"same":{"type":"string"}}}}`

// TestFoldedArgumentRefused: a tools/call argument that is a declared
// property but for case (ASCII case, the long s, the Kelvin sign,
// escaped), at the top or where the schema declares nested properties,
// is refused with -32600 naming it, with a guard or without, and the
// server never sees the call; declared spellings and undeclared names
// pass.
func TestFoldedArgumentRefused(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		up := &scripted{fakeUpstream: fakeUpstream{name: "fs", tools: []string{foldTool, tool("free")}}}
		g := gatewayWith(t, RouterOptions{}, up)
		guard := &denyGuard{}
		if guarded {
			g.Guard = guard
		}
		s := sessionWith(t, g, `{}`)
		for _, tc := range []struct{ args, path, want string }{
			{`{"PATH":"/etc/passwd"}`, "params.arguments.PATH", "path"},
			{`{"Path":"/etc/passwd"}`, "params.arguments.Path", "path"},
			{`{"pat\u0048":"/etc/passwd"}`, "params.arguments.patH", "path"},
			{"{\"pat\u0068\":\"/ok\",\"OPTIONS\":{}}", "params.arguments.OPTIONS", "options"},
			{`{"\u017fame":"x"}`, `params.arguments["ſame"]`, "Same"},
			{`{"options":{"Mode":"w"}}`, "params.arguments.options.Mode", "mode"},
			{`{"options":{"\u212aind":"w"}}`, "params.arguments.options[\"\u212aind\"]", "kind"},
			{`{"files":[{"path":"/tmp/a"},{"PATH":"/etc/passwd"}]}`, "params.arguments.files[1].PATH", "path"},
		} {
			reply := s.Handle(context.Background(), msg("1", "tools/call", `{"name":"read_file","arguments":`+tc.args+`}`), nil)
			werr := wire.DecodeError(reply.Error)
			want := `member ` + tc.path + ` is "` + tc.want + `" but for case, which some servers ignore and the gateway's policy does not; tool "read_file" declares "` + tc.want + `": spell it "` + tc.want + `"`
			if reply.Error == nil || werr.Code != wire.CodeInvalidRequest || werr.Message != want {
				t.Errorf("arguments %s: %s\nwant the message %s", tc.args, reply.Error, want)
			}
		}
		if n := len(up.requests()); n != 0 {
			t.Errorf("the server saw %d refused calls", n)
		}
		if guarded && len(guard.admitted) != 0 {
			t.Errorf("the guard decided %d refused calls", len(guard.admitted))
		}
		for _, args := range []string{
			`{"path":"/tmp/a"}`,
			`{"pat\u0068":"/tmp/a"}`,
			`{"path":"/tmp/a","Other":1,"OTHER":{"PATH":"x"}}`, // undeclared names: the tool's own
			`{"Same":"a","same":"b"}`,
			`{"options":{"mode":"r","Extra":1},"files":[{"path":"/a","X":1}],"Unknown":[{"PATH":1}]}`,
		} {
			reply := s.Handle(context.Background(), msg("2", "tools/call", `{"name":"read_file","arguments":`+args+`}`), nil)
			if reply.Error != nil {
				t.Errorf("arguments %s: %s", args, reply.Error)
			}
		}
		// A tool that declares no properties cannot be protected this way.
		if reply := s.Handle(context.Background(), msg("3", "tools/call", `{"name":"free","arguments":{"PATH":"/etc/passwd"}}`), nil); reply.Error != nil {
			t.Errorf("a tool without properties: %s", reply.Error)
		}
	}
}

// TestFoldedIn: the walk stops at maxFoldDepth and on values that do not
// match the schema's shape.
func TestFoldedIn(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"a":{"properties":{"b":{}}}}}`)
	for _, tc := range []struct{ value, path string }{
		{`{"a":{"B":1}}`, "x.a.B"},
		{`{"a":[{"B":1}]}`, ""}, // an array where the schema says object: no items
		{`{"a":"s"}`, ""},
		{`[1]`, ""},
	} {
		if got, _ := foldedIn(json.RawMessage(tc.value), schema, "x", 0); got != tc.path {
			t.Errorf("foldedIn(%s) = %q, want %q", tc.value, got, tc.path)
		}
	}
	if got, _ := foldedIn(json.RawMessage(`{"a":{"B":1}}`), schema, "x", maxFoldDepth); got != "" {
		t.Errorf("foldedIn past maxFoldDepth+1 found %q", got)
	}
}

// TestFoldedArgumentAllocs: the check of an ordinary call's arguments
// (plain names, flat values) allocates nothing.
func TestFoldedArgumentAllocs(t *testing.T) {
	m := msg("1", "tools/call", `{"name":"read_file","arguments":{"path":"/tmp/a","mode":"r","count":3}}`)
	gi := GuardItem{Kind: GuardTool, Server: "fs", Name: "read_file", Def: json.RawMessage(foldTool)}
	if n := testing.AllocsPerRun(100, func() {
		if werr := foldedArgument(m, gi); werr != nil {
			t.Fatal(werr)
		}
	}); n > 0 {
		t.Errorf("foldedArgument allocates %.0f times for an ordinary call, want 0", n)
	}
}
