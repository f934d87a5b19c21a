package gateway

import (
	"context"
	"encoding/json"
	"testing"
)

// hooksOf returns hooks bound to an added server, as if its upstream had
// been built with them.
func hooksOf(g *Gateway, name string) Hooks {
	h := g.UpstreamHooks(name)
	h.bind(g.Router.server(name))
	return h
}

// Hooks hold the server they were added with: once it is removed, what
// its upstream still sends is dropped, even after a server of the same
// name is added again, whose own hooks route to it.
func TestHooksHoldTheirServer(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{Name: "gw", Version: "t"})
	t.Cleanup(func() { g.Close(); _ = r.Close() })

	before := g.UpstreamHooks("a")
	if _, werr := before.OnRequest(context.Background(), "ping", nil); werr == nil {
		t.Error("hooks not yet bound to a server answered a request")
	}
	r.AddShared(&fakeUpstream{name: "a", tools: []string{tool("x")}}, before)
	if res, werr := before.OnRequest(context.Background(), "ping", nil); werr != nil || string(res) != `{}` {
		t.Fatalf("bound hooks: ping = %s, %v; want {}", res, werr)
	}
	if err := r.Remove("a"); err != nil {
		t.Fatal(err)
	}
	after := g.UpstreamHooks("a")
	r.AddPerClient(&fakeUpstream{name: "a", tools: []string{tool("y")}}, after, func(json.RawMessage, Hooks) Upstream { return nil })
	if _, werr := before.OnRequest(context.Background(), "ping", nil); werr == nil {
		t.Error("the removed server's hooks answered a request: a message of its upstream went to the new server of that name")
	}
	if res, werr := after.OnRequest(context.Background(), "ping", nil); werr != nil || string(res) != `{}` {
		t.Errorf("the new server's hooks: ping = %s, %v; want {}", res, werr)
	}
}
