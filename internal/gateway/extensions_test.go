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
// perClientServer is a gateway with one per-client server "pc" (tool
// "work"): its shared upstream, and the ones made for capability sets.
// made is written under mu.
func perClientServer(t *testing.T) (r *Router, g *Gateway, shared *fakeUpstream, made map[string]*fakeUpstream, mu *sync.Mutex) {
	t.Helper()
	r = NewRouter(RouterOptions{})
	g = New(r, Info{})
	shared = &fakeUpstream{name: "pc", tools: []string{tool("work")}}
	made, mu = map[string]*fakeUpstream{}, &sync.Mutex{}
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
	return r, g, shared, made, mu
}

func TestStatelessClientExtensionsReachSessionEraServer(t *testing.T) {
	r, g, shared, made, mu := perClientServer(t)
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

// One client declaring ever new capability sets fills only its share of
// the sessions made for them: past it its calls take the gateway's own
// session, and another client's set still gets a session of its own.
func TestExtensionSessionsHaveAShareEachClient(t *testing.T) {
	_, g, shared, made, mu := perClientServer(t)
	call := func(client string, set int) {
		t.Helper()
		caps := fmt.Sprintf(`{"extensions":{"io.example/x%d":{}}}`, set)
		m := msg(fmt.Sprint(set), "tools/call", `{"name":"work","_meta":{"`+MetaProtocolVersion+`":"`+StatelessVersion+`","`+
			MetaClientCapabilities+`":`+caps+`,"`+MetaClientInfo+`":{"name":"`+client+`","version":"1"}}}`)
		if rep := g.HandleStateless(context.Background(), m, nil); rep.Error != nil {
			t.Fatalf("%s's call with capability set %d: %s", client, set, rep.Error)
		}
	}
	for set := range maxExtensionSessionsPerClient + 2 {
		call("greedy", set)
	}
	mu.Lock()
	greedy := len(made)
	mu.Unlock()
	if greedy != maxExtensionSessionsPerClient {
		t.Errorf("one client's %d capability sets got %d sessions, want its share of %d", maxExtensionSessionsPerClient+2, greedy, maxExtensionSessionsPerClient)
	}
	if got := len(shared.calls); got != 2 {
		t.Errorf("the gateway's own session got %d of the greedy client's calls, want the 2 past its share", got)
	}
	call("other", 100)
	mu.Lock()
	other := made[`{"extensions":{"io.example/x100":{}}}`]
	mu.Unlock()
	if other == nil || len(other.calls) != 1 {
		t.Fatalf("another client's capability set got no session of its own once the first had its share")
	}
	// A client using a set another client made is not counted for it.
	call("other", 0)
	if got := len(shared.calls); got != 2 {
		t.Errorf("a call with a set whose session exists went to the gateway's own session (%d calls there)", got)
	}
	if n := g.QuotaStatus().Refused[LimitExtensionSessionsPerClient]; n != 2 {
		t.Errorf("refusals at %s: %d, want 2", LimitExtensionSessionsPerClient, n)
	}

	// The bound of the whole server still holds: clients with their shares
	// fill it, and one more set takes the gateway's own session.
	for c := 1; len(made) < maxExtensionSessions; c++ {
		for set := range maxExtensionSessionsPerClient {
			call(fmt.Sprintf("client-%d", c), 1000*c+set)
			mu.Lock()
			n := len(made)
			mu.Unlock()
			if n == maxExtensionSessions {
				break
			}
		}
	}
	before := len(shared.calls)
	call("late", 99999)
	if got := len(shared.calls); got != before+1 {
		t.Errorf("with %d sessions made a new set did not take the gateway's own session", maxExtensionSessions)
	}
	if n := g.QuotaStatus().Refused[LimitExtensionSessions]; n != 1 {
		t.Errorf("refusals at %s: %d, want 1", LimitExtensionSessions, n)
	}
}
