package mcpconfig

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var builtinNames = []string{"arxiv", "duckduckgo", "fetch", "filesystem", "memory", "sequentialthinking", "time"}

func TestBuiltinNames(t *testing.T) {
	if got := Builtin().Names(); !reflect.DeepEqual(got, builtinNames) {
		t.Errorf("Builtin().Names() = %q, want %q", got, builtinNames)
	}
}

// TestBuiltinCommands pins the contract's catalog table.
func TestBuiltinCommands(t *testing.T) {
	tests := []struct {
		name, props string
		want        []string
	}{
		{"duckduckgo", `{}`, []string{"uvx", "duckduckgo-mcp-server"}},
		{"arxiv", `{}`, []string{"uvx", "arxiv-mcp-server"}},
		{"arxiv", `{"storagePath":"/data/papers"}`, []string{"uvx", "arxiv-mcp-server", "--storage-path", "/data/papers"}},
		{"fetch", `{}`, []string{"uvx", "mcp-server-fetch"}},
		{"time", `{}`, []string{"uvx", "mcp-server-time"}},
		{"filesystem", `{"paths":["/home/user"]}`, []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/user"}},
		{"filesystem", `{"paths":["/a","/b c","/d"]}`, []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/a", "/b c", "/d"}},
		{"memory", `{}`, []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		{"sequentialthinking", `{}`, []string{"npx", "-y", "@modelcontextprotocol/server-sequential-thinking"}},
	}
	for _, tc := range tests {
		in := `{"` + tc.name + `":` + tc.props + `}`
		servers, warns, err := Parse([]byte(in), Builtin())
		if err != nil || len(warns) > 0 {
			t.Errorf("Parse(%s) = %v, %v", in, warns, err)
			continue
		}
		s := servers[0]
		if !reflect.DeepEqual(s.Command, tc.want) || s.Kind != KindCatalog || s.Env != nil || s.Dir != "" || s.GitHub != nil {
			t.Errorf("Parse(%s) = %+v, want Command %q and nothing else", in, s, tc.want)
		}
	}
}

func TestBuiltinInstall(t *testing.T) {
	want := map[string][][]string{
		"arxiv":              {{"uv", "tool", "install", "arxiv-mcp-server"}},
		"duckduckgo":         {{"uv", "tool", "install", "duckduckgo-mcp-server"}},
		"fetch":              {{"uv", "tool", "install", "mcp-server-fetch"}},
		"filesystem":         {{"npm", "cache", "add", "@modelcontextprotocol/server-filesystem"}},
		"memory":             {{"npm", "cache", "add", "@modelcontextprotocol/server-memory"}},
		"sequentialthinking": {{"npm", "cache", "add", "@modelcontextprotocol/server-sequential-thinking"}},
		"time":               {{"uv", "tool", "install", "mcp-server-time"}},
	}
	for name, install := range want {
		en, ok := Builtin().Lookup(name)
		if !ok {
			t.Errorf("Lookup(%q) found nothing", name)
			continue
		}
		if !reflect.DeepEqual(en.Install, install) {
			t.Errorf("%s: Install = %q, want %q", name, en.Install, install)
		}
		if en.Name != name || en.Description == "" {
			t.Errorf("%s: Name %q, Description %q", name, en.Name, en.Description)
		}
	}
}

func TestBuiltinProperties(t *testing.T) {
	arxiv, _ := Builtin().Lookup("arxiv")
	if p := arxiv.Properties["storagePath"]; p.Type != TypeString || p.Required || p.Default != nil {
		t.Errorf("arxiv storagePath = %+v, want an optional string without default", p)
	}
	fs, _ := Builtin().Lookup("filesystem")
	if p := fs.Properties["paths"]; p.Type != TypeArray || !p.Required {
		t.Errorf("filesystem paths = %+v, want a required array", p)
	}
}

func TestLookup(t *testing.T) {
	if en, ok := Builtin().Lookup("nope"); ok || en != nil {
		t.Errorf("Lookup(nope) = %v, %v", en, ok)
	}
	en, _ := Builtin().Lookup("filesystem")
	en.Command[0][0] = "changed"
	en.Install = nil
	delete(en.Properties, "paths")
	again, _ := Builtin().Lookup("filesystem")
	if again.Command[0][0] != "npx" || again.Install == nil || len(again.Properties) != 1 {
		t.Errorf("changing a looked-up entry changed the catalog: %+v", again)
	}
}

func TestZeroCatalog(t *testing.T) {
	var nilCat *Catalog
	for _, c := range []*Catalog{nilCat, {}} {
		if names := c.Names(); len(names) != 0 {
			t.Errorf("Names() = %q, want none", names)
		}
		if _, ok := c.Lookup("memory"); ok {
			t.Error("Lookup(memory) found an entry in an empty catalog")
		}
	}
	// Parse with a nil catalog uses the built-in one.
	if _, _, err := Parse([]byte(`{"memory":{}}`), nil); err != nil {
		t.Errorf("Parse with a nil catalog: %v", err)
	}
}

func TestLoadCatalog(t *testing.T) {
	for _, path := range []string{"", "testdata/missing.json", "testdata/no-such-dir/catalog.json"} {
		c, err := LoadCatalog(path)
		if err != nil {
			t.Errorf("LoadCatalog(%q): %v", path, err)
			continue
		}
		if got := c.Names(); !reflect.DeepEqual(got, builtinNames) {
			t.Errorf("LoadCatalog(%q).Names() = %q, want the built-in ones", path, got)
		}
	}
}

func TestLoadCatalogOverride(t *testing.T) {
	c, err := LoadCatalog("testdata/override.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"arxiv", "duckduckgo", "everything", "fetch", "filesystem", "memory", "sequentialthinking", "time"}
	if got := c.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}

	// Added.
	servers, _, err := Parse([]byte(`{"everything":{},"memory":{}}`), c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := servers[0].Command, []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}; !reflect.DeepEqual(got, want) {
		t.Errorf("everything: Command = %q, want %q", got, want)
	}
	if got, want := servers[1].Command, []string{"npx", "-y", "@modelcontextprotocol/server-memory"}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory (kept): Command = %q, want %q", got, want)
	}

	// Replaced whole: no install, no storagePath any more.
	arxiv, _ := c.Lookup("arxiv")
	wantArxiv := &Entry{Name: "arxiv", Description: "arXiv through the template's own wrapper", Command: [][]string{{"/opt/arxiv/run"}}}
	if !reflect.DeepEqual(arxiv, wantArxiv) {
		t.Errorf("arxiv = %+v, want %+v", arxiv, wantArxiv)
	}
	servers, warns, err := Parse([]byte(`{"arxiv":{"storagePath":"/p"}}`), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := servers[0].Command; !reflect.DeepEqual(got, []string{"/opt/arxiv/run"}) {
		t.Errorf("arxiv: Command = %q", got)
	}
	if len(warns) != 1 || warns[0].String() != `mcp server "arxiv": unknown property "storagePath" ignored` {
		t.Errorf("warnings = %v", warns)
	}

	// The built-in catalog is untouched.
	builtinArxiv, _ := Builtin().Lookup("arxiv")
	if builtinArxiv.Command[0][0] != "uvx" {
		t.Errorf("the override changed the built-in catalog: %+v", builtinArxiv)
	}
}

func TestLoadCatalogErrors(t *testing.T) {
	tests := []struct {
		path, want      string
		entry, property string
		wantCause       bool // Err holds the JSON or I/O error
	}{
		{path: "testdata/broken.json", wantCause: true,
			want: `catalog testdata/broken.json: invalid JSON at line 4, column 5: invalid character '"' after object key:value pair`},
		{path: "testdata/bad-placeholder.json", entry: "arxiv", property: "storagePth",
			want: `catalog testdata/bad-placeholder.json: entry "arxiv": field "command": group 2: {{storagePth}} names no declared property; declare it under "properties"`},
		{path: "testdata/bad-type.json", entry: "search", property: "limit",
			want: `catalog testdata/bad-type.json: entry "search": property "limit": type "integer" is not one of string, number, boolean, array`},
		{path: "testdata/empty.json",
			want: `catalog testdata/empty.json: the file is empty; want a JSON object keyed by entry name`},
		{path: "testdata", wantCause: true,
			want: `catalog testdata: cannot read the file: is a directory`},
	}
	for _, tc := range tests {
		c, err := LoadCatalog(tc.path)
		if err == nil {
			t.Errorf("LoadCatalog(%q) = %v, nil; want an error", tc.path, c.Names())
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("LoadCatalog(%q):\n got %s\nwant %s", tc.path, err, tc.want)
		}
		var ce *CatalogError
		if !errors.As(err, &ce) {
			t.Errorf("LoadCatalog(%q) = %T, want a *CatalogError", tc.path, err)
			continue
		}
		if ce.File != tc.path || ce.Entry != tc.entry || ce.Property != tc.property {
			t.Errorf("LoadCatalog(%q): File, Entry, Property = %q, %q, %q; want %q, %q, %q",
				tc.path, ce.File, ce.Entry, ce.Property, tc.path, tc.entry, tc.property)
		}
		if got := ce.Err != nil; got != tc.wantCause {
			t.Errorf("LoadCatalog(%q): Err = %v, want a cause: %v", tc.path, ce.Err, tc.wantCause)
		}
	}
}

// entryJSON is a valid entry to break one field at a time.
func entryJSON(fields string) string {
	return `{"x":{"description":"d","command":[["prog"]]` + fields + `}}`
}

func TestCatalogValidation(t *testing.T) {
	const f = "catalog test.json: "
	const x = f + `entry "x": `
	groupsMsg := func(field, example string) string {
		return x + `field "` + field + `" must be a non-empty list of non-empty lists of strings, e.g. ` + example
	}
	cmdMsg := groupsMsg("command", `[["uvx","arxiv-mcp-server"],["--storage-path","{{storagePath}}"]]`)
	installMsg := groupsMsg("install", `[["uv","tool","install","arxiv-mcp-server"]]`)
	tests := []struct {
		name, in, want string
		property       string
	}{
		// The file.
		{name: "empty", in: ``, want: f + `the file is empty; want a JSON object keyed by entry name`},
		{name: "spaces", in: " \n", want: f + `the file is empty; want a JSON object keyed by entry name`},
		{name: "truncated", in: `{"x":`, want: f + `invalid JSON at line 1, column 5: unexpected end of JSON input`},
		{name: "bad JSON on line 3", in: "{\n  \"x\": {\n    \"description\": 'd'\n  }\n}", want: f + `invalid JSON at line 3, column 20: invalid character '\'' looking for beginning of value`},
		{name: "array", in: `[]`, want: f + `the file must hold a JSON object keyed by entry name, not an array`},
		{name: "null", in: `null`, want: f + `the file must hold a JSON object keyed by entry name, not null`},

		// Entry names.
		{name: "empty name", in: `{"":{"description":"d","command":[["p"]]}}`, want: f + `an entry name is empty`},
		{name: "long name", in: `{"` + strings.Repeat("n", 129) + `":{}}`, want: f + `entry "` + strings.Repeat("n", 64) + `...": the name is 129 bytes long; at most 128 are allowed`},
		{name: "control in name", in: `{"a\tb":{}}`, want: f + `entry "a\tb": the name contains a control character`},
		{name: "github name", in: `{"github/o/r":{}}`, want: f + `entry "github/o/r": a name must not start with "github/", which names GitHub servers`},
		{name: "duplicate broken entry", in: `{"x":null,"x":{"description":"d","command":[["p"]]}}`, want: x + `the entry must be a JSON object with description and command, not null` + "\n" + x + `the entry is given more than once`},
		{name: "duplicate entry", in: `{"x":{"description":"d","command":[["p"]]},"x":{"description":"d","command":[["p"]]}}`, want: x + `the entry is given more than once`},

		// Entry shape.
		{name: "entry null", in: `{"x":null}`, want: x + `the entry must be a JSON object with description and command, not null`},
		{name: "entry string", in: `{"x":"uvx x"}`, want: x + `the entry must be a JSON object with description and command, not a string`},
		{name: "unknown field", in: entryJSON(`,"comand":[]`), want: x + `unknown field "comand" (an entry has description, command, env, install, properties)`},
		{name: "duplicate field", in: `{"x":{"description":"d","description":"e","command":[["p"]]}}`, want: x + `field "description" is given more than once`},

		// description.
		{name: "no description", in: `{"x":{"command":[["p"]]}}`, want: x + `field "description" is required`},
		{name: "description null", in: `{"x":{"description":null,"command":[["p"]]}}`, want: x + `field "description" is required`},
		{name: "description blank", in: `{"x":{"description":" ","command":[["p"]]}}`, want: x + `field "description" must be a non-blank string`},
		{name: "description number", in: `{"x":{"description":1,"command":[["p"]]}}`, want: x + `field "description" must be a non-blank string`},

		// command.
		{name: "no command", in: `{"x":{"description":"d"}}`, want: x + `field "command" is required, e.g. [["uvx","arxiv-mcp-server"]]`},
		{name: "command string", in: `{"x":{"description":"d","command":"uvx x"}}`, want: cmdMsg},
		{name: "command flat", in: `{"x":{"description":"d","command":["uvx","x"]}}`, want: cmdMsg},
		{name: "command empty", in: `{"x":{"description":"d","command":[]}}`, want: cmdMsg},
		{name: "command empty group", in: `{"x":{"description":"d","command":[["p"],[]]}}`, want: cmdMsg},
		{name: "command number", in: `{"x":{"description":"d","command":[["p",1]]}}`, want: cmdMsg},
		{name: "command null argument", in: `{"x":{"description":"d","command":[["p",null]]}}`, want: cmdMsg},
		{name: "program empty", in: `{"x":{"description":"d","command":[["","x"]]}}`, want: x + `field "command": the first argument must name the program, not be empty or a placeholder`},
		{name: "program placeholder", in: `{"x":{"description":"d","command":[["{{p}}"]],"properties":{"p":{"type":"string","required":true}}}}`, want: x + `field "command": the first argument must name the program, not be empty or a placeholder`},
		{name: "undeclared placeholder", in: `{"x":{"description":"d","command":[["p"],["--a","{{nope}}"]]}}`, property: "nope", want: x + `field "command": group 2: {{nope}} names no declared property; declare it under "properties"`},
		{name: "placeholder with spaces", in: `{"x":{"description":"d","command":[["p","{{ a }}"]],"properties":{"a":{"type":"string"}}}}`, property: " a ", want: x + `field "command": group 1: {{ a }} names no declared property; declare it under "properties"`},
		{name: "array inside an argument", in: `{"x":{"description":"d","command":[["p","--paths={{paths}}"]],"properties":{"paths":{"type":"array"}}}}`, property: "paths", want: x + `field "command": group 1: array property "paths" must be a whole argument, "{{paths}}"`},

		// env.
		{name: "env array", in: entryJSON(`,"env":["A=b"]`), want: x + `field "env" must be an object of environment variable names to strings, not an array`},
		{name: "env bad name", in: entryJSON(`,"env":{"A B":"x"}`), want: x + `field "env": "A B" is not a valid name; use letters, digits and "_", not starting with a digit`},
		{name: "env number", in: entryJSON(`,"env":{"PORT":8080}`), want: x + `field "env": variable "PORT" must be a string, not a number`},
		{name: "env undeclared placeholder", in: entryJSON(`,"env":{"KEY":"{{apiKey}}"}`), property: "apiKey", want: x + `field "env": variable "KEY": {{apiKey}} names no declared property; declare it under "properties"`},
		{name: "env array placeholder", in: entryJSON(`,"env":{"P":"{{paths}}"},"properties":{"paths":{"type":"array"}}`), property: "paths", want: x + `field "env": variable "P": array property "paths" cannot be used in an environment variable`},

		// install.
		{name: "install string", in: entryJSON(`,"install":"uv tool install x"`), want: installMsg},
		{name: "install empty", in: entryJSON(`,"install":[]`), want: installMsg},
		{name: "install empty command", in: entryJSON(`,"install":[[]]`), want: installMsg},
		{name: "install empty program", in: entryJSON(`,"install":[["uv","tool","install","x"],["","x"]]`), want: x + `field "install": command 2: the first argument must name the program`},
		{name: "install placeholder", in: entryJSON(`,"install":[["uv","tool","install","{{p}}"]],"properties":{"p":{"type":"string"}}`), want: x + `field "install": command 1 has a placeholder; install commands take no properties`},

		// properties.
		{name: "properties array", in: entryJSON(`,"properties":[]`), want: x + `field "properties" must be an object keyed by property name, not an array`},
		{name: "property name digit", in: entryJSON(`,"properties":{"1p":{"type":"string"}}`), property: "1p", want: x + `property "1p": a name must start with a letter or "_" and hold only letters, digits and "_"`},
		{name: "property name dash", in: entryJSON(`,"properties":{"storage-path":{"type":"string"}}`), property: "storage-path", want: x + `property "storage-path": a name must start with a letter or "_" and hold only letters, digits and "_"`},
		{name: "property envs", in: entryJSON(`,"properties":{"envs":{"type":"string"}}`), property: "envs", want: x + `property "envs": the name is reserved for the mcp object's own use`},
		{name: "property runCmd", in: entryJSON(`,"properties":{"runCmd":{"type":"string"}}`), property: "runCmd", want: x + `property "runCmd": the name is reserved for the mcp object's own use`},
		{name: "property install_cmd", in: entryJSON(`,"properties":{"install_cmd":{"type":"string"}}`), property: "install_cmd", want: x + `property "install_cmd": the name is reserved for the mcp object's own use`},
		{name: "property twice", in: entryJSON(`,"properties":{"p":{"type":"string"},"p":{"type":"string"}}`), property: "p", want: x + `property "p" is declared more than once`},
		{name: "property string", in: entryJSON(`,"properties":{"p":"string"}`), property: "p", want: x + `property "p" must be an object such as {"type":"string"}, not a string`},
		{name: "property unknown field", in: entryJSON(`,"properties":{"p":{"type":"string","requird":true}}`), property: "p", want: x + `property "p": unknown field "requird" (a property has type, description, required, default)`},
		{name: "no type", in: entryJSON(`,"properties":{"p":{}}`), property: "p", want: x + `property "p": field "type" is required (string, number, boolean or array)`},
		{name: "unknown type", in: entryJSON(`,"properties":{"p":{"type":"integer"}}`), property: "p", want: x + `property "p": type "integer" is not one of string, number, boolean, array`},
		{name: "type not a string", in: entryJSON(`,"properties":{"p":{"type":["string"]}}`), property: "p", want: x + `property "p": type ["string"] is not one of string, number, boolean, array`},
		{name: "description number", in: entryJSON(`,"properties":{"p":{"type":"string","description":1}}`), property: "p", want: x + `property "p": field "description" must be a string`},
		{name: "required string", in: entryJSON(`,"properties":{"p":{"type":"string","required":"yes"}}`), property: "p", want: x + `property "p": field "required" must be true or false`},
		{name: "required with default", in: entryJSON(`,"properties":{"p":{"type":"string","required":true,"default":"x"}}`), property: "p", want: x + `property "p": a required property cannot have a default`},
		{name: "string default", in: entryJSON(`,"properties":{"p":{"type":"string","default":1}}`), property: "p", want: x + `property "p": the default must be a string`},
		{name: "number default", in: entryJSON(`,"properties":{"p":{"type":"number","default":"1"}}`), property: "p", want: x + `property "p": the default must be a number`},
		{name: "number default out of range", in: entryJSON(`,"properties":{"p":{"type":"number","default":-1e999}}`), property: "p", want: x + `property "p": the default is out of range for a number`},
		{name: "boolean default", in: entryJSON(`,"properties":{"p":{"type":"boolean","default":"false"}}`), property: "p", want: x + `property "p": the default must be true or false`},
		{name: "array default", in: entryJSON(`,"properties":{"p":{"type":"array","default":"/a"}}`), property: "p", want: x + `property "p": the default must be an array of strings`},
		{name: "array default item", in: entryJSON(`,"properties":{"p":{"type":"array","default":["/a",2]}}`), property: "p", want: x + `property "p": the default must be an array of strings`},

		// Every entry's problem is reported.
		{name: "two broken entries", in: `{"a":null,"b":{"description":"d"}}`, want: f + `entry "a": the entry must be a JSON object with description and command, not null` + "\n" +
			f + `entry "b": field "command" is required, e.g. [["uvx","arxiv-mcp-server"]]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseCatalog("test.json", []byte(tc.in))
			if err == nil {
				t.Fatalf("parseCatalog(%s) = %v, nil; want %q", tc.in, c.Names(), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("parseCatalog(%s):\n got %s\nwant %s", tc.in, err, tc.want)
			}
			var ce *CatalogError
			if !errors.As(err, &ce) {
				t.Fatalf("parseCatalog = %T, want a *CatalogError", err)
			}
			if ce.File != "test.json" || ce.Property != tc.property {
				t.Errorf("File, Property = %q, %q; want %q, %q", ce.File, ce.Property, "test.json", tc.property)
			}
		})
	}
}

func TestCatalogDefaults(t *testing.T) {
	c := testCatalog(t, `{"x":{"description":"d","command":[["p"]],"properties":{
		"s":{"type":"string","default":"v"},
		"n":{"type":"number","default":1.50},
		"b":{"type":"boolean","default":false},
		"a":{"type":"array","default":["/a","/b"]},
		"none":{"type":"string","description":"no default"},
		"nullDefault":{"type":"string","default":null}
	}}}`)
	en, _ := c.Lookup("x")
	want := map[string]any{"s": "v", "n": "1.50", "b": false, "a": []string{"/a", "/b"}, "none": nil, "nullDefault": nil}
	for name, w := range want {
		got := en.Properties[name].Default
		if n, ok := got.(interface{ String() string }); ok { // json.Number
			got = n.String()
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: Default = %#v, want %#v", name, en.Properties[name].Default, w)
		}
	}
}

func TestCatalogAcceptsNullOptionalFields(t *testing.T) {
	testCatalog(t, `{"x":{"description":"d","command":[["p"]],"env":null,"install":null,"properties":null}}`)
}

func TestBuiltinConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := Parse([]byte(`{"filesystem":{"paths":["/"]},"memory":{}}`), Builtin()); err != nil {
				t.Error(err)
			}
			Builtin().Names()
		}()
	}
	wg.Wait()
}
