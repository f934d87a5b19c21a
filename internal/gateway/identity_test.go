package gateway

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Through the gateway, every 2026-07-28 result names the gateway in _meta,
// as its server/discover does, whichever server answered; the rest of _meta
// is kept.
func TestStatelessResultsCarryTheGatewaysIdentity(t *testing.T) {
	tests := []struct{ name, result, want string }{
		{"the server's identity replaced",
			`{"content":[],"_meta":{"x":1,"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"}}}`,
			`{"content":[],"_meta":{"x":1,"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"t"}},"resultType":"complete"}`},
		{"a result without it (a session-era server's) given it",
			`{"content":[{"type":"text","text":"io.modelcontextprotocol/serverInfo"}]}`,
			`{"content":[{"type":"text","text":"io.modelcontextprotocol/serverInfo"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"t"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &statelessScripted{scripted{fakeUpstream: fakeUpstream{name: "m", tools: []string{tool("greet")}}}}
			f.handle = func(context.Context, string, json.RawMessage) (*wire.Response, error) {
				return &wire.Response{Result: json.RawMessage(tt.result)}, nil
			}
			g := gatewayWith(t, RouterOptions{}, f)
			m := msg(`1`, "tools/call", `{"name":"greet","_meta":{"`+MetaProtocolVersion+`":"`+StatelessVersion+`","`+MetaClientCapabilities+`":{}}}`)
			r := g.HandleStateless(context.Background(), m, nil)
			if string(r.Result) != tt.want {
				t.Errorf("result %s %s, want %s", r.Result, r.Error, tt.want)
			}
		})
	}
}
