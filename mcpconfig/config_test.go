package mcpconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testCatalog parses a catalog from JSON or fails the test.
func testCatalog(t *testing.T, data string) *Catalog {
	t.Helper()
	c, err := parseCatalog("test.json", []byte(data))
	if err != nil {
		t.Fatalf("parseCatalog: %v", err)
	}
	return c
}

// typesCatalog has one property of each type, for Parse's type checks.
const typesCatalog = `{
  "typed": {
    "description": "one property of each type",
    "command": [["prog"], ["--s", "{{s}}"], ["--n", "{{n}}"], ["--b={{b}}"], ["{{a}}"]],
    "properties": {
      "s": {"type": "string"},
      "n": {"type": "number"},
      "b": {"type": "boolean"},
      "a": {"type": "array"},
      "req": {"type": "string", "required": true}
    }
  }
}`

func TestParseResolves(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Server
	}{
		{"null", `null`, []Server{}},
		{"empty", `{}`, []Server{}},
		{"catalog null", `{"memory":null}`, []Server{
			{Name: "memory", Kind: KindCatalog, Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		}},
		{"catalog with envs", `{"fetch":{"envs":{"HTTPS_PROXY":"http://proxy:3128"}}}`, []Server{
			{Name: "fetch", Kind: KindCatalog, Command: []string{"uvx", "mcp-server-fetch"}, Env: map[string]string{"HTTPS_PROXY": "http://proxy:3128"}},
		}},
		{"catalog properties", `{"filesystem":{"paths":["/home/user","/tmp"]},"arxiv":{"storagePath":"/data/papers"}}`, []Server{
			{Name: "arxiv", Kind: KindCatalog, Command: []string{"uvx", "arxiv-mcp-server", "--storage-path", "/data/papers"}},
			{Name: "filesystem", Kind: KindCatalog, Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/user", "/tmp"}},
		}},
		{"github", `{"github/modelcontextprotocol/servers":{"runCmd":"node dist/index.js","installCmd":"npm ci","envs":{"TOKEN":"t"}}}`, []Server{
			{Name: "github/modelcontextprotocol/servers", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "node dist/index.js"},
				Env: map[string]string{"TOKEN": "t"}, GitHub: &GitHub{Owner: "modelcontextprotocol", Repo: "servers", InstallCmd: "npm ci"}},
		}},
		{"github python spelling", `{"github/o/r":{"run_cmd":"python -m srv","install_cmd":"pip install ."}}`, []Server{
			{Name: "github/o/r", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "python -m srv"}, GitHub: &GitHub{Owner: "o", Repo: "r", InstallCmd: "pip install ."}},
		}},
		{"github both spellings agree", `{"github/o/r":{"runCmd":"x","run_cmd":"x","installCmd":"i","install_cmd":"i"}}`, []Server{
			{Name: "github/o/r", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "x"}, GitHub: &GitHub{Owner: "o", Repo: "r", InstallCmd: "i"}},
		}},
		{"github null alias", `{"github/o/r":{"runCmd":"x","run_cmd":null}}`, []Server{
			{Name: "github/o/r", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "x"}, GitHub: &GitHub{Owner: "o", Repo: "r"}},
		}},
		{"local", `{"my-tool":{"runCmd":"python3 server.py --port 0","envs":{"A":"1","B":""}}}`, []Server{
			{Name: "my-tool", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "python3 server.py --port 0"}, Env: map[string]string{"A": "1", "B": ""}, Dir: "/"},
		}},
		{"local python spelling", `{"t":{"run_cmd":"x"}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "x"}, Dir: "/"},
		}},
		{"runCmd keeps spaces", `{"t":{"runCmd":"  x  "}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "  x  "}, Dir: "/"},
		}},
		{"empty envs is nil", `{"t":{"runCmd":"x","envs":{}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "x"}, Dir: "/"},
		}},
		{"github key wins over runCmd", `{"github/o/memory":{"runCmd":"x"}}`, []Server{
			{Name: "github/o/memory", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "x"}, GitHub: &GitHub{Owner: "o", Repo: "memory"}},
		}},
		{"catalog name wins over runCmd", `{"time":{"runCmd":"my-time-server"}}`, []Server{
			{Name: "time", Kind: KindCatalog, Command: []string{"uvx", "mcp-server-time"}},
		}},
		{"sorted by name", `{"time":{},"b":{"runCmd":"b"},"github/a/b":{"runCmd":"g"},"A":{"runCmd":"a"}}`, []Server{
			{Name: "A", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "a"}, Dir: "/"},
			{Name: "b", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "b"}, Dir: "/"},
			{Name: "github/a/b", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "g"}, GitHub: &GitHub{Owner: "a", Repo: "b"}},
			{Name: "time", Kind: KindCatalog, Command: []string{"uvx", "mcp-server-time"}},
		}},
		{"last duplicate wins", `{"t":{"runCmd":"first"},"t":{"runCmd":"second","runCmd":"third"}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "third"}, Dir: "/"},
		}},
		{"escaped name", `{"my\u002dtool":{"runCmd":"x"}}`, []Server{
			{Name: "my-tool", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "x"}, Dir: "/"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Parse([]byte(tc.in), nil)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%s):\n got %#v\nwant %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	unknownMsg := `unknown server; the catalog has: arxiv, duckduckgo, fetch, filesystem, memory, sequentialthinking, time (a server of your own needs "runCmd"; a GitHub server is named github/<owner>/<repo>)`
	tests := []struct {
		name, in, want string
		catalog        string // "" means the built-in catalog
	}{
		// Unknown servers.
		{"unknown server", `{"brave":{}}`, `mcp server "brave": ` + unknownMsg, ""},
		{"unknown server null", `{"brave":null}`, `mcp server "brave": ` + unknownMsg, ""},
		{"unknown server, only installCmd", `{"brave":{"installCmd":"npm i"}}`, `mcp server "brave": ` + unknownMsg, ""},
		{"unknown server, runCmd null", `{"brave":{"runCmd":null}}`, `mcp server "brave": ` + unknownMsg, ""},
		{"catalog names are case-sensitive", `{"Memory":{}}`, `mcp server "Memory": ` + unknownMsg, ""},
		{"unknown server, empty catalog", `{"memory":{}}`, `mcp server "memory": unknown server; the catalog has: none (a server of your own needs "runCmd"; a GitHub server is named github/<owner>/<repo>)`, `{}`},

		// Aliases.
		{"runCmd and run_cmd differ", `{"t":{"runCmd":"a","run_cmd":"b"}}`, `mcp server "t": properties "runCmd" and "run_cmd" differ; give only one`, ""},
		{"github runCmd and run_cmd differ", `{"github/o/r":{"runCmd":"a","run_cmd":"b"}}`, `mcp server "github/o/r": properties "runCmd" and "run_cmd" differ; give only one`, ""},
		{"installCmd and install_cmd differ", `{"github/o/r":{"runCmd":"a","installCmd":"npm ci","install_cmd":"npm i"}}`, `mcp server "github/o/r": properties "installCmd" and "install_cmd" differ; give only one`, ""},

		// NUL characters cannot reach exec.
		{"NUL in runCmd", `{"t":{"runCmd":"a\u0000b"}}`, `mcp server "t": property "runCmd" must not contain a NUL character`, ""},
		{"NUL in run_cmd", `{"github/o/r":{"run_cmd":"a\u0000"}}`, `mcp server "github/o/r": property "run_cmd" must not contain a NUL character`, ""},
		{"NUL in installCmd", `{"github/o/r":{"runCmd":"a","installCmd":"\u0000"}}`, `mcp server "github/o/r": property "installCmd" must not contain a NUL character`, ""},
		{"NUL in env", `{"memory":{"envs":{"A":"x\u0000"}}}`, `mcp server "memory": env "A" must not contain a NUL character`, ""},
		{"NUL in string property", `{"arxiv":{"storagePath":"/a\u0000"}}`, `mcp server "arxiv": property "storagePath" must not contain a NUL character`, ""},
		{"NUL in array property", `{"filesystem":{"paths":["/a","\u0000"]}}`, `mcp server "filesystem": property "paths" must not contain a NUL character`, ""},

		// Catalog properties, built in.
		{"required missing", `{"filesystem":{}}`, `mcp server "filesystem": property "paths" is required`, ""},
		{"required, entry null", `{"filesystem":null}`, `mcp server "filesystem": property "paths" is required`, ""},
		{"required null", `{"filesystem":{"paths":null}}`, `mcp server "filesystem": property "paths" is required`, ""},
		{"required array empty", `{"filesystem":{"paths":[]}}`, `mcp server "filesystem": property "paths" must not be empty`, ""},
		{"array given a string", `{"filesystem":{"paths":"/home"}}`, `mcp server "filesystem": property "paths" must be an array of strings`, ""},
		{"array with a number", `{"filesystem":{"paths":["/a",1]}}`, `mcp server "filesystem": property "paths" must be an array of strings`, ""},
		{"array with null", `{"filesystem":{"paths":[null]}}`, `mcp server "filesystem": property "paths" must be an array of strings`, ""},
		{"string given a number", `{"arxiv":{"storagePath":5}}`, `mcp server "arxiv": property "storagePath" must be a string`, ""},
		{"string given an array", `{"arxiv":{"storagePath":["/a"]}}`, `mcp server "arxiv": property "storagePath" must be a string`, ""},

		// Catalog properties, each type.
		{"string given a boolean", `{"typed":{"req":"x","s":true}}`, `mcp server "typed": property "s" must be a string`, typesCatalog},
		{"number given a string", `{"typed":{"req":"x","n":"5"}}`, `mcp server "typed": property "n" must be a number`, typesCatalog},
		{"number out of range", `{"typed":{"req":"x","n":1e400}}`, `mcp server "typed": property "n" is out of range for a number`, typesCatalog},
		{"boolean given a string", `{"typed":{"req":"x","b":"true"}}`, `mcp server "typed": property "b" must be true or false`, typesCatalog},
		{"boolean given a number", `{"typed":{"req":"x","b":1}}`, `mcp server "typed": property "b" must be true or false`, typesCatalog},
		{"array given an object", `{"typed":{"req":"x","a":{}}}`, `mcp server "typed": property "a" must be an array of strings`, typesCatalog},
		{"required string missing", `{"typed":{}}`, `mcp server "typed": property "req" is required`, typesCatalog},
		{"every property wrong", `{"typed":{"s":1,"n":true,"b":"x","a":[1]}}`, strings.Join([]string{
			`mcp server "typed": property "a" must be an array of strings`,
			`mcp server "typed": property "b" must be true or false`,
			`mcp server "typed": property "n" must be a number`,
			`mcp server "typed": property "req" is required`,
			`mcp server "typed": property "s" must be a string`,
		}, "\n"), typesCatalog},

		// Problems of several servers are all reported, sorted by server.
		{"several servers", `{"zz":{},"filesystem":{"paths":[]},"aa":{"runCmd":"a","run_cmd":"b"}}`, strings.Join([]string{
			`mcp server "aa": properties "runCmd" and "run_cmd" differ; give only one`,
			`mcp server "filesystem": property "paths" must not be empty`,
			`mcp server "zz": ` + unknownMsg,
		}, "\n"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cat *Catalog
			if tc.catalog != "" {
				cat = testCatalog(t, tc.catalog)
			}
			servers, _, err := Parse([]byte(tc.in), cat)
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

func TestParseErrorFields(t *testing.T) {
	tests := []struct {
		in                    string
		server, property, env string
		unknown               bool
	}{
		{`{"nope":{}}`, "nope", "", "", true},
		{`{"filesystem":{}}`, "filesystem", "paths", "", false},
		{`{"arxiv":{"storagePath":1}}`, "arxiv", "storagePath", "", false},
		{`{"t":{"runCmd":"a","run_cmd":"b"}}`, "t", "runCmd", "", false},
		{`{"t":{"run_cmd":"\u0000"}}`, "t", "run_cmd", "", false},
		{`{"memory":{"envs":{"K":"\u0000"}}}`, "memory", "envs", "K", false},
	}
	for _, tc := range tests {
		_, _, err := Parse([]byte(tc.in), nil)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%s) = %v, want an *Error", tc.in, err)
			continue
		}
		if e.Server != tc.server || e.Property != tc.property || e.Env != tc.env {
			t.Errorf("Parse(%s): Server, Property, Env = %q, %q, %q; want %q, %q, %q",
				tc.in, e.Server, e.Property, e.Env, tc.server, tc.property, tc.env)
		}
		if got := errors.Is(err, ErrUnknownServer); got != tc.unknown {
			t.Errorf("Parse(%s): errors.Is(err, ErrUnknownServer) = %v, want %v", tc.in, got, tc.unknown)
		}
	}
}

func TestParseSeveralErrorsUnwrap(t *testing.T) {
	_, _, err := Parse([]byte(`{"b":{},"a":{}}`), nil)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Parse = %T, want joined errors", err)
	}
	var names []string
	for _, err := range joined.Unwrap() {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%T is not an *Error", err)
		}
		names = append(names, e.Server)
	}
	if want := []string{"a", "b"}; !reflect.DeepEqual(names, want) {
		t.Errorf("servers in the errors = %q, want %q", names, want)
	}
}

func TestParseWarnings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"none", `{"memory":{},"arxiv":{"storagePath":"/p","envs":{"A":"b"}}}`, nil},
		{"unknown catalog property", `{"memory":{"foo":1}}`, []string{`mcp server "memory": unknown property "foo" ignored`}},
		{"unknown properties sorted", `{"memory":{"zz":1,"aa":{}}}`, []string{
			`mcp server "memory": unknown property "aa" ignored`,
			`mcp server "memory": unknown property "zz" ignored`,
		}},
		{"null property is absent", `{"memory":{"foo":null}}`, nil},
		{"runCmd on a catalog server", `{"memory":{"runCmd":"x","installCmd":"y"}}`, []string{
			`mcp server "memory": unknown property "installCmd" ignored`,
			`mcp server "memory": unknown property "runCmd" ignored`,
		}},
		{"property of another catalog entry", `{"memory":{"paths":["/"]}}`, []string{`mcp server "memory": unknown property "paths" ignored`}},
		{"installCmd on a local command", `{"t":{"runCmd":"x","installCmd":"y"}}`, []string{`mcp server "t": unknown property "installCmd" ignored`}},
		{"unknown on github", `{"github/o/r":{"runCmd":"x","branch":"main"}}`, []string{`mcp server "github/o/r": unknown property "branch" ignored`}},
		{"duplicate name", `{"memory":{},"memory":{"foo":1}}`, []string{
			`mcp server "memory": the name is given more than once; the last one is used`,
			`mcp server "memory": unknown property "foo" ignored`,
		}},
		{"duplicate property", `{"t":{"runCmd":"a","runCmd":"b"}}`, []string{`mcp server "t": property "runCmd" is given more than once; the last one is used`}},
		{"servers in order", `{"time":{"x":1},"fetch":{"y":2}}`, []string{
			`mcp server "fetch": unknown property "y" ignored`,
			`mcp server "time": unknown property "x" ignored`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := Parse([]byte(tc.in), nil)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			var got []string
			for _, w := range warns {
				got = append(got, w.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%s) warnings:\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseWarningFields(t *testing.T) {
	_, warns, err := Parse([]byte(`{"memory":{"foo":1}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Warning{{Server: "memory", Property: "foo", Message: `unknown property "foo" ignored`}}
	if !reflect.DeepEqual(warns, want) {
		t.Errorf("warnings = %#v, want %#v", warns, want)
	}
}

func TestParseWarningsWithError(t *testing.T) {
	_, warns, err := Parse([]byte(`{"memory":{"foo":1},"nope":{}}`), nil)
	if err == nil {
		t.Fatal("Parse succeeded, want an error for nope")
	}
	if len(warns) != 1 || warns[0].String() != `mcp server "memory": unknown property "foo" ignored` {
		t.Errorf("warnings = %v, want the one for memory", warns)
	}
}

func TestCloneURL(t *testing.T) {
	g := &GitHub{Owner: "modelcontextprotocol", Repo: "servers"}
	tests := []struct{ base, want string }{
		{"", "https://github.com/modelcontextprotocol/servers.git"},
		{"https://github.com", "https://github.com/modelcontextprotocol/servers.git"},
		{"http://127.0.0.1:8080/git/", "http://127.0.0.1:8080/git/modelcontextprotocol/servers.git"},
		{"file:///srv/repos", "file:///srv/repos/modelcontextprotocol/servers.git"},
	}
	for _, tc := range tests {
		if got := g.CloneURL(tc.base); got != tc.want {
			t.Errorf("CloneURL(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}

func TestParseEnvIsPerServerCopy(t *testing.T) {
	cat := testCatalog(t, `{"e":{"description":"d","command":[["p"]],"env":{"A":"entry","B":"entry"}}}`)
	servers, _, err := Parse([]byte(`{"e":{"envs":{"B":"user","C":"user"}}}`), cat)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "entry", "B": "user", "C": "user"}
	if !reflect.DeepEqual(servers[0].Env, want) {
		t.Errorf("Env = %v, want %v", servers[0].Env, want)
	}
	servers[0].Env["A"] = "changed"
	again, _, _ := Parse([]byte(`{"e":{}}`), cat)
	if again[0].Env["A"] != "entry" {
		t.Errorf("changing a Server's Env changed the catalog: %v", again[0].Env)
	}
}

func TestTimeoutProperty(t *testing.T) {
	servers, warns, err := Parse([]byte(`{"slow": {"runCmd": "x", "timeout": 2.5}, "memory": {"timeout": 30}}`), nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	got := map[string]time.Duration{}
	for _, s := range servers {
		got[s.Name] = s.Timeout
	}
	if got["slow"] != 2500*time.Millisecond || got["memory"] != 30*time.Second {
		t.Errorf("timeouts %v", got)
	}
	for _, bad := range []string{`"soon"`, `0`, `-1`, `100000`} {
		_, _, err := Parse([]byte(`{"slow": {"runCmd": "x", "timeout": `+bad+`}}`), nil)
		want := `mcp server "slow": property "timeout" must be a number of seconds between 0 and 86400, e.g. 30`
		if err == nil || err.Error() != want {
			t.Errorf("timeout %s: error %v, want %q", bad, err, want)
		}
	}
}
