package policy

import (
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Forbids tells a matching forbid from the default: under deny by default
// a template no permit names is not forbidden (a permit of the URI is
// enough), a forbidden one is, whatever the default.
func TestGuardForbids(t *testing.T) {
	for _, def := range []Default{DefaultPermit, DefaultDeny} {
		set, err := Parse(def, Source{Name: "p.cedar", Text: []byte(`@id("no-secret")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"notes://secret");
@id("no-profiles")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"users://{id}/profile")
  when { !(context.args has id) || context.args.id != "public" };
permit(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"notes://public");`)})
		if err != nil {
			t.Fatal(err)
		}
		g := &Guard{Engine: NewEngine(set), Principal: "default"}
		for _, c := range []struct {
			name, args string
			want       bool
		}{
			{"notes://secret", "", true},
			{"notes://public", "", false},
			{"notes://other", "", false}, // the default decides, not a forbid
			{"users://{id}/profile", "", true},
			{"users://{id}/profile", `{"id":"public"}`, false},
		} {
			call := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Server: "s", Name: c.name},
				Method: "resources/read", Arguments: []byte(c.args)}
			if got := g.Forbids(call); got != c.want {
				t.Errorf("default %v: Forbids(%s %s) = %v, want %v", def, c.name, c.args, got, c.want)
			}
		}
	}
	if (&Guard{Engine: NewEngine(nil)}).Forbids(&gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Name: "x"}}) {
		t.Error("without policies nothing is forbidden")
	}
}
