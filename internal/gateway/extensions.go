package gateway

import (
	"encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// mergeExtensions adds the extensions a server declares
// (capabilities.extensions, by identifier) to the gateway's merged
// capabilities, each one's settings as the server wrote them. Servers come
// in sorted order; for an identifier two servers declare, the first one's
// settings are kept. The gateway does not need to know an extension to pass
// it: what it does not rewrite travels unchanged.
func mergeExtensions(caps map[string]any, init json.RawMessage) {
	offered := wire.Get(wire.Get(init, "capabilities"), "extensions")
	if len(offered) == 0 || offered[0] != '{' {
		return
	}
	merged, _ := caps["extensions"].(map[string]json.RawMessage)
	wire.EachMember(offered, func(name []byte, value json.RawMessage) bool {
		if string(value) == "null" {
			return true
		}
		if merged == nil {
			merged = map[string]json.RawMessage{}
			caps["extensions"] = merged
		}
		if _, taken := merged[string(name)]; !taken {
			merged[string(name)] = append(json.RawMessage(nil), value...)
		}
		return true
	})
}
