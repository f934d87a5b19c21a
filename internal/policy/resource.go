package policy

import (
	"encoding/json"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// Forbids decides a use of an item quietly (no audit record, no count,
// nobody asked) and reports whether a forbid refuses it: a matching forbid,
// not the default. The gateway asks it of each listed resource and template
// a server could resolve a resource URI to (gateway.GuardItem.Also), and
// decides the call by the first one refused, so that a forbid of a
// resource or template holds for every URI the server could take for it.
func (g *Guard) Forbids(c *gateway.GuardCall) bool {
	set := g.Engine.Current()
	if set == nil {
		return false
	}
	req := g.request(c.GuardItem)
	req.Args, req.Time = c.Arguments, time.Now()
	if len(req.Args) == 0 || string(req.Args) == "null" {
		req.Args = json.RawMessage(`{}`)
	}
	d := set.Decide(req)
	return !d.Allow && !d.Default
}
