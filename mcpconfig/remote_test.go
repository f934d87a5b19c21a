package mcpconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []Server
		warns []string
	}{
		{"url only", `{"docs":{"url":"https://mcp.example.com/mcp"}}`, []Server{
			{Name: "docs", Kind: KindRemote, URL: "https://mcp.example.com/mcp"},
		}, nil},
		{"headers with placeholders and envs", `{"notion":{"url":"https://mcp.notion.com/mcp","headers":{"Authorization":"Bearer ${NOTION_TOKEN}","X-Team":"core"},"envs":{"NOTION_TOKEN":"secret"}}}`, []Server{
			{Name: "notion", Kind: KindRemote, URL: "https://mcp.notion.com/mcp",
				Headers: map[string]string{"Authorization": "Bearer ${NOTION_TOKEN}", "X-Team": "core"},
				Env:     map[string]string{"NOTION_TOKEN": "secret"}},
		}, nil},
		{"transport http", `{"r":{"url":"http://127.0.0.1:3001/mcp","transport":"http"}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "http://127.0.0.1:3001/mcp", Transport: TransportHTTP},
		}, nil},
		{"transport sse", `{"r":{"url":"https://old.example.com/sse","transport":"sse"}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://old.example.com/sse", Transport: TransportSSE},
		}, nil},
		{"discoverFirst", `{"r":{"url":"https://a.example/mcp","discoverFirst":true}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, nil},
		{"discoverFirst false", `{"r":{"url":"https://a.example/mcp","discoverFirst":false}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp", InitializeFirst: true},
		}, nil},
		{"null headers and transport are absent", `{"r":{"url":"https://a.example/mcp","headers":null,"transport":null}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, nil},
		{"empty headers are nil", `{"r":{"url":"https://a.example/mcp","headers":{}}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, nil},
		{"query kept", `{"r":{"url":"https://a.example/sse?team=1"}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/sse?team=1"},
		}, nil},
		{"unknown property", `{"r":{"url":"https://a.example/mcp","retries":5}}`, []Server{
			{Name: "r", Kind: KindRemote, URL: "https://a.example/mcp"},
		}, []string{`mcp server "r": unknown property "retries" ignored`}},
		{"catalog name wins over url", `{"memory":{"url":"https://a.example/mcp"}}`, []Server{
			{Name: "memory", Kind: KindCatalog, Command: []string{"npx", "-y", "@modelcontextprotocol/server-memory"}},
		}, []string{`mcp server "memory": unknown property "url" ignored`}},
		{"github key wins over url", `{"github/o/r":{"runCmd":"x","url":"https://a.example/mcp"}}`, []Server{
			{Name: "github/o/r", Kind: KindGitHub, Command: []string{"/bin/sh", "-c", "x"}, GitHub: &GitHub{Owner: "o", Repo: "r"}},
		}, []string{`mcp server "github/o/r": unknown property "url" ignored`}},
		{"headers on a local command", `{"t":{"runCmd":"x","headers":{"A":"b"}}}`, []Server{
			{Name: "t", Kind: KindLocal, Command: []string{"/bin/sh", "-c", "x"}, Dir: "/"},
		}, []string{`mcp server "t": unknown property "headers" ignored`}},
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
		})
	}
}

func TestParseRemoteErrors(t *testing.T) {
	const r = `mcp server "r": `
	tests := []struct {
		name, in, want string
		header         string // the *Error's Header
	}{
		// url
		{"url not a string", `{"r":{"url":5}}`, r + `property "url" must be a string, not a number`, ""},
		{"url empty", `{"r":{"url":" "}}`, r + `property "url" must be an http:// or https:// URL, not empty`, ""},
		{"url scheme", `{"r":{"url":"ftp://files.example/mcp"}}`, r + `property "url" must be an http:// or https:// URL, not "ftp://files.example/mcp"`, ""},
		{"url relative", `{"r":{"url":"/mcp"}}`, r + `property "url" must be an http:// or https:// URL, not "/mcp"`, ""},
		{"url without host", `{"r":{"url":"https:///mcp"}}`, r + `property "url" has no host: "https:///mcp"`, ""},
		{"url invalid", `{"r":{"url":"http://[::1/mcp"}}`, r + `property "url" is not a valid URL: missing ']' in host`, ""},
		{"url with credentials", `{"r":{"url":"https://me:pw@a.example/mcp"}}`, r + `property "url" must not hold credentials (user:password@); send them in "headers", e.g. {"Authorization": "Basic ${CREDENTIALS}"}`, ""},
		{"url with a placeholder", `{"r":{"url":"https://a.example/mcp?key=${KEY}","envs":{"KEY":"k"}}}`, r + `property "url" holds a placeholder; placeholders are replaced only in "headers" (put the secret in a header)`, ""},
		{"url and runCmd", `{"r":{"url":"https://a.example/mcp","runCmd":"x"}}`, r + `properties "url" and "runCmd" cannot be given together; a server is remote (url) or a command (runCmd)`, ""},
		{"url and run_cmd", `{"r":{"url":"https://a.example/mcp","run_cmd":"x"}}`, r + `properties "url" and "run_cmd" cannot be given together; a server is remote (url) or a command (runCmd)`, ""},

		// transport
		{"transport unknown", `{"r":{"url":"https://a.example/mcp","transport":"websocket"}}`, r + `property "transport" must be "http" (streamable HTTP) or "sse" (HTTP+SSE), not "websocket"`, ""},
		{"transport not a string", `{"r":{"url":"https://a.example/mcp","transport":true}}`, r + `property "transport" must be "http" (streamable HTTP) or "sse" (HTTP+SSE), not a boolean`, ""},

		{"discoverFirst not a boolean", `{"r":{"url":"https://a.example/mcp","discoverFirst":"yes"}}`, r + `property "discoverFirst" must be true or false, not "yes"`, ""},

		// headers
		{"headers not an object", `{"r":{"url":"https://a.example/mcp","headers":["A: b"]}}`, r + `property "headers" must be an object of header names to strings, not an array`, ""},
		{"header name with a space", `{"r":{"url":"https://a.example/mcp","headers":{"X Key":"v"}}}`, r + "header \"X Key\" is not a valid header name; use letters, digits and !#$%&'*+-.^_`|~", "X Key"},
		{"header name empty", `{"r":{"url":"https://a.example/mcp","headers":{"":"v"}}}`, r + "header \"\" is not a valid header name; use letters, digits and !#$%&'*+-.^_`|~", ""},
		{"header name with a colon", `{"r":{"url":"https://a.example/mcp","headers":{"X-Key:":"v"}}}`, r + "header \"X-Key:\" is not a valid header name; use letters, digits and !#$%&'*+-.^_`|~", "X-Key:"},
		{"header the transport sets", `{"r":{"url":"https://a.example/mcp","headers":{"mcp-session-id":"v"}}}`, r + `header "mcp-session-id" is set by the gateway itself; remove it`, "mcp-session-id"},
		{"Host header", `{"r":{"url":"https://a.example/mcp","headers":{"Host":"b.example"}}}`, r + `header "Host" is set by the gateway itself; remove it`, "Host"},
		{"header twice", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"a","authorization":"b"}}}`, r + `header "authorization" is given more than once (as "Authorization" too; header names ignore case)`, "authorization"},
		{"header value a number", `{"r":{"url":"https://a.example/mcp","headers":{"X-Key":5}}}`, r + `header "X-Key" must be a string, not a number`, "X-Key"},
		{"header value with a line break", `{"r":{"url":"https://a.example/mcp","headers":{"X-Key":"a\r\nEvil: 1"}}}`, r + `header "X-Key" must not contain a line break or NUL character`, "X-Key"},
		{"header value with NUL", `{"r":{"url":"https://a.example/mcp","headers":{"X-Key":"a\u0000"}}}`, r + `header "X-Key" must not contain a line break or NUL character`, "X-Key"},
		{"placeholder not closed", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${TOKEN"}}}`, r + `header "Authorization": "${TOKEN" is not closed; write ${NAME}`, "Authorization"},
		{"placeholder bad name", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${1TOKEN}"}}}`, r + `header "Authorization": ${1TOKEN} is not a valid placeholder; write ${NAME} with NAME made of letters, digits, "_", "-" and ".", starting with a letter or "_"`, "Authorization"},
		{"placeholder empty", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"${}"}}}`, r + `header "Authorization": ${} is not a valid placeholder; write ${NAME} with NAME made of letters, digits, "_", "-" and ".", starting with a letter or "_"`, "Authorization"},
		{"VS Code input variable", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${input:token}"}}}`, r + `header "Authorization": ${input:token}: input variables are not supported; put the value in the server's environment variables and write ${NAME}`, "Authorization"},

		// envs keep their rules on a remote server.
		{"envs bad name", `{"r":{"url":"https://a.example/mcp","envs":{"API-KEY":"k"}}}`, r + `env "API-KEY" is not a valid name; use letters, digits and "_", not starting with a digit`, ""},

		// Every problem is reported.
		{"several", `{"r":{"url":"gopher://x","transport":"ws","headers":{"A B":"c"}}}`, strings.Join([]string{
			r + `property "url" must be an http:// or https:// URL, not "gopher://x"`,
			r + "header \"A B\" is not a valid header name; use letters, digits and !#$%&'*+-.^_`|~",
			r + `property "transport" must be "http" (streamable HTTP) or "sse" (HTTP+SSE), not "ws"`,
		}, "\n"), ""},
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
			if !errors.As(err, &e) || e.Server != "r" || e.Header != tc.header {
				t.Errorf("*Error = %+v; want server r, header %q", e, tc.header)
			}
		})
	}
}

func TestResolveHeaders(t *testing.T) {
	remote := func(headers, env map[string]string) Server {
		return Server{Name: "notion", Kind: KindRemote, URL: "https://mcp.notion.com/mcp", Headers: headers, Env: env}
	}
	tests := []struct {
		name   string
		server Server
		lookup func(string) (string, bool)
		want   map[string]string
		err    string
		env    string // the *Error's Env
	}{
		{name: "no headers", server: remote(nil, nil)},
		{name: "from envs", server: remote(map[string]string{"Authorization": "Bearer ${NOTION_TOKEN}", "X-Plain": "p"}, map[string]string{"NOTION_TOKEN": "tok-1"}),
			want: map[string]string{"Authorization": "Bearer tok-1", "X-Plain": "p"}},
		{name: "env: spelling", server: remote(map[string]string{"X-Key": "${env:KEY}"}, map[string]string{"KEY": "k"}),
			want: map[string]string{"X-Key": "k"}},
		{name: "several placeholders", server: remote(map[string]string{"Authorization": "Basic ${USER}:${PASS}"}, map[string]string{"USER": "u", "PASS": "p"}),
			want: map[string]string{"Authorization": "Basic u:p"}},
		{name: "literal", server: remote(map[string]string{"X-Tmpl": "$${NOT_A_PLACEHOLDER} costs $5"}, nil),
			want: map[string]string{"X-Tmpl": "${NOT_A_PLACEHOLDER} costs $5"}},
		{name: "a value is not expanded again", server: remote(map[string]string{"X-Key": "${A}"}, map[string]string{"A": "${B}", "B": "no"}),
			want: map[string]string{"X-Key": "${B}"}},
		{name: "empty value is set", server: remote(map[string]string{"X-Key": "k${A}"}, map[string]string{"A": ""}),
			want: map[string]string{"X-Key": "k"}},
		{name: "missing from envs", server: remote(map[string]string{"Authorization": "Bearer ${NOTION_TOKEN}"}, map[string]string{"OTHER": "secret"}),
			err: `mcp server "notion": header "Authorization" needs ${NOTION_TOKEN}, which is not set; add it to the server's "envs"`, env: "NOTION_TOKEN"},
		{name: "missing from a lookup", server: remote(map[string]string{"Authorization": "Bearer ${NOTION_TOKEN}"}, map[string]string{"NOTION_TOKEN": "secret"}),
			lookup: func(string) (string, bool) { return "", false },
			err:    `mcp server "notion": header "Authorization" needs ${NOTION_TOKEN}, which is not set`, env: "NOTION_TOKEN"},
		{name: "from a lookup", server: remote(map[string]string{"Authorization": "Bearer ${NOTION_TOKEN}"}, nil),
			lookup: func(name string) (string, bool) { return "from-" + name, true },
			want:   map[string]string{"Authorization": "Bearer from-NOTION_TOKEN"}},
		{name: "value with a line break", server: remote(map[string]string{"X-Key": "${KEY}"}, map[string]string{"KEY": "secret\r\nX-Evil: 1"}),
			err: `mcp server "notion": header "X-Key": the value of ${KEY} contains a line break or NUL character, which a header cannot carry`, env: "KEY"},
		{name: "every missing one, sorted by header", server: remote(map[string]string{"X-B": "${B}", "X-A": "${A}"}, nil),
			err: `mcp server "notion": header "X-A" needs ${A}, which is not set; add it to the server's "envs"` + "\n" +
				`mcp server "notion": header "X-B" needs ${B}, which is not set; add it to the server's "envs"`, env: "A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.server.ResolveHeaders(tc.lookup)
			if tc.err == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Errorf("ResolveHeaders = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Fatalf("ResolveHeaders = %v, %v\nwant error %s", got, err, tc.err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows a value")
			}
			var e *Error
			if !errors.As(err, &e) || e.Server != "notion" || e.Property != "headers" || e.Env != tc.env || e.Header == "" {
				t.Errorf("*Error = %+v", e)
			}
			if strings.Contains(tc.err, "not set") && !errors.Is(err, ErrMissingSecret) {
				t.Errorf("errors.Is(err, ErrMissingSecret) = false")
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	s := Server{Headers: map[string]string{"A": "${Z} ${B}", "C": "$${LITERAL} ${env:B}", "D": "plain"}}
	if got, want := s.Placeholders(), []string{"B", "Z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Placeholders() = %q, want %q", got, want)
	}
}

func TestCheckAcceptsRemoteEntries(t *testing.T) {
	// The platform's rules say nothing of url: a bad one is the gateway's to
	// reject, as an unknown catalog name is.
	for _, in := range []string{
		`{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${T}"},"envs":{"T":"x"}}}`,
		`{"r":{"url":"ftp://nope"}}`,
	} {
		if err := Check([]byte(in)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", in, err)
		}
	}
	if err := Check([]byte(`{"r":{"url":"https://a.example/mcp","envs":{"1X":"x"}}}`)); err == nil {
		t.Error("Check accepted a bad envs name on a remote entry")
	}
}
