package mcpconfig

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyServers returns an mcp object with n catalog-less servers.
func manyServers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"s%d":{"runCmd":"true"}`, i)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// checkRejects is every rule of Check (contract: "The platform side") with
// the exact message. Parse must reject each of these with the same message.
var checkRejects = []struct {
	name, in, want string
}{
	// The object as a whole.
	{"empty input", ``, `mcp: the config is empty; want a JSON object keyed by server name, e.g. {"memory":{}}`},
	{"blank input", " \n\t", `mcp: the config is empty; want a JSON object keyed by server name, e.g. {"memory":{}}`},
	{"truncated JSON", `{"memory":`, `mcp: invalid JSON at byte 10: unexpected end of JSON input`},
	{"bad JSON", `{"memory" {}}`, `mcp: invalid JSON at byte 11: invalid character '{' after object key`},
	{"trailing garbage", `{} x`, `mcp: invalid JSON at byte 4: invalid character 'x' after top-level value`},
	{"array", `[{"memory":{}}]`, `mcp: the config must be a JSON object keyed by server name, not an array`},
	{"string", `"memory"`, `mcp: the config must be a JSON object keyed by server name, not a string`},
	{"number", `64`, `mcp: the config must be a JSON object keyed by server name, not a number`},
	{"boolean", `true`, `mcp: the config must be a JSON object keyed by server name, not a boolean`},
	{"65 servers", manyServers(65), `mcp: 65 servers given; at most 64 are allowed`},

	// Names.
	{"empty name", `{"":{}}`, `mcp: a server name is empty; name each server, e.g. "memory"`},
	{"name of 129 bytes", `{"` + strings.Repeat("a", 129) + `":{}}`,
		`mcp server "` + strings.Repeat("a", 64) + `...": the name is 129 bytes long; at most 128 are allowed`},
	{"name of 130 bytes cut at a rune", `{"` + strings.Repeat("a", 63) + strings.Repeat("é", 33) + `":{}}`,
		`mcp server "` + strings.Repeat("a", 63) + `...": the name is 129 bytes long; at most 128 are allowed`},
	{"NUL in name", `{"a\u0000b":{}}`, `mcp server "a\x00b": the name contains a control character`},
	{"newline in name", `{"a\nb":{}}`, `mcp server "a\nb": the name contains a control character`},
	{"DEL in name", `{"a\u007fb":{}}`, `mcp server "a\x7fb": the name contains a control character`},
	{"C1 control in name", `{"a\u0085b":{}}`, `mcp server "a\u0085b": the name contains a control character`},

	// Entries.
	{"entry array", `{"memory":[]}`, `mcp server "memory": the value must be a JSON object (or null), not an array`},
	{"entry string", `{"memory":"on"}`, `mcp server "memory": the value must be a JSON object (or null), not a string`},
	{"entry number", `{"memory":1}`, `mcp server "memory": the value must be a JSON object (or null), not a number`},
	{"entry boolean", `{"memory":true}`, `mcp server "memory": the value must be a JSON object (or null), not a boolean`},
	{"unknown name, entry not object", `{"nope":"x"}`, `mcp server "nope": the value must be a JSON object (or null), not a string`},

	// GitHub keys.
	{"github/ alone", `{"github/":{"runCmd":"x"}}`, githubNameMsg("github/")},
	{"github owner only", `{"github/o":{"runCmd":"x"}}`, githubNameMsg("github/o")},
	{"github empty repo", `{"github/o/":{"runCmd":"x"}}`, githubNameMsg("github/o/")},
	{"github empty owner", `{"github//r":{"runCmd":"x"}}`, githubNameMsg("github//r")},
	{"github extra segment", `{"github/o/r/x":{"runCmd":"x"}}`, githubNameMsg("github/o/r/x")},
	{"github owner dot", `{"github/./r":{"runCmd":"x"}}`, githubNameMsg("github/./r")},
	{"github repo dotdot", `{"github/o/..":{"runCmd":"x"}}`, githubNameMsg("github/o/..")},
	{"github space", `{"github/o r/x":{"runCmd":"x"}}`, githubNameMsg("github/o r/x")},
	{"github non-ASCII", `{"github/ö/r":{"runCmd":"x"}}`, githubNameMsg("github/ö/r")},
	{"github bad key, null value", `{"github/o":null}`, githubNameMsg("github/o")},

	// runCmd.
	{"github without runCmd", `{"github/o/r":{}}`, `mcp server "github/o/r": property "runCmd" is required`},
	{"github null", `{"github/o/r":null}`, `mcp server "github/o/r": property "runCmd" is required`},
	{"github runCmd null", `{"github/o/r":{"runCmd":null}}`, `mcp server "github/o/r": property "runCmd" is required`},
	{"github only installCmd", `{"github/o/r":{"installCmd":"npm ci"}}`, `mcp server "github/o/r": property "runCmd" is required`},
	{"github runCmd number", `{"github/o/r":{"runCmd":5}}`, `mcp server "github/o/r": property "runCmd" must be a non-blank string`},
	{"github runCmd empty", `{"github/o/r":{"runCmd":""}}`, `mcp server "github/o/r": property "runCmd" must be a non-blank string`},
	{"github runCmd blank", `{"github/o/r":{"runCmd":" \t\n"}}`, `mcp server "github/o/r": property "runCmd" must be a non-blank string`},
	{"github run_cmd blank", `{"github/o/r":{"run_cmd":" "}}`, `mcp server "github/o/r": property "run_cmd" must be a non-blank string`},
	{"github run_cmd array", `{"github/o/r":{"run_cmd":["node","x"]}}`, `mcp server "github/o/r": property "run_cmd" must be a non-blank string`},
	{"local runCmd empty", `{"my-tool":{"runCmd":""}}`, `mcp server "my-tool": property "runCmd" must be a non-blank string`},
	{"local runCmd object", `{"my-tool":{"runCmd":{}}}`, `mcp server "my-tool": property "runCmd" must be a non-blank string`},
	{"local run_cmd boolean", `{"my-tool":{"run_cmd":true}}`, `mcp server "my-tool": property "run_cmd" must be a non-blank string`},
	{"catalog entry with bad runCmd", `{"memory":{"runCmd":1}}`, `mcp server "memory": property "runCmd" must be a non-blank string`},

	// installCmd.
	{"github installCmd number", `{"github/o/r":{"runCmd":"x","installCmd":1}}`, `mcp server "github/o/r": property "installCmd" must be a string`},
	{"github install_cmd array", `{"github/o/r":{"runCmd":"x","install_cmd":["npm","ci"]}}`, `mcp server "github/o/r": property "install_cmd" must be a string`},
	{"local installCmd boolean", `{"my-tool":{"runCmd":"x","installCmd":false}}`, `mcp server "my-tool": property "installCmd" must be a string`},
	{"catalog installCmd object", `{"memory":{"installCmd":{}}}`, `mcp server "memory": property "installCmd" must be a string`},

	// envs.
	{"envs string", `{"memory":{"envs":"A=b"}}`, `mcp server "memory": property "envs" must be an object of environment variable names to strings, not a string`},
	{"envs array", `{"my-tool":{"runCmd":"x","envs":[]}}`, `mcp server "my-tool": property "envs" must be an object of environment variable names to strings, not an array`},
	{"env name digit first", `{"memory":{"envs":{"1A":"x"}}}`, `mcp server "memory": env "1A" is not a valid name; use letters, digits and "_", not starting with a digit`},
	{"env name empty", `{"memory":{"envs":{"":"x"}}}`, `mcp server "memory": env "" is not a valid name; use letters, digits and "_", not starting with a digit`},
	{"env name dash", `{"memory":{"envs":{"A-B":"x"}}}`, `mcp server "memory": env "A-B" is not a valid name; use letters, digits and "_", not starting with a digit`},
	{"env name equals", `{"memory":{"envs":{"A=B":"x"}}}`, `mcp server "memory": env "A=B" is not a valid name; use letters, digits and "_", not starting with a digit`},
	{"env name non-ASCII", `{"memory":{"envs":{"É":"x"}}}`, `mcp server "memory": env "É" is not a valid name; use letters, digits and "_", not starting with a digit`},
	{"env value number", `{"memory":{"envs":{"PORT":8080}}}`, `mcp server "memory": env "PORT" must be a string, not a number`},
	{"env value null", `{"memory":{"envs":{"A":null}}}`, `mcp server "memory": env "A" must be a string, not null`},
	{"env value boolean", `{"github/o/r":{"runCmd":"x","envs":{"A":true}}}`, `mcp server "github/o/r": env "A" must be a string, not a boolean`},
	{"env on unknown server", `{"nope":{"envs":{"A":{}}}}`, `mcp server "nope": env "A" must be a string, not an object`},

	// Several problems at once: all of them, servers in sorted order.
	{"several", `{"memory":{"envs":{"1A":"x","B":2}},"github/o":{},"":{}}`, strings.Join([]string{
		`mcp: a server name is empty; name each server, e.g. "memory"`,
		githubNameMsg("github/o"),
		`mcp server "memory": env "1A" is not a valid name; use letters, digits and "_", not starting with a digit`,
		`mcp server "memory": env "B" must be a string, not a number`,
	}, "\n")},
	{"runCmd and installCmd both bad", `{"github/o/r":{"runCmd":1,"installCmd":2}}`, strings.Join([]string{
		`mcp server "github/o/r": property "runCmd" must be a non-blank string`,
		`mcp server "github/o/r": property "installCmd" must be a string`,
	}, "\n")},
}

func githubNameMsg(name string) string {
	return fmt.Sprintf(`mcp server %q: a GitHub server is named github/<owner>/<repo>, owner and repo made of letters, digits, "_", "." and "-" (and not "." or "..")`, name)
}

// checkPasses are objects the platform must accept, some of which the
// gateway will still refuse (the gateway knows its catalog).
var checkPasses = []struct{ name, in string }{
	{"null", `null`},
	{"null with spaces", " null\n"},
	{"empty object", `{}`},
	{"64 servers", manyServers(64)},
	{"name of 128 bytes", `{"` + strings.Repeat("a", 128) + `":{"runCmd":"x"}}`},
	{"unicode name", `{"mémoire":{"runCmd":"x"}}`},
	{"name with spaces and slashes", `{"my tool/v2":{}}`},
	{"catalog entry null", `{"memory":null}`},
	{"unknown catalog name", `{"brave":{}}`},
	{"unknown catalog name with properties", `{"brave":{"apiKey":"k","n":1}}`},
	{"missing required property", `{"filesystem":{}}`},
	{"property of the wrong type", `{"arxiv":{"storagePath":5}}`},
	{"github", `{"github/owner/repo":{"runCmd":"node index.js","installCmd":"npm ci","envs":{"A":"b"}}}`},
	{"github python spelling", `{"github/o-1/r_2.js":{"run_cmd":"x","install_cmd":""}}`},
	{"github dots in names", `{"github/.o/r..":{"runCmd":"x"}}`},
	{"github-like key without slash", `{"githubx":{}}`},
	{"GitHub key in other case", `{"GitHub/o":{}}`},
	{"runCmd and run_cmd differ", `{"t":{"runCmd":"a","run_cmd":"b"}}`},
	{"empty installCmd", `{"github/o/r":{"runCmd":"x","installCmd":""}}`},
	{"null installCmd and envs", `{"github/o/r":{"runCmd":"x","installCmd":null,"envs":null}}`},
	{"null runCmd on a catalog entry", `{"memory":{"runCmd":null}}`},
	{"empty envs", `{"memory":{"envs":{}}}`},
	{"env names", `{"memory":{"envs":{"_":"","a1":"x","A_B_9":"y"}}}`},
	{"NUL in runCmd", `{"t":{"runCmd":"a\u0000b"}}`},
	{"duplicate names", `{"memory":{},"memory":{}}`},
}

func TestCheckRejects(t *testing.T) {
	for _, tc := range checkRejects {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in))
			if err == nil {
				t.Fatalf("Check(%s) = nil, want %q", tc.in, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Check(%s):\n got %s\nwant %s", tc.in, err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("Check(%s) = %T, want an *Error", tc.in, err)
			}
		})
	}
}

func TestCheckPasses(t *testing.T) {
	for _, tc := range checkPasses {
		t.Run(tc.name, func(t *testing.T) {
			if err := Check([]byte(tc.in)); err != nil {
				t.Errorf("Check(%s) = %v, want nil", tc.in, err)
			}
		})
	}
}

// TestParseRejectsWhatCheckRejects: whatever the platform refuses, the
// gateway refuses with the same words.
func TestParseRejectsWhatCheckRejects(t *testing.T) {
	for _, tc := range checkRejects {
		t.Run(tc.name, func(t *testing.T) {
			servers, _, err := Parse([]byte(tc.in), nil)
			if err == nil {
				t.Fatalf("Parse(%s) = %v, nil; want %q", tc.in, servers, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%s):\n got %s\nwant %s", tc.in, err, tc.want)
			}
			if servers != nil {
				t.Errorf("Parse(%s) returned servers with an error: %v", tc.in, servers)
			}
		})
	}
}

func TestCheckErrorFields(t *testing.T) {
	tests := []struct {
		in                    string
		server, property, env string
	}{
		{`[]`, "", "", ""},
		{`{"":{}}`, "", "", ""},
		{`{"a\n":{}}`, "a\n", "", ""},
		{`{"memory":1}`, "memory", "", ""},
		{`{"github/o":{}}`, "github/o", "", ""},
		{`{"github/o/r":{}}`, "github/o/r", "runCmd", ""},
		{`{"t":{"run_cmd":""}}`, "t", "run_cmd", ""},
		{`{"t":{"install_cmd":1}}`, "t", "install_cmd", ""},
		{`{"t":{"envs":1}}`, "t", "envs", ""},
		{`{"t":{"envs":{"A":1}}}`, "t", "envs", "A"},
		{`{"t":{"envs":{"1":""}}}`, "t", "envs", "1"},
	}
	for _, tc := range tests {
		var e *Error
		if err := Check([]byte(tc.in)); !errors.As(err, &e) {
			t.Errorf("Check(%s) = %v, want an *Error", tc.in, err)
			continue
		}
		if e.Server != tc.server || e.Property != tc.property || e.Env != tc.env {
			t.Errorf("Check(%s): Server, Property, Env = %q, %q, %q; want %q, %q, %q",
				tc.in, e.Server, e.Property, e.Env, tc.server, tc.property, tc.env)
		}
	}
}

func TestCheckSyntaxErrorUnwraps(t *testing.T) {
	err := Check([]byte(`{"a":}`))
	var e *Error
	if !errors.As(err, &e) || e.Err == nil {
		t.Fatalf("Check = %v, want an *Error wrapping the JSON error", err)
	}
}
