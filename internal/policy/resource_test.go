package policy

import (
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Restricts tells a matching forbid from the default (under deny by default
// a template no permit names is not forbidden: a permit of the URI is
// enough; a forbidden one is, whatever the default), and a permit that
// requires approval from one that does not.
func TestGuardRestricts(t *testing.T) {
	for _, def := range []Default{DefaultPermit, DefaultDeny} {
		set, err := Parse(def, Source{Name: "p.cedar", Text: []byte(`@id("no-secret")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"notes://secret");
@id("no-profiles")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"users://{id}/profile")
  when { !(context.args has id) || context.args.id != "public" };
permit(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"notes://public");
@id("ask-for-drafts")
@requireApproval("drafts are private")
permit(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"drafts://{id}");`)})
		if err != nil {
			t.Fatal(err)
		}
		g := &Guard{Engine: NewEngine(set), Principal: "default"}
		for _, c := range []struct {
			name, args string
			want       gateway.Restriction
		}{
			{"notes://secret", "", gateway.Forbidden},
			{"notes://public", "", gateway.Unrestricted},
			{"notes://other", "", gateway.Unrestricted}, // the default decides, not a forbid
			{"users://{id}/profile", "", gateway.Forbidden},
			{"users://{id}/profile", `{"id":"public"}`, gateway.Unrestricted},
			{"drafts://{id}", "", gateway.NeedsApproval},
		} {
			call := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Server: "s", Name: c.name},
				Method: "resources/read", Arguments: []byte(c.args)}
			if got := g.Restricts(call); got != c.want {
				t.Errorf("default %v: Restricts(%s %s) = %v, want %v", def, c.name, c.args, got, c.want)
			}
		}
	}
	if (&Guard{Engine: NewEngine(nil)}).Restricts(&gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Name: "x"}}) != gateway.Unrestricted {
		t.Error("without policies nothing is restricted")
	}
}
