package upstream

import (
	"encoding/json"
	"slices"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// What both transports do for a server of the 2026-07-28 era: the request
// _meta that stands in for initialize, and the discovery's result.

// StatelessVersion is the protocol version of the stateless era, which a
// server may speak instead of the session era.
const StatelessVersion = wire.StatelessVersion

var statelessVersionJSON = json.RawMessage(`"` + StatelessVersion + `"`)

// statelessMeta returns params with the 2026-07-28 request _meta filled in
// where the caller left it out (a 2026-07-28 client's request has it all
// and is sent as it is).
func statelessMeta(params, clientInfo, capabilities json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	changed := false
	for _, kv := range [...]struct {
		key   string
		value json.RawMessage
	}{
		{"io.modelcontextprotocol/protocolVersion", statelessVersionJSON},
		{"io.modelcontextprotocol/clientInfo", clientInfo},
		{"io.modelcontextprotocol/clientCapabilities", capabilities},
	} {
		if wire.Get(meta, kv.key) == nil {
			m, err := wire.Set(meta, kv.key, kv.value)
			if err != nil {
				return params
			}
			meta, changed = m, true
		}
	}
	if !changed {
		return params
	}
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// requestMeta is the whole 2026-07-28 request _meta of a gateway with
// clientInfo and capabilities, as statelessMeta builds it for params
// without one.
func requestMeta(clientInfo, capabilities json.RawMessage) json.RawMessage {
	b := []byte(`{"io.modelcontextprotocol/protocolVersion":`)
	b = append(b, statelessVersionJSON...)
	b = append(b, `,"io.modelcontextprotocol/clientInfo":`...)
	b = append(b, clientInfo...)
	b = append(b, `,"io.modelcontextprotocol/clientCapabilities":`...)
	b = append(b, capabilities...)
	return append(b, '}')
}

// discovered reads the answer to server/discover: the initialize result
// the gateway keeps for a server that speaks 2026-07-28 (its version,
// capabilities, serverInfo and instructions), or false when it does not.
func discovered(resp wire.Response) (json.RawMessage, bool) {
	if resp.Error != nil {
		return nil, false
	}
	var res struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if json.Unmarshal(resp.Result, &res) != nil || !slices.Contains(res.SupportedVersions, StatelessVersion) {
		return nil, false
	}
	init := map[string]any{"protocolVersion": StatelessVersion, "capabilities": res.Capabilities}
	if res.Meta.ServerInfo != nil {
		init["serverInfo"] = res.Meta.ServerInfo
	}
	if res.Instructions != "" {
		init["instructions"] = res.Instructions
	}
	out, err := json.Marshal(init)
	return out, err == nil
}
