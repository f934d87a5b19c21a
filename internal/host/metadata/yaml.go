package metadata

import (
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON turns a server.yaml into the JSON of the same server.json;
// ok is false when data is not a YAML mapping (then it is read as JSON,
// whose error says what is wrong).
// Booleans and nulls stay what they are; every other scalar becomes a
// string, since every other field of a server.json is one (an unquoted
// `version: 1.10` is the string "1.10", not the number 1.1).
func yamlToJSON(data []byte) (_ []byte, ok bool, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		var v any
		jsonErr := json.Unmarshal(data, &v)
		return nil, false, fmt.Errorf("metadata: not a server.json or registry entry (a JSON object: %v), nor a server.yaml (%v)", jsonErr, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, nil
	}
	v, err := yamlValue(doc.Content[0])
	if err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(v)
	return b, err == nil, err
}

func yamlValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return yamlValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("metadata: line %d: a key must be a plain string", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("metadata: line %d: key %q is given twice", k.Line, k.Value)
			}
			val, err := yamlValue(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := yamlValue(c)
			if err != nil {
				return nil, err
			}
			list = append(list, val)
		}
		return list, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("metadata: line %d: %v", n.Line, err)
			}
			return b, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("metadata: line %d: unexpected YAML node", n.Line)
}
