package metadata

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file string
		want *Spec
	}{
		{"npm.json", &Spec{
			Name:        "io.github.example/weather",
			Title:       "Weather",
			Description: "Forecasts and current conditions from the Example Weather API",
			Version:     "1.4.0",
			Package:     "npm @example/weather-mcp@1.4.0",
			Command:     "npx",
			Args: []string{
				"-y", "--registry", "https://registry.npmjs.org",
				"@example/weather-mcp@1.4.0",
				"start", "--units", "metric", "{cache_dir}", "--api-base", "https://api.{region}.example.com",
			},
			Env: map[string]string{
				"WEATHER_API_KEY": "${weather_api_key}",
				"LOG_LEVEL":       "info",
				"NODE_ENV":        "production",
			},
			Config: []Property{
				{Name: "log_level", Description: "Logging level (debug, info, warn, error)", Env: "LOG_LEVEL", Default: "info"},
				{Name: "weather_station", Description: "Default station code", Env: "WEATHER_STATION", Required: true},
			},
			Secrets: []string{"weather_api_key"},
			Remotes: []string{"https://weather.example.com/mcp"},
		}},
		{"pypi.json", &Spec{
			Name:        "io.github.example/weather-mcp",
			Description: "Python MCP server for weather data access",
			Version:     "0.5.0",
			Package:     "pypi weather-mcp-server==0.5.0",
			Command:     "uvx",
			Args:        []string{"--python", "3.12", "weather-mcp-server==0.5.0", "--transport", "stdio"},
			Env: map[string]string{
				"WEATHER_API_KEY": "${weather_api_key}",
				"WEATHER_UNITS":   "celsius",
			},
			Config: []Property{
				{Name: "weather_units", Description: "Temperature units (celsius, fahrenheit)", Env: "WEATHER_UNITS", Default: "celsius"},
			},
			Secrets: []string{"weather_api_key"},
		}},
		{"registry-entry.json", &Spec{
			Name:        "io.github.modelcontextprotocol/filesystem",
			Title:       "Filesystem",
			Description: "Secure file operations with configurable access controls",
			Version:     "2025.8.21",
			Package:     "npm @modelcontextprotocol/server-filesystem@2025.8.21",
			Command:     "npx",
			Args:        []string{"-y", "@modelcontextprotocol/server-filesystem@2025.8.21", "{allowed_directory}"},
			Env:         map[string]string{},
		}},
		{"registry-list.json", &Spec{
			Name:        "io.github.modelcontextprotocol/time",
			Description: "Time and timezone conversion",
			Version:     "2025.9.25",
			Package:     "pypi mcp-server-time",
			Command:     "uvx",
			Args:        []string{"mcp-server-time", "--local-timezone", "UTC"},
			Env:         map[string]string{},
		}},
		{"legacy.json", &Spec{
			Name:        "io.modelcontextprotocol/brave-search",
			Description: "MCP server for Brave Search API integration",
			Version:     "1.0.2",
			Package:     "npm @modelcontextprotocol/server-brave-search@1.0.2",
			Command:     "npx",
			Args:        []string{"-y", "@modelcontextprotocol/server-brave-search@1.0.2", "stdio"},
			Env: map[string]string{
				"BRAVE_API_KEY":     "${brave_api_key}",
				"BRAVE_MAX_RESULTS": "10",
			},
			Config: []Property{
				{Name: "brave_max_results", Description: "Results per query", Env: "BRAVE_MAX_RESULTS", Default: "10"},
			},
			Secrets: []string{"brave_api_key"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := Parse(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want []string // substrings of the error
	}{
		{"garbage", readFixture(t, "garbage.html"),
			[]string{"not a server.json or registry entry", "invalid character '<'"}},
		{"empty", nil, []string{"not a server.json or registry entry"}},
		{"JSON array", []byte(`[{"name": "a/b"}]`), []string{"not a server.json or registry entry"}},
		{"no name", readFixture(t, "no-name.json"), []string{`no "name"`}},
		{"remote only", readFixture(t, "remote-only.json"), []string{
			`mcp server "com.example/notes"`, "no package runs over stdio through npm, PyPI or OCI", "it lists no packages",
			"https://mcp.notes.example.com/mcp, https://mcp.notes.example.com/sse", "register its remote with --url instead",
		}},
		{"unsupported packages", readFixture(t, "unsupported.json"), []string{
			`mcp server "io.github.example/database-manager"`,
			"(it has oci over streamable-http, nuget over stdio, npm over streamable-http)",
			"host mode runs only npm packages (with npx), PyPI packages (with uvx) and OCI images (with docker run) over stdio",
		}},
		{"two servers", readFixture(t, "registry-list-two.json"), []string{"lists 2 servers, expected exactly one"}},
		{"no servers", []byte(`{"servers": [], "metadata": {"count": 0}}`), []string{"lists 0 servers"}},
		{"wrong field type", []byte(`{"name": "a/b", "packages": {"registryType": "npm"}}`),
			[]string{"not a server.json", `field "packages" holds a JSON object`}},
		{"package without identifier", []byte(`{"name": "a/b", "packages": [{"registryType": "npm"}]}`),
			[]string{`mcp server "a/b"`, "npm package has no identifier"}},
		{"bad argument type", []byte(`{"name": "a/b", "packages": [{"registryType": "npm", "identifier": "p",
			"packageArguments": [{"type": "flag", "name": "--x"}]}]}`),
			[]string{`mcp server "a/b"`, "package p: package arguments", `type "flag"`}},
		{"named without name", []byte(`{"name": "a/b", "packages": [{"registryType": "pypi", "identifier": "p",
			"runtimeArguments": [{"type": "named", "value": "x"}]}]}`),
			[]string{"runtime arguments", "argument 0 is named but has no name"}},
		{"bad variable name", []byte(`{"name": "a/b", "packages": [{"registryType": "npm", "identifier": "p",
			"environmentVariables": [{"name": "API-KEY", "isSecret": true}]}]}`),
			[]string{`mcp server "a/b": package npm p`, `"API-KEY" is not a variable name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse(tt.data)
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", spec)
			}
			for _, text := range tt.want {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("error %q does not contain %q", err, text)
				}
			}
		})
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name    string
		pkg     string // one package of a server.json
		command string
		args    []string
	}{
		{"npm latest", `{"registryType": "npm", "identifier": "pkg", "version": "latest"}`,
			"npx", []string{"-y", "pkg"}},
		{"npm no version", `{"registryType": "NPM", "identifier": "@s/pkg", "transport": {"type": "stdio"}}`,
			"npx", []string{"-y", "@s/pkg"}},
		{"pypi latest", `{"registryType": "pypi", "identifier": "pkg", "version": "latest"}`,
			"uvx", []string{"pkg"}},
		{"oldest spelling", `{"registry_name": "npm", "name": "old-pkg", "version": "0.1.0",
			"runtime_arguments": [{"type": "positional", "value": "--quiet"}]}`,
			"npx", []string{"-y", "--quiet", "old-pkg@0.1.0"}},
		{"transport as a string", `{"registryType": "pypi", "identifier": "pkg", "version": "1", "transport": "stdio"}`,
			"uvx", []string{"pkg==1"}},
		{"named required without value", `{"registryType": "npm", "identifier": "pkg", "version": "1",
			"packageArguments": [{"type": "named", "name": "--root", "isRequired": true}, {"type": "named", "name": "--quiet"}]}`,
			"npx", []string{"-y", "pkg@1", "--root", "{root}"}},
		{"numbers and booleans as values", `{"registryType": "npm", "identifier": "pkg", "version": "1",
			"packageArguments": [{"type": "named", "name": "--port", "default": 8080}, {"type": "named", "name": "--debug", "value": true}]}`,
			"npx", []string{"-y", "pkg@1", "--port", "8080", "--debug", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := Parse([]byte(`{"name": "io.example/x", "packages": [` + tt.pkg + `]}`))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if spec.Command != tt.command || !reflect.DeepEqual(spec.Args, tt.args) {
				t.Errorf("command = %s %q, want %s %q", spec.Command, spec.Args, tt.command, tt.args)
			}
		})
	}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A server.yaml is the same server as its server.json; unquoted numbers
// stay the strings the schema has there, booleans stay booleans.
func TestParseYAML(t *testing.T) {
	read := func(name string) *Spec {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return spec
	}
	if y, j := read("npm.yaml"), read("npm.json"); !reflect.DeepEqual(y, j) {
		t.Errorf("npm.yaml parses to\n%+v\nnpm.json to\n%+v", y, j)
	}
	spec, err := Parse([]byte("server:\n  name: x/y\n  version: 1.10\n  packages:\n    - registryType: pypi\n      identifier: y\n      version: 2.0\n      transport: {type: stdio}\n      environmentVariables:\n        - {name: PORT, default: 8080, isRequired: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Version != "1.10" || spec.Package != "pypi y==2.0" || len(spec.Config) != 1 || spec.Config[0].Default != "8080" || !spec.Config[0].Required {
		t.Errorf("a registry entry in YAML: %+v", spec)
	}
	for _, bad := range []string{"name: [unclosed", "name: a\nname: b\n"} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "yaml") && !strings.Contains(err.Error(), "given twice") {
			t.Errorf("Parse(%q): %v, want a YAML error", bad, err)
		}
	}
}
