package cli

import (
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/host"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		url        string
		headers    []string
	}{
		{[]string{"name", "--url", "u"}, []string{"name"}, "u", nil},
		{[]string{"--url", "u", "name"}, []string{"name"}, "u", nil},
		{[]string{"name", "--header", "A: b", "--header", "C: d"}, []string{"name"}, "", []string{"A: b", "C: d"}},
		{[]string{"name", "--url", "u", "--", "--not-a-flag", "x"}, []string{"name", "--not-a-flag", "x"}, "u", nil},
		{[]string{"a", "b", "--url=u", "c"}, []string{"a", "b", "c"}, "u", nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		url := fs.String("url", "", "")
		var headers listFlag
		fs.Var(&headers, "header", "")
		pos, code, done := parseInterleaved(fs, tt.args, io.Discard)
		if done {
			t.Errorf("%v: stopped with code %d", tt.args, code)
			continue
		}
		if !slices.Equal(pos, tt.positional) || *url != tt.url || !slices.Equal(headers, tt.headers) {
			t.Errorf("%v: positional %q url %q headers %q; want %q %q %q", tt.args, pos, *url, headers, tt.positional, tt.url, tt.headers)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, code, done := parseInterleaved(fs, []string{"name", "--nope"}, io.Discard); !done || code != exitUsage {
		t.Errorf("an unknown flag after a positional argument: done %v code %d", done, code)
	}
}

// A list flag takes its items repeated, comma-separated, or both (sbx's
// way), and a quoted item keeps its comma (and its line break).
func TestCommaListFlag(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--static", "a", "--static", "b"}, []string{"a", "b"}},
		{[]string{"--static", "a,b"}, []string{"a", "b"}},
		{[]string{"--static", "a,b", "--static", "c"}, []string{"a", "b", "c"}},
		{[]string{"--static=a"}, []string{"a"}},
		{[]string{"--static", `-y,"--only=a,b",pkg`}, []string{"-y", "--only=a,b", "pkg"}},
		{[]string{"--static", ""}, nil},
		{nil, nil},
		{[]string{"--static", "\"a\nb\",c"}, []string{"a\nb", "c"}},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var l commaListFlag
		fs.Var(&l, "static", "")
		if err := fs.Parse(tt.args); err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if !slices.Equal(l, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.args, l, tt.want)
		}
	}
	// An unquoted line break would end the CSV record and drop what
	// follows: refused, not cut.
	for _, v := range []string{"a\nb", "a,b\n\nc", "a\r\nb"} {
		var l commaListFlag
		if err := l.Set(v); err == nil || !strings.Contains(err.Error(), "line break") {
			t.Errorf("Set(%q) = %v (items %q), want the line break refused", v, err, l)
		}
	}
}

// server add's flags: --args as sbx's comma list, one word per flag, and
// after --; --header and --env whole values, commas included.
func TestServerAddFlags(t *testing.T) {
	var got host.ServerRequest
	dir := fakeHost(t, func(w http.ResponseWriter, r *http.Request) {
		got = host.ServerRequest{}
		_ = json.NewDecoder(r.Body).Decode(&got)
		_ = json.NewEncoder(w).Encode(host.AddResult{Server: &registry.Server{Name: got.Name}})
	})
	tests := []struct {
		args    []string
		cmdArgs []string
		headers []string
		env     []string
		props   []string
	}{
		{args: []string{"m", "--command", "npx", "--args", "-y,@modelcontextprotocol/server-memory"}, cmdArgs: []string{"-y", "@modelcontextprotocol/server-memory"}},
		{args: []string{"m", "--command", "npx", "--args", "-y", "--args", "@modelcontextprotocol/server-memory"}, cmdArgs: []string{"-y", "@modelcontextprotocol/server-memory"}},
		{args: []string{"m", "--command", "npx", "--", "-y", "a,b"}, cmdArgs: []string{"-y", "a,b"}},
		{args: []string{"m", "--command", "npx", "--args", "-y", "--", "pkg"}, cmdArgs: []string{"-y", "pkg"}},
		{args: []string{"m", "--url", "u", "--header", "Accept: a, b", "--header", "X: c"}, headers: []string{"Accept: a, b", "X: c"}},
		{args: []string{"m", "--command", "c", "--env", "A=x,y", "--property", "P,Q", "--property", "R"}, env: []string{"A=x,y"}, props: []string{"P", "Q", "R"}},
	}
	for _, tt := range tests {
		got = host.ServerRequest{}
		if code := runServer(append([]string{"add", "--state-dir", dir}, tt.args...), io.Discard, io.Discard); code != exitOK {
			t.Errorf("%q: exit %d", tt.args, code)
			continue
		}
		if !slices.Equal(got.Args, tt.cmdArgs) || !slices.Equal(got.Headers, tt.headers) || !slices.Equal(got.Env, tt.env) || !slices.Equal(got.Props, tt.props) {
			t.Errorf("%q: args %q headers %q env %q props %q; want %q %q %q %q", tt.args, got.Args, got.Headers, got.Env, got.Props, tt.cmdArgs, tt.headers, tt.env, tt.props)
		}
	}
}

// fakeHost serves a control socket in a new state directory with handler,
// for what the commands send; it returns the directory.
func fakeHost(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, host.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return dir
}

// sandbox create sends every --static server, repeated or comma-separated.
func TestSandboxCreateStatic(t *testing.T) {
	var got host.SandboxRequest
	dir := fakeHost(t, func(w http.ResponseWriter, r *http.Request) {
		got = host.SandboxRequest{}
		_ = json.NewDecoder(r.Body).Decode(&got)
		_ = json.NewEncoder(w).Encode(host.SandboxCreated{Name: got.Name})
	})
	for _, args := range [][]string{
		{"ci", "--static", "a", "--static", "b,c"},
		{"--static", "a,b", "ci", "--static=c"},
	} {
		if code := runSandbox(append([]string{"create", "--state-dir", dir}, args...), io.Discard, io.Discard); code != exitOK {
			t.Fatalf("%q: exit %d", args, code)
		}
		if got.Name != "ci" || !slices.Equal(got.Static, []string{"a", "b", "c"}) {
			t.Errorf("%q sent %+v, want static a, b, c", args, got)
		}
	}
}
