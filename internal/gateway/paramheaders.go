package gateway

import (
	"encoding/json"
	"sync"
)

// ParamHeader is a tool argument a 2026-07-28 client mirrors into an
// Mcp-Param-<Name> header (the x-mcp-header extension of inputSchema).
type ParamHeader struct {
	Name string   // the header is "Mcp-Param-" + Name
	Path []string // property names from the arguments object to the value
}

type paramHeaderCache struct {
	once    sync.Once
	headers []ParamHeader
}

// ParamHeaders returns the argument headers of an exposed tool.
func (g *Gateway) ParamHeaders(tool string) []ParamHeader {
	it := g.Router.view(kindTools).byKey[tool]
	if it == nil {
		return nil
	}
	return it.paramHeaders()
}

// paramHeaders returns the argument headers of a tool's inputSchema.
func (it *item) paramHeaders() []ParamHeader {
	it.params.once.Do(func() {
		var def struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(it.def, &def) == nil {
			it.params.headers = collectParamHeaders(def.InputSchema, nil)
		}
	})
	return it.params.headers
}

// collectParamHeaders walks the properties chain of a schema (only
// properties: arrays, composition and $ref are not followed, as the
// specification requires).
func collectParamHeaders(schema json.RawMessage, path []string) []ParamHeader {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []ParamHeader
	for name, prop := range s.Properties {
		p := append(append([]string(nil), path...), name)
		var ann struct {
			Header string `json:"x-mcp-header"`
		}
		if json.Unmarshal(prop, &ann) == nil && ann.Header != "" {
			out = append(out, ParamHeader{Name: ann.Header, Path: p})
		}
		out = append(out, collectParamHeaders(prop, p)...)
	}
	return out
}
