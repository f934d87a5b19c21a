package policy

import (
	"encoding/json"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Restricts decides a use of an item quietly (no audit record, no count,
// nobody asked) and reports how the policies hold it: Forbidden by a
// matching forbid (not the default), NeedsApproval by a matching permit's
// @requireApproval, else Unrestricted. The gateway asks it of each listed
// resource and template a server could resolve a resource URI to, and
// decides the call by the most restrictive, so that a forbid or an approval
// of a resource or template holds for every URI the server could take for
// it.
func (g *Guard) Restricts(c *gateway.GuardCall) gateway.Restriction {
	set := g.Engine.Current()
	if set == nil {
		return gateway.Unrestricted
	}
	req := g.request(c.GuardItem)
	req.Args, req.Time = c.Arguments, time.Now()
	if len(req.Args) == 0 || string(req.Args) == "null" {
		req.Args = json.RawMessage(`{}`)
	}
	switch d := set.Decide(req); {
	case !d.Allow && !d.Default:
		return gateway.Forbidden
	case d.Allow && d.Approval != "":
		return gateway.NeedsApproval
	}
	return gateway.Unrestricted
}
