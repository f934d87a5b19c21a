package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// identifier matches the names a program may write after a dot.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// accessor is how a program reaches a property: .name, or ["name"].
func accessor(name string) string {
	if identifier.MatchString(name) {
		return "." + name
	}
	b, _ := json.Marshal(name)
	return "[" + string(b) + "]"
}

// Call is how a program calls t: servers.<server>.<tool>.
func (t Tool) Call() string { return "servers" + accessor(t.Server) + accessor(t.Name) }

// maxSchemaDepth bounds how deep a signature describes nested objects.
const maxSchemaDepth = 4

// Signature is t as a typed function, TypeScript-like: its arguments'
// object type from inputSchema (an optional property with "?"), its
// value's from outputSchema (else any), after its description's first
// line as a comment.
func (t Tool) Signature() string {
	var def struct {
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	_ = json.Unmarshal(t.Def, &def)
	var b strings.Builder
	if line := firstLine(def.Description, 200); line != "" {
		fmt.Fprintf(&b, "// %s\n", line)
	}
	in := "args: " + schemaType(def.InputSchema, 0)
	if in == "args: any" || in == "args: object" {
		in = "args?: {}"
	}
	out := "any"
	if len(def.OutputSchema) > 0 {
		out = schemaType(def.OutputSchema, 0)
	}
	fmt.Fprintf(&b, "%s(%s): Promise<%s>", t.Call(), in, out)
	return b.String()
}

type schema struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Items      json.RawMessage            `json:"items"`
	Enum       []json.RawMessage          `json:"enum"`
	Const      json.RawMessage            `json:"const"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
	Additional json.RawMessage            `json:"additionalProperties"`
}

// schemaType is a JSON schema as a type: string, number, boolean, null,
// T[], {a: T, b?: T}, a union of enum values; any where it cannot tell.
func schemaType(raw json.RawMessage, depth int) string {
	var s schema
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "any"
	}
	switch {
	case s.Const != nil:
		return string(s.Const)
	case len(s.Enum) > 0:
		parts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			parts[i] = string(e)
		}
		return strings.Join(parts, " | ")
	case len(s.AnyOf) > 0 || len(s.OneOf) > 0:
		var parts []string
		for _, sub := range append(s.AnyOf, s.OneOf...) {
			if t := schemaType(sub, depth+1); !slices.Contains(parts, t) {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, " | ")
	}
	var types []string
	if err := json.Unmarshal(s.Type, &types); err != nil {
		var one string
		if json.Unmarshal(s.Type, &one) == nil {
			types = []string{one}
		}
	}
	if len(types) == 0 && s.Properties != nil {
		types = []string{"object"}
	}
	if len(types) == 0 {
		return "any"
	}
	parts := make([]string, 0, len(types))
	for _, t := range types {
		parts = append(parts, typeNamed(t, s, depth))
	}
	return strings.Join(parts, " | ")
}

func typeNamed(t string, s schema, depth int) string {
	switch t {
	case "string", "boolean", "null":
		return t
	case "integer", "number":
		return "number"
	case "array":
		item := schemaType(s.Items, depth+1)
		if strings.ContainsAny(item, "| ") && !strings.HasPrefix(item, "{") {
			item = "(" + item + ")"
		}
		return item + "[]"
	case "object":
		if depth >= maxSchemaDepth {
			return "object"
		}
		if len(s.Properties) == 0 {
			if len(s.Additional) > 0 && string(s.Additional) != "true" && string(s.Additional) != "false" {
				return "{[key: string]: " + schemaType(s.Additional, depth+1) + "}"
			}
			return "object"
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		// Required properties first, in the schema's order of "required".
		slices.SortStableFunc(names, func(a, b string) int {
			ia, ib := slices.Index(s.Required, a), slices.Index(s.Required, b)
			switch {
			case ia >= 0 && ib >= 0:
				return ia - ib
			case ia >= 0:
				return -1
			case ib >= 0:
				return 1
			}
			return 0
		})
		parts := make([]string, len(names))
		for i, n := range names {
			key := n
			if !identifier.MatchString(n) {
				b, _ := json.Marshal(n)
				key = string(b)
			}
			if !slices.Contains(s.Required, n) {
				key += "?"
			}
			parts[i] = key + ": " + schemaType(s.Properties[n], depth+1)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "any"
}

// firstLine is the first line of s, at most max bytes.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}
