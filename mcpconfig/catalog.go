package mcpconfig

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Catalog is a set of servers known by name. It is immutable and safe for
// concurrent use; the zero value is an empty catalog.
type Catalog struct {
	entries map[string]*Entry
}

// Entry is one catalog entry. In a catalog file it is the JSON object
//
//	{"description": ..., "command": ..., "env": ..., "install": ..., "properties": ...}
//
// of which env, install and properties may be left out.
type Entry struct {
	Name        string `json:"-"`
	Description string `json:"description"`
	// Command is a list of argument groups. A "{{prop}}" in an argument is
	// replaced by the property's value; a group naming a property that is
	// unset (optional, not given, no default) is dropped whole, so a flag
	// and its value come and go together; an argument that is exactly
	// "{{prop}}" of an array property becomes one argument per item.
	Command [][]string `json:"command"`
	// Env is added to the server's environment. A value may hold
	// "{{prop}}" of a string, number or boolean property; a variable naming
	// an unset property is left out.
	Env map[string]string `json:"env,omitempty"`
	// Install is the argv of each command `mcp-gateway pull` runs, e.g.
	// ["uv","tool","install","arxiv-mcp-server"].
	Install [][]string `json:"install,omitempty"`
	// Properties are what an mcp object's entry for this server may hold
	// (besides "envs"), keyed by name.
	Properties map[string]Property `json:"properties,omitempty"`
}

// Property declares one property of a catalog entry.
type Property struct {
	// Type is "string", "number", "boolean" or "array" (of strings).
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Required properties must be given; they have no default.
	Required bool `json:"required,omitempty"`
	// Default is used when the property is not given: a string, a
	// json.Number, a bool or a []string, as Type says; nil for none.
	Default any `json:"default,omitempty"`
}

// Property types.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
)

// DefaultCatalogPath is where the gateway looks for a catalog override file.
const DefaultCatalogPath = "/etc/mcp-gateway/catalog.json"

// builtinFile names the embedded catalog in errors.
const builtinFile = "(built in)"

//go:embed catalog.json
var builtinJSON []byte

var builtin = sync.OnceValue(func() *Catalog {
	c, err := parseCatalog(builtinFile, builtinJSON)
	if err != nil {
		panic("mcpconfig: the built-in catalog is broken: " + err.Error())
	}
	return c
})

// Builtin returns the catalog compiled into the program (catalog.json in
// this package): duckduckgo, arxiv, fetch, time, filesystem, memory and
// sequentialthinking.
func Builtin() *Catalog { return builtin() }

// LoadCatalog returns the built-in catalog merged with the override file at
// path, which has the same format: its entries are added, or replace
// built-in entries of the same name whole. path "" means no file, and so
// does a file that does not exist. A file that cannot be read or is not a
// valid catalog is an error (a *CatalogError) naming the file, and the entry
// and property at fault where there is one.
func LoadCatalog(path string) (*Catalog, error) {
	base := Builtin()
	if path == "" {
		return base, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		cause := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return nil, &CatalogError{File: path, Message: "cannot read the file: " + cause.Error(), Err: err}
	}
	over, err := parseCatalog(path, data)
	if err != nil {
		return nil, err
	}
	merged := &Catalog{entries: maps.Clone(base.entries)}
	maps.Copy(merged.entries, over.entries)
	return merged, nil
}

// Names returns the names of the catalog's entries, sorted.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.entries))
}

// Lookup returns a copy of the entry called name.
func (c *Catalog) Lookup(name string) (*Entry, bool) {
	en := c.lookup(name)
	if en == nil {
		return nil, false
	}
	return en.clone(), true
}

func (c *Catalog) lookup(name string) *Entry {
	if c == nil {
		return nil
	}
	return c.entries[name]
}

func (en *Entry) clone() *Entry {
	cp := *en
	cp.Command = cloneGroups(en.Command)
	cp.Install = cloneGroups(en.Install)
	cp.Env = maps.Clone(en.Env)
	if en.Properties != nil {
		cp.Properties = make(map[string]Property, len(en.Properties))
		for name, p := range en.Properties {
			if list, ok := p.Default.([]string); ok {
				p.Default = slices.Clone(list)
			}
			cp.Properties[name] = p
		}
	}
	return &cp
}

func cloneGroups(groups [][]string) [][]string {
	if groups == nil {
		return nil
	}
	cp := make([][]string, len(groups))
	for i, g := range groups {
		cp[i] = slices.Clone(g)
	}
	return cp
}

// parseCatalog parses and validates a catalog file's contents.
func parseCatalog(file string, data []byte) (*Catalog, error) {
	fileErr := func(msg string, err error) error { return &CatalogError{File: file, Message: msg, Err: err} }
	if strings.TrimSpace(string(data)) == "" {
		return nil, fileErr("the file is empty; want a JSON object keyed by entry name", nil)
	}
	if err := checkSyntax(data); err != nil {
		if off, ok := syntaxOffset(err); ok {
			line, col := lineColumn(data, off)
			return nil, fileErr(fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err), err)
		}
		return nil, fileErr("invalid JSON: "+err.Error(), err)
	}
	if kind(data) != "object" {
		return nil, fileErr("the file must hold a JSON object keyed by entry name, not "+describe(data), nil)
	}
	ms, err := members(data)
	if err != nil {
		return nil, fileErr("invalid JSON: "+err.Error(), err)
	}
	c := &Catalog{entries: make(map[string]*Entry, len(ms))}
	var errs []error
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			errs = append(errs, &CatalogError{File: file, Entry: m.key, Message: "the entry is given more than once"})
			continue
		}
		seen[m.key] = true
		en, err := parseEntry(file, m.key, m.value)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.entries[m.key] = en
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	return c, nil
}

// entryParser parses one catalog entry; its first problem is kept in err.
type entryParser struct {
	file, name string
	err        *CatalogError
}

func (p *entryParser) fail(prop, format string, args ...any) {
	if p.err == nil {
		p.err = &CatalogError{File: p.file, Entry: p.name, Property: prop, Message: fmt.Sprintf(format, args...)}
	}
}

func parseEntry(file, name string, raw []byte) (*Entry, error) {
	if name == "" {
		return nil, &CatalogError{File: file, Message: "an entry name is empty"}
	}
	if msg := entryNameProblem(name); msg != "" {
		return nil, &CatalogError{File: file, Entry: name, Message: msg}
	}
	p := &entryParser{file: file, name: name}
	if kind(raw) != "object" {
		p.fail("", "the entry must be a JSON object with description and command, not %s", describe(raw))
		return nil, p.err
	}
	ms, err := members(raw)
	if err != nil {
		return nil, &CatalogError{File: file, Entry: name, Message: "invalid JSON: " + err.Error(), Err: err}
	}
	en := &Entry{Name: name}
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.key] {
			p.fail("", "field %q is given more than once", m.key)
		}
		seen[m.key] = true
		if isNull(m.value) {
			continue
		}
		switch m.key {
		case "description":
			en.Description = p.description(m.value)
		case "command":
			en.Command = p.groups("command", m.value, `[["uvx","arxiv-mcp-server"],["--storage-path","{{storagePath}}"]]`)
		case "env":
			en.Env = p.env(m.value)
		case "install":
			en.Install = p.groups("install", m.value, `[["uv","tool","install","arxiv-mcp-server"]]`)
		case "properties":
			en.Properties = p.properties(m.value)
		default:
			p.fail("", "unknown field %q (an entry has description, command, env, install, properties)", m.key)
		}
	}
	if p.err == nil {
		p.validate(en)
	}
	if p.err != nil {
		return nil, p.err
	}
	return en, nil
}

// entryNameProblem applies the server name rules to a non-empty catalog
// entry name.
func entryNameProblem(name string) string {
	switch {
	case len(name) > MaxNameLen:
		return fmt.Sprintf("the name is %d bytes long; at most %d are allowed", len(name), MaxNameLen)
	case strings.ContainsFunc(name, unicode.IsControl):
		return "the name contains a control character"
	case strings.HasPrefix(name, githubPrefix):
		return fmt.Sprintf("a name must not start with %q, which names GitHub servers", githubPrefix)
	}
	return ""
}

func (p *entryParser) description(raw []byte) string {
	s, ok := jsonString(raw)
	if !ok || strings.TrimSpace(s) == "" {
		p.fail("", `field "description" must be a non-blank string`)
	}
	return s
}

// groups parses a list of non-empty lists of strings (command or install).
func (p *entryParser) groups(field string, raw []byte, example string) [][]string {
	bad := func() [][]string {
		p.fail("", "field %q must be a non-empty list of non-empty lists of strings, e.g. %s", field, example)
		return nil
	}
	if kind(raw) != "array" {
		return bad()
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return bad()
	}
	groups := make([][]string, 0, len(items))
	for _, item := range items {
		g, _, ok := stringList(item)
		if !ok || len(g) == 0 {
			return bad()
		}
		groups = append(groups, g)
	}
	return groups
}

func (p *entryParser) env(raw []byte) map[string]string {
	if kind(raw) != "object" {
		p.fail("", `field "env" must be an object of environment variable names to strings, not %s`, describe(raw))
		return nil
	}
	ms, _ := members(raw)
	env := make(map[string]string, len(ms))
	for _, m := range ms {
		if !isEnvName(m.key) {
			p.fail("", `field "env": %q is not a valid name; use letters, digits and "_", not starting with a digit`, m.key)
			return nil
		}
		v, ok := jsonString(m.value)
		if !ok {
			p.fail("", `field "env": variable %q must be a string, not %s`, m.key, describe(m.value))
			return nil
		}
		env[m.key] = v
	}
	return env
}

// reservedProps are the names an mcp object's entries use for themselves.
var reservedProps = []string{"envs", "runCmd", "run_cmd", "installCmd", "install_cmd"}

func (p *entryParser) properties(raw []byte) map[string]Property {
	if kind(raw) != "object" {
		p.fail("", `field "properties" must be an object keyed by property name, not %s`, describe(raw))
		return nil
	}
	ms, _ := members(raw)
	props := make(map[string]Property, len(ms))
	for _, m := range ms {
		switch _, dup := props[m.key]; {
		case dup:
			p.fail(m.key, "property %q is declared more than once", m.key)
		case !isEnvName(m.key):
			p.fail(m.key, `property %q: a name must start with a letter or "_" and hold only letters, digits and "_"`, m.key)
		case slices.Contains(reservedProps, m.key):
			p.fail(m.key, "property %q: the name is reserved for the mcp object's own use", m.key)
		}
		props[m.key] = p.property(m.key, m.value)
	}
	return props
}

func (p *entryParser) property(name string, raw []byte) Property {
	var prop Property
	if kind(raw) != "object" {
		p.fail(name, `property %q must be an object such as {"type":"string"}, not %s`, name, describe(raw))
		return prop
	}
	ms, _ := members(raw)
	var def []byte
	for _, m := range ms {
		if isNull(m.value) {
			continue
		}
		switch m.key {
		case "type":
			prop.Type, _ = jsonString(m.value)
			switch prop.Type {
			case TypeString, TypeNumber, TypeBoolean, TypeArray:
			default:
				p.fail(name, "property %q: type %s is not one of string, number, boolean, array", name, m.value)
			}
		case "description":
			var ok bool
			if prop.Description, ok = jsonString(m.value); !ok {
				p.fail(name, `property %q: field "description" must be a string`, name)
			}
		case "required":
			if json.Unmarshal(m.value, &prop.Required) != nil {
				p.fail(name, `property %q: field "required" must be true or false`, name)
			}
		case "default":
			def = m.value
		default:
			p.fail(name, "property %q: unknown field %q (a property has type, description, required, default)", name, m.key)
		}
	}
	if prop.Type == "" {
		p.fail(name, `property %q: field "type" is required (string, number, boolean or array)`, name)
		return prop
	}
	if def != nil {
		if prop.Required {
			p.fail(name, "property %q: a required property cannot have a default", name)
		}
		v, msg := decodeValue(prop.Type, def)
		if msg != "" {
			p.fail(name, "property %q: the default %s", name, msg)
		}
		prop.Default = v.public(prop.Type)
	}
	return prop
}

// validate checks what ties an entry's fields together: the program to run
// and the placeholders.
func (p *entryParser) validate(en *Entry) {
	if en.Description == "" {
		p.fail("", `field "description" is required`)
	}
	if len(en.Command) == 0 {
		p.fail("", `field "command" is required, e.g. [["uvx","arxiv-mcp-server"]]`)
		return
	}
	if prog := en.Command[0][0]; prog == "" || len(placeholders(prog)) > 0 {
		p.fail("", `field "command": the first argument must name the program, not be empty or a placeholder`)
	}
	for i, g := range en.Command {
		for _, arg := range g {
			for _, ph := range placeholders(arg) {
				prop, ok := en.Properties[ph]
				switch {
				case !ok:
					p.fail(ph, `field "command": group %d: {{%s}} names no declared property; declare it under "properties"`, i+1, ph)
				case prop.Type == TypeArray && arg != "{{"+ph+"}}":
					p.fail(ph, `field "command": group %d: array property %q must be a whole argument, "{{%s}}"`, i+1, ph, ph)
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(en.Env)) {
		for _, ph := range placeholders(en.Env[name]) {
			prop, ok := en.Properties[ph]
			switch {
			case !ok:
				p.fail(ph, `field "env": variable %q: {{%s}} names no declared property; declare it under "properties"`, name, ph)
			case prop.Type == TypeArray:
				p.fail(ph, `field "env": variable %q: array property %q cannot be used in an environment variable`, name, ph)
			}
		}
	}
	for i, argv := range en.Install {
		if argv[0] == "" {
			p.fail("", `field "install": command %d: the first argument must name the program`, i+1)
		}
		for _, arg := range argv {
			if len(placeholders(arg)) > 0 {
				p.fail("", `field "install": command %d has a placeholder; install commands take no properties`, i+1)
			}
		}
	}
}
