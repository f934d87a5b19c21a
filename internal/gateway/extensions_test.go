package gateway

import (
	"encoding/json"
	"fmt"
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
