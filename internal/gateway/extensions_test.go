package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func TestExtensionsMerged(t *testing.T) {
	tests := []struct {
		name string
		caps []string // of servers s0, s1, ... in that (sorted) order
		want string
	}{
		{"none declared", []string{`{"tools":{}}`}, ``},
		{"unknown settings pass unchanged", []string{`{"extensions":{"io.x/a":{"deep":{"n":[1,2]}}}}`}, `{"io.x/a":{"deep":{"n":[1,2]}}}`},
		{"union, the first server's settings kept", []string{`{"extensions":{"io.x/a":{"v":1}}}`, `{"extensions":{"io.x/a":{"v":2},"io.x/b":{}}}`}, `{"io.x/a":{"v":1},"io.x/b":{}}`},
		{"malformed ignored", []string{`{"extensions":[1]}`, `{"extensions":{"io.x/n":null}}`}, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ups []Upstream
			for i, c := range tt.caps {
				ups = append(ups, &scripted{fakeUpstream: fakeUpstream{name: fmt.Sprint("s", i)}, caps: c})
			}
			g := gatewayWith(t, RouterOptions{}, ups...)
			_, res, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
			if werr != nil {
				t.Fatal(werr)
			}
			if got := string(wire.Get(wire.Get(res, "capabilities"), "extensions")); got != tt.want {
				t.Errorf("initialize capabilities.extensions = %s, want %s", got, tt.want)
			}
			disc := g.discover()
			if got := string(wire.Get(wire.Get(disc.Result, "capabilities"), "extensions")); got != tt.want {
				t.Errorf("server/discover capabilities.extensions = %s, want %s", got, tt.want)
			}
		})
	}
}

// A 2026-07-28 client that declares extensions calls a per-client server
// spoken to in the session era through a session made for its declared
// capabilities, shared with the clients declaring the same; a client
// declaring none takes the gateway's own session. The sessions close with
// the server.
func TestStatelessClientExtensionsReachSessionEraServer(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	shared := &fakeUpstream{name: "pc", tools: []string{tool("work")}}
	var mu sync.Mutex
	made := map[string]*fakeUpstream{}
	r.AddPerClient(shared, Hooks{}, func(caps json.RawMessage, _ Hooks) Upstream {
		up := &fakeUpstream{name: "pc", tools: []string{tool("work")}}
		mu.Lock()
		made[string(caps)] = up
		mu.Unlock()
		return up
	})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	call := func(id int, caps string) {
		t.Helper()
		m := msg(fmt.Sprint(id), "tools/call", `{"name":"work","_meta":{"`+MetaProtocolVersion+`":"`+StatelessVersion+`","`+MetaClientCapabilities+`":`+caps+`}}`)
		if rep := g.HandleStateless(context.Background(), m, nil); rep.Error != nil {
			t.Fatalf("call with capabilities %s: %s", caps, rep.Error)
		}
	}
	const withExt = `{"extensions":{"io.unknown/x":{"deep":[1,{"a":null}]}}}`
	call(1, withExt)
	call(2, withExt)
	call(3, `{"sampling":{}}`)
	call(4, `{"extensions":{}}`)
	mu.Lock()
	defer mu.Unlock()
	if len(made) != 1 || made[withExt] == nil {
		t.Fatalf("sessions made for capabilities %v, want one for %s", slices.Collect(maps.Keys(made)), withExt)
	}
	if got := len(made[withExt].calls); got != 2 {
		t.Errorf("the session for the declared extensions got %d calls, want 2", got)
	}
	if got := len(shared.calls); got != 2 {
		t.Errorf("the gateway's own session got %d calls, want 2 (the clients declaring no extension)", got)
	}
	srv := r.server("pc")
	if err := r.Remove("pc"); err != nil {
		t.Fatal(err)
	}
	srv.extSessions.mu.Lock()
	left, closed := len(srv.extSessions.ups), srv.extSessions.closed
	srv.extSessions.mu.Unlock()
	if left != 0 || !closed {
		t.Errorf("after the server's removal %d sessions for extensions are kept (closed %v)", left, closed)
	}
}
