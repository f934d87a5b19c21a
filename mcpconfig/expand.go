package mcpconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// value is a property's value, ready to go into a command line.
type value struct {
	text  string   // string, number (as written, without exponent), boolean
	list  []string // array
	array bool
}

// public returns v as Property.Default holds it.
func (v value) public(typ string) any {
	switch typ {
	case TypeArray:
		return v.list
	case TypeBoolean:
		return v.text == "true"
	case TypeNumber:
		return json.Number(v.text)
	}
	return v.text
}

// fromDefault turns a Property.Default back into a value.
func fromDefault(d any) value {
	switch d := d.(type) {
	case []string:
		return value{list: d, array: true}
	case bool:
		return value{text: strconv.FormatBool(d)}
	case json.Number:
		text, _ := formatNumber(string(d))
		return value{text: text}
	case string:
		return value{text: d}
	}
	return value{text: fmt.Sprint(d)}
}

// decodeValue decodes raw as a property of type typ. On failure msg says
// what raw must be, e.g. "must be a string".
func decodeValue(typ string, raw []byte) (v value, msg string) {
	switch typ {
	case TypeString:
		s, ok := jsonString(raw)
		if !ok {
			return v, "must be a string"
		}
		if strings.IndexByte(s, 0) >= 0 {
			return v, "must not contain a NUL character"
		}
		return value{text: s}, ""
	case TypeNumber:
		if kind(raw) != "number" {
			return v, "must be a number"
		}
		text, err := formatNumber(string(raw))
		if err != nil {
			return v, "is out of range for a number"
		}
		return value{text: text}, ""
	case TypeBoolean:
		var b bool
		if kind(raw) != "boolean" || json.Unmarshal(raw, &b) != nil {
			return v, "must be true or false"
		}
		return value{text: strconv.FormatBool(b)}, ""
	case TypeArray:
		list, _, ok := stringList(raw)
		if !ok {
			return v, "must be an array of strings"
		}
		for _, s := range list {
			if strings.IndexByte(s, 0) >= 0 {
				return v, "must not contain a NUL character"
			}
		}
		return value{list: list, array: true}, ""
	}
	return v, "has an unknown type " + strconv.Quote(typ)
}

// formatNumber writes a JSON number for a command line: as written when it
// has no exponent (so 1.50 stays 1.50 and big integers stay exact), else in
// plain decimal (1e3 becomes 1000).
func formatNumber(lit string) (string, error) {
	if !strings.ContainsAny(lit, "eE") {
		return lit, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return "", err
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}

// expand checks the properties given for server against the entry's
// declarations and returns the command line and env they make.
func (en *Entry) expand(server string, props map[string][]byte) (argv []string, env map[string]string, errs []error) {
	vals := make(map[string]value, len(en.Properties))
	for _, name := range slices.Sorted(maps.Keys(en.Properties)) {
		prop := en.Properties[name]
		raw, given := props[name]
		if !given {
			switch {
			case prop.Required:
				errs = append(errs, &Error{Server: server, Property: name, Message: fmt.Sprintf("property %q is required", name)})
			case prop.Default != nil:
				if v := fromDefault(prop.Default); !v.array || len(v.list) > 0 {
					vals[name] = v
				}
			}
			continue
		}
		v, msg := decodeValue(prop.Type, raw)
		switch {
		case msg != "":
			errs = append(errs, &Error{Server: server, Property: name, Message: fmt.Sprintf("property %q %s", name, msg)})
		case v.array && len(v.list) == 0 && prop.Required:
			errs = append(errs, &Error{Server: server, Property: name, Message: fmt.Sprintf("property %q must not be empty", name)})
		case v.array && len(v.list) == 0:
			// An empty optional array is unset: its group goes.
		default:
			vals[name] = v
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return expandCommand(en.Command, vals), expandEnv(en.Env, vals), nil
}

// expandCommand builds argv from the argument groups, dropping each group
// that names an unset property.
func expandCommand(groups [][]string, vals map[string]value) []string {
	var argv []string
	for _, g := range groups {
		if !allSet(g, vals) {
			continue
		}
		for _, arg := range g {
			if name, ok := wholePlaceholder(arg); ok && vals[name].array {
				argv = append(argv, vals[name].list...)
				continue
			}
			argv = append(argv, substitute(arg, vals))
		}
	}
	return argv
}

// expandEnv substitutes the env values, leaving out each variable that
// names an unset property.
func expandEnv(env map[string]string, vals map[string]value) map[string]string {
	if len(env) == 0 {
		return nil
	}
	out := make(map[string]string, len(env))
	for name, v := range env {
		if allSet([]string{v}, vals) {
			out[name] = substitute(v, vals)
		}
	}
	return out
}

func allSet(args []string, vals map[string]value) bool {
	for _, arg := range args {
		for _, name := range placeholders(arg) {
			if _, ok := vals[name]; !ok {
				return false
			}
		}
	}
	return true
}

// placeholders returns the names of the {{name}} placeholders in s.
func placeholders(s string) []string {
	var names []string
	for {
		_, rest, ok := strings.Cut(s, "{{")
		if !ok {
			return names
		}
		name, after, ok := strings.Cut(rest, "}}")
		if !ok {
			return names
		}
		names = append(names, name)
		s = after
	}
}

func wholePlaceholder(arg string) (string, bool) {
	name, ok := strings.CutPrefix(arg, "{{")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "}}")
	if !ok || strings.Contains(name, "{{") || strings.Contains(name, "}}") {
		return "", false
	}
	return name, true
}

// substitute replaces each {{name}} in s by its value's text.
func substitute(s string, vals map[string]value) string {
	var b strings.Builder
	for {
		before, rest, ok := strings.Cut(s, "{{")
		if !ok {
			break
		}
		name, after, ok := strings.Cut(rest, "}}")
		if !ok {
			break
		}
		b.WriteString(before)
		b.WriteString(vals[name].text)
		s = after
	}
	b.WriteString(s)
	return b.String()
}
