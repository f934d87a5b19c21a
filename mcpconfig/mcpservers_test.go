package mcpconfig

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseServersFile(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []Server
		warns []string
	}{
		{"Claude Desktop", `{"mcpServers":{
			"memory":{"command":"npx","args":["-y","@modelcontextprotocol/server-memory"]},
			"fs":{"command":"/usr/bin/mcp-fs","args":["--root","/tmp/my files"],"env":{"DEBUG":"1"},"cwd":"/srv"}}}`, []Server{
			{Name: "fs", Kind: KindLocal, Command: []string{"/usr/bin/mcp-fs", "--root", "/tmp/my files"}, Env: map[string]string{"DEBUG": "1"}, Dir: "/srv"},
			{Name: "memory", Kind: KindLocal, Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		}, nil},
		{"command without args, type stdio", `{"mcpServers":{"t":{"type":"stdio","command":"mcp-time"}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"mcp-time"}},
		}, nil},
		{"arguments are not split or expanded", `{"mcpServers":{"t":{"command":"python3","args":["-c","print('a b'); $HOME"]}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"python3", "-c", "print('a b'); $HOME"}},
		}, nil},
		{"remote with headers and env", `{"mcpServers":{"notion":{"url":"https://mcp.notion.com/mcp","headers":{"Authorization":"Bearer ${env:NOTION_TOKEN}"},"env":{"NOTION_TOKEN":"t"}}}}`, []Server{
			{Name: "notion", Kind: KindRemote, URL: "https://mcp.notion.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${env:NOTION_TOKEN}"}, Env: map[string]string{"NOTION_TOKEN": "t"}},
		}, nil},
		{"Windsurf serverUrl", `{"mcpServers":{"r":{"serverUrl":"https://a.example/mcp"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, nil},
		{"url and serverUrl agree", `{"mcpServers":{"r":{"url":"https://a.example/mcp","serverUrl":"https://a.example/mcp"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, nil},
		{"type http", `{"mcpServers":{"r":{"type":"http","url":"https://a.example/mcp"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp", Transport: TransportHTTP},
		}, nil},
		{"type streamable-http", `{"mcpServers":{"r":{"type":"streamable-http","url":"https://a.example/mcp"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp", Transport: TransportHTTP},
		}, nil},
		{"type streamableHttp", `{"mcpServers":{"r":{"type":"streamableHttp","url":"https://a.example/mcp"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp", Transport: TransportHTTP},
		}, nil},
		{"type sse", `{"mcpServers":{"r":{"type":"sse","url":"https://a.example/sse"}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/sse", Transport: TransportSSE},
		}, nil},
		{"names are not catalog names", `{"mcpServers":{"memory":{"command":"my-memory"},"github/o/r":{"command":"x"}}}`, []Server{
			{Name: "github/o/r", Kind: KindLocal, Command: []string{"x"}},
			{Name: "memory", Kind: KindLocal, Command: []string{"my-memory"}},
		}, nil},
		{"disabled", `{"mcpServers":{"off":{"command":"x","disabled":true},"on":{"command":"y","disabled":false}}}`, []Server{
			{Name: "on", Kind: KindLocal, Command: []string{"y"}},
		}, []string{`mcp server "off": "disabled" is true; the server is skipped`}},
		{"a disabled entry is not checked", `{"mcpServers":{"off":{"disabled":true,"command":5}}}`, []Server{}, []string{`mcp server "off": "disabled" is true; the server is skipped`}},
		{"unknown properties", `{"mcpServers":{"t":{"command":"x","autoApprove":["a"],"timeout":60}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"x"}},
		}, []string{`mcp server "t": unknown property "autoApprove" ignored`, `mcp server "t": unknown property "timeout" ignored`}},
		{"headers on a command", `{"mcpServers":{"t":{"command":"x","headers":{"A":"b"}}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"x"}},
		}, []string{`mcp server "t": unknown property "headers" ignored`}},
		{"null properties are absent", `{"mcpServers":{"t":{"command":"x","args":null,"env":null,"url":null}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"x"}},
		}, nil},
		{"duplicate name", `{"mcpServers":{"t":{"command":"a"},"t":{"command":"b"}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"b"}},
		}, []string{`mcp server "t": the name is given more than once; the last one is used`}},
		{"no servers", `{"mcpServers":{}}`, []Server{}, nil},
		{"null servers", `{"mcpServers":null}`, []Server{}, nil},
		{"VS Code", `{"servers":{"gh":{"type":"http","url":"https://api.githubcopilot.com/mcp/"},"mem":{"type":"stdio","command":"npx","args":["-y","@modelcontextprotocol/server-memory"]}}}`, []Server{
			{Name: "gh", Kind: KindRemote, URL: "https://api.githubcopilot.com/mcp/", Transport: TransportHTTP},
			{Name: "mem", Kind: KindLocal, Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		}, nil},
		{"VS Code with inputs", `{"inputs":[{"id":"tok","type":"promptString"}],"servers":{"mem":{"command":"mcp-memory"}}}`, []Server{
			{Name: "mem", Kind: KindLocal, Command: []string{"mcp-memory"}},
		}, []string{`mcp: "inputs" ignored: ${input:...} variables are not supported; put values in each server's "env"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warns, err := Parse([]byte(tc.in), nil)
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%s):\n got %#v\nwant %#v", tc.in, got, tc.want)
			}
			var ws []string
			for _, w := range warns {
				ws = append(ws, w.String())
			}
			if !reflect.DeepEqual(ws, tc.warns) {
				t.Errorf("warnings %q, want %q", ws, tc.warns)
			}
			if err := Check([]byte(tc.in)); err != nil {
				t.Errorf("Check(%s) = %v, want nil", tc.in, err)
			}
		})
	}
}

// TestServersFileIsRecognisedExactly: only the documented shapes are the
// mcpServers format; anything else stays an mcp object.
func TestServersFileIsRecognisedExactly(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Server
		err      string
	}{
		{"a server named servers", `{"servers":{"runCmd":"x"}}`, []Server{
			{Name: "servers", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "x"}, Dir: "/"},
		}, ""},
		{"a remote server named servers", `{"servers":{"url":"https://a.example/mcp"}}`, []Server{
			{Name: "servers", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, ""},
		{"mcpServers beside another key", `{"mcpServers":{"t":{"command":"x"}},"memory":{}}`, nil,
			`mcp server "mcpServers": unknown server; the catalog has: arxiv, duckduckgo, fetch, filesystem, memory, sequentialthinking, time (a server of your own needs "runCmd"; a GitHub server is named github/<owner>/<repo>)`},
		{"servers with an entry that is no server", `{"servers":{"a":{"command":"x"},"b":{"foo":1}}}`, nil,
			`mcp server "servers": unknown server; the catalog has: arxiv, duckduckgo, fetch, filesystem, memory, sequentialthinking, time (a server of your own needs "runCmd"; a GitHub server is named github/<owner>/<repo>)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Parse([]byte(tc.in), nil)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Parse(%s) = %v\nwant %s", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%s) = %#v, %v\nwant %#v", tc.in, got, err, tc.want)
			}
		})
	}
}

func manyServersFile(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"s%d":{"command":"true"}`, i)
	}
	return `{"mcpServers":{` + strings.Join(parts, ",") + "}}"
}

func TestParseServersFileErrors(t *testing.T) {
	const x = `mcp server "x": `
	tests := []struct {
		name, in, want string
		property       string // the *Error's Property
	}{
		// The document.
		{"not an object", `{"mcpServers":[]}`, `mcp: "mcpServers" must be an object keyed by server name, not an array`, ""},
		{"65 servers", manyServersFile(65), `mcp: 65 servers given; at most 64 are allowed`, ""},
		{"empty name", `{"mcpServers":{"":{"command":"x"}}}`, `mcp: a server name is empty; name each server, e.g. "memory"`, ""},
		{"control character in a name", `{"mcpServers":{"a\nb":{"command":"x"}}}`, `mcp server "a\nb": the name contains a control character`, ""},

		// Entries.
		{"entry a string", `{"mcpServers":{"x":"npx"}}`, x + `the value must be a JSON object with "command" (a local server) or "url" (a remote one), not a string`, ""},
		{"entry null", `{"mcpServers":{"x":null}}`, x + `the value must be a JSON object with "command" (a local server) or "url" (a remote one), not null`, ""},
		{"neither command nor url", `{"mcpServers":{"x":{"args":["a"]}}}`, x + `an entry needs "command" (a local server) or "url" (a remote one)`, ""},
		{"command and url", `{"mcpServers":{"x":{"command":"a","url":"https://a.example/mcp"}}}`, x + `properties "command" and "url" cannot be given together; a server is local (command) or remote (url)`, "command"},
		{"disabled not a boolean", `{"mcpServers":{"x":{"command":"a","disabled":"yes"}}}`, x + `property "disabled" must be true or false, not a string`, "disabled"},

		// Commands.
		{"command blank", `{"mcpServers":{"x":{"command":"  "}}}`, x + `property "command" must be a non-blank string`, "command"},
		{"command not a string", `{"mcpServers":{"x":{"command":["npx","-y"]}}}`, x + `property "command" must be a non-blank string`, "command"},
		{"command with NUL", `{"mcpServers":{"x":{"command":"a\u0000"}}}`, x + `property "command" must not contain a NUL character`, "command"},
		{"args a string", `{"mcpServers":{"x":{"command":"a","args":"-y pkg"}}}`, x + `property "args" must be an array of strings, not a string`, "args"},
		{"args with a number", `{"mcpServers":{"x":{"command":"a","args":["-p",8080]}}}`, x + `property "args" must be an array of strings; item 1 is a number`, "args"},
		{"args with NUL", `{"mcpServers":{"x":{"command":"a","args":["\u0000"]}}}`, x + `property "args" must not contain a NUL character`, "args"},
		{"cwd relative", `{"mcpServers":{"x":{"command":"a","cwd":"srv"}}}`, x + `property "cwd" must be an absolute path, not "srv"`, "cwd"},
		{"cwd not a string", `{"mcpServers":{"x":{"command":"a","cwd":1}}}`, x + `property "cwd" must be a string, not a number`, "cwd"},
		{"env not an object", `{"mcpServers":{"x":{"command":"a","env":["A=1"]}}}`, x + `property "env" must be an object of environment variable names to strings, not an array`, "env"},
		{"env bad name", `{"mcpServers":{"x":{"command":"a","env":{"API-KEY":"k"}}}}`, x + `env "API-KEY" is not a valid name; use letters, digits and "_", not starting with a digit`, "env"},
		{"env not a string", `{"mcpServers":{"x":{"command":"a","env":{"PORT":8080}}}}`, x + `env "PORT" must be a string, not a number`, "env"},
		{"env with NUL", `{"mcpServers":{"x":{"command":"a","env":{"A":"\u0000"}}}}`, x + `env "A" must not contain a NUL character`, "env"},
		{"type unknown", `{"mcpServers":{"x":{"command":"a","type":"ws"}}}`, x + `property "type" must be "stdio", "http", "streamable-http" or "sse", not "ws"`, "type"},
		{"type http on a command", `{"mcpServers":{"x":{"command":"a","type":"http"}}}`, x + `property "type" is "http", but the entry has "command"; a command server is "stdio"`, "type"},

		// Remote entries.
		{"type stdio on a url", `{"mcpServers":{"x":{"url":"https://a.example/mcp","type":"stdio"}}}`, x + `property "type" is "stdio", but the entry has "url"; a remote server is "http" or "sse"`, "type"},
		{"url and serverUrl differ", `{"mcpServers":{"x":{"url":"https://a.example/mcp","serverUrl":"https://b.example/mcp"}}}`, x + `properties "url" and "serverUrl" differ; give only one`, "serverUrl"},
		{"bad serverUrl", `{"mcpServers":{"x":{"serverUrl":"file:///tmp/sock"}}}`, x + `property "serverUrl" must be an http:// or https:// URL, not "file:///tmp/sock"`, "serverUrl"},
		{"bad header", `{"mcpServers":{"x":{"url":"https://a.example/mcp","headers":{"Content-Type":"text/plain"}}}}`, x + `header "Content-Type" is set by the gateway itself; remove it`, "headers"},

		// Every problem is reported, sorted by server.
		{"several", `{"mcpServers":{"z":{"command":""},"a":{"url":"x"}}}`, strings.Join([]string{
			`mcp server "a": property "url" must be an http:// or https:// URL, not "x"`,
			`mcp server "z": property "command" must be a non-blank string`,
		}, "\n"), "url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			servers, _, err := Parse([]byte(tc.in), nil)
			if err == nil {
				t.Fatalf("Parse(%s) = %v, nil; want an error", tc.in, servers)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%s):\n got %s\nwant %s", tc.in, err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Property != tc.property {
				t.Errorf("*Error = %+v; want property %q", e, tc.property)
			}
			// The platform's check applies the same rules to this format.
			if err := Check([]byte(tc.in)); err == nil || err.Error() != tc.want {
				t.Errorf("Check(%s) = %v\nwant %s", tc.in, err, tc.want)
			}
		})
	}
}
