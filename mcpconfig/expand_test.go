package mcpconfig

import (
	"reflect"
	"strings"
	"testing"
)

// expandCatalog exercises every expansion rule in one entry.
const expandCatalog = `{
  "t": {
    "description": "expansion test",
    "command": [
      ["prog", "serve"],
      ["--name", "{{name}}"],
      ["--port={{port}}"],
      ["--verbose={{verbose}}"],
      ["--dir", "{{dirs}}"],
      ["--tag", "{{tags}}"],
      ["--addr", "{{host}}:{{port}}"],
      ["--limit", "{{limit}}"],
      ["--dry-run={{dryRun}}"]
    ],
    "env": {
      "FIXED": "always",
      "T_NAME": "{{name}}",
      "T_ADDR": "{{host}}:{{port}}",
      "T_LIMIT": "{{limit}}"
    },
    "properties": {
      "name":    {"type": "string"},
      "host":    {"type": "string", "default": "127.0.0.1"},
      "port":    {"type": "number"},
      "verbose": {"type": "boolean"},
      "dirs":    {"type": "array"},
      "tags":    {"type": "array", "default": ["a", "b"]},
      "limit":   {"type": "number", "default": 1e2},
      "dryRun":  {"type": "boolean", "default": false}
    }
  }
}`

func TestExpand(t *testing.T) {
	cat := testCatalog(t, expandCatalog)
	base := []string{"prog", "serve"}
	defaults := []string{"--tag", "a", "b", "--limit", "100", "--dry-run=false"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name  string
		props string
		argv  []string
		env   map[string]string
	}{
		{"unset optional groups are dropped; defaults fill in", `{}`,
			join(base, defaults),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"string", `{"name":"a b"}`,
			join(base, []string{"--name", "a b"}, defaults),
			map[string]string{"FIXED": "always", "T_NAME": "a b", "T_LIMIT": "100"}},
		{"empty string is set", `{"name":""}`,
			join(base, []string{"--name", ""}, defaults),
			map[string]string{"FIXED": "always", "T_NAME": "", "T_LIMIT": "100"}},
		{"placeholder syntax in a value is not expanded again", `{"name":"{{port}}"}`,
			join(base, []string{"--name", "{{port}}"}, defaults),
			map[string]string{"FIXED": "always", "T_NAME": "{{port}}", "T_LIMIT": "100"}},
		{"integer inside an argument; a group with a default and a given value", `{"port":8080}`,
			join(base, []string{"--port=8080"}, []string{"--tag", "a", "b", "--addr", "127.0.0.1:8080", "--limit", "100", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_ADDR": "127.0.0.1:8080", "T_LIMIT": "100"}},
		{"number as written", `{"port":1.50,"limit":-0.25}`,
			join(base, []string{"--port=1.50", "--tag", "a", "b", "--addr", "127.0.0.1:1.50", "--limit", "-0.25", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_ADDR": "127.0.0.1:1.50", "T_LIMIT": "-0.25"}},
		{"exponent written out", `{"limit":2.5E3}`,
			join(base, []string{"--tag", "a", "b", "--limit", "2500", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "2500"}},
		{"small exponent written out", `{"limit":1e-7}`,
			join(base, []string{"--tag", "a", "b", "--limit", "0.0000001", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "0.0000001"}},
		{"big integer exact", `{"limit":12345678901234567890}`,
			join(base, []string{"--tag", "a", "b", "--limit", "12345678901234567890", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "12345678901234567890"}},
		{"booleans", `{"verbose":true,"dryRun":true}`,
			join(base, []string{"--verbose=true", "--tag", "a", "b", "--limit", "100", "--dry-run=true"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"false is set", `{"verbose":false}`,
			join(base, []string{"--verbose=false"}, defaults),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"array, one argument per item, flag once", `{"dirs":["/a","/b c"]}`,
			join(base, []string{"--dir", "/a", "/b c"}, defaults),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"empty optional array drops its group", `{"dirs":[]}`,
			join(base, defaults),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"array replaces its default", `{"tags":["x"]}`,
			join(base, []string{"--tag", "x", "--limit", "100", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"empty array over a default drops the group", `{"tags":[]}`,
			join(base, []string{"--limit", "100", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"null means not given", `{"host":null,"tags":null,"name":null}`,
			join(base, defaults),
			map[string]string{"FIXED": "always", "T_LIMIT": "100"}},
		{"given value over a default", `{"host":"0.0.0.0","port":1}`,
			join(base, []string{"--port=1", "--tag", "a", "b", "--addr", "0.0.0.0:1", "--limit", "100", "--dry-run=false"}),
			map[string]string{"FIXED": "always", "T_ADDR": "0.0.0.0:1", "T_LIMIT": "100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			servers, warns, err := Parse([]byte(`{"t":`+tc.props+`}`), cat)
			if err != nil || len(warns) > 0 {
				t.Fatalf("Parse(%s) = %v, %v", tc.props, warns, err)
			}
			if got := servers[0].Command; !reflect.DeepEqual(got, tc.argv) {
				t.Errorf("Command:\n got %q\nwant %q", got, tc.argv)
			}
			if got := servers[0].Env; !reflect.DeepEqual(got, tc.env) {
				t.Errorf("Env:\n got %q\nwant %q", got, tc.env)
			}
		})
	}
}

// TestExpandGroupNamingTwoProperties: a group goes when any property it
// names is unset.
func TestExpandGroupNamingTwoProperties(t *testing.T) {
	cat := testCatalog(t, `{"t":{"description":"d","command":[["p"],["--both","{{a}}","{{b}}"]],
		"properties":{"a":{"type":"string"},"b":{"type":"string"}}}}`)
	for props, want := range map[string][]string{
		`{}`:                   {"p"},
		`{"a":"1"}`:            {"p"},
		`{"b":"2"}`:            {"p"},
		`{"a":"1","b":"2"}`:    {"p", "--both", "1", "2"},
		`{"a":"1","b":null}`:   {"p"},
		`{"a":"{{b}}","b":""}`: {"p", "--both", "{{b}}", ""},
	} {
		servers, _, err := Parse([]byte(`{"t":`+props+`}`), cat)
		if err != nil {
			t.Fatalf("Parse(%s): %v", props, err)
		}
		if got := servers[0].Command; !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%s): Command = %q, want %q", props, got, want)
		}
	}
}

func TestExpandLiteralBraces(t *testing.T) {
	cat := testCatalog(t, `{"t":{"description":"d","command":[["p","{not a placeholder}","{{","}}","a}}b{{"]]}}`)
	servers, _, err := Parse([]byte(`{"t":{}}`), cat)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p", "{not a placeholder}", "{{", "}}", "a}}b{{"}
	if got := servers[0].Command; !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
}

func TestFormatNumber(t *testing.T) {
	for in, want := range map[string]string{
		"0": "0", "-0": "-0", "42": "42", "1.50": "1.50", "1e3": "1000", "1E+3": "1000",
		"2.5e-3": "0.0025", "-1e2": "-100",
		"1.7976931348623157e308": "17976931348623157" + strings.Repeat("0", 292),
	} {
		got, err := formatNumber(in)
		if err != nil || got != want {
			t.Errorf("formatNumber(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := formatNumber("1e309"); err == nil {
		t.Error("formatNumber(1e309) succeeded, want a range error")
	}
}
