package mcpconfig

import (
	"strings"
	"testing"
)

// The gateway's rule for server names is its own, on top of Check's: Check
// (the platform's) takes every name below, Parse refuses the ones that could
// make two tools share a policy id.
func TestParseServerNames(t *testing.T) {
	cases := []struct {
		config string
		want   string // "" for none
	}{
		{`{"corp": {"runCmd": "a"}, "corp.tools-2_x": {"runCmd": "b"}, "github/o/r": {"runCmd": "c"}}`, ""},
		{`{"corp": {"runCmd": "a"}, "corp/tools": {"runCmd": "b"}}`, `mcp server "corp/tools": the gateway takes server names made of letters, digits, ".", "-" and "_" (at most 64, not "." or ".."), or github/<owner>/<repo>; rename the server`},
		{`{"my server": {"runCmd": "a"}}`, `mcp server "my server": the gateway takes server names`},
		{`{"` + strings.Repeat("a", 65) + `": {"runCmd": "a"}}`, `the gateway takes server names`},
		{`{"github": {"runCmd": "a"}, "github/o/r": {"runCmd": "b"}}`, `mcp server "github": a server named "github" cannot be given with "github/o/r"`},
		{`{"github": {"runCmd": "a"}}`, ""},
		{`{"mcpServers": {"corp/tools": {"command": "x"}}}`, `mcp server "corp/tools": the gateway takes server names`},
	}
	for _, c := range cases {
		if err := Check([]byte(c.config)); err != nil && !strings.Contains(c.config, "mcpServers") {
			t.Errorf("Check(%s) = %v: the platform's check must stay as the contract says", c.config, err)
		}
		_, _, err := Parse([]byte(c.config), nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Parse(%s) = %v, want no error", c.config, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Parse(%s) = %v, want an error with %q", c.config, err, c.want)
		}
	}
}

func TestIsPlainName(t *testing.T) {
	for name, want := range map[string]bool{"memory": true, "a.b-c_D9": true, "": false, ".": false, "..": false,
		"a/b": false, "a b": false, "é": false, strings.Repeat("x", 64): true, strings.Repeat("x", 65): false} {
		if IsPlainName(name) != want {
			t.Errorf("IsPlainName(%q) = %v, want %v", name, !want, want)
		}
	}
}
