package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// Every refusal of a registration names the server and says what to write
// instead; nothing is registered.
func TestBuildServerRefusals(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}}}
	const u = "http://127.0.0.1:1/mcp"
	tests := []struct {
		name string
		req  ServerRequest
		want string
	}{
		{"empty name", ServerRequest{URL: u}, `server name is empty`},
		{"bad name", ServerRequest{Name: "a/b", URL: u}, `server name "a/b": use only letters, digits, '.', '-' and '_'`},
		{"reserved name", ServerRequest{Name: "mcp-gateway", URL: u}, `server name "mcp-gateway" is reserved for the gateway's own tools`},
		{"no kind", ServerRequest{Name: "s"}, `mcp server "s": give exactly one of --url (a remote server), --command (a local one) or --metadata (a registry entry or server.json)`},
		{"two kinds", ServerRequest{Name: "s", URL: u, Command: "c"}, `mcp server "s": give exactly one of --url (a remote server), --command (a local one) or --metadata (a registry entry or server.json)`},
		{"private for a command", ServerRequest{Name: "s", Command: "c", AllowPrivateAddress: true}, `mcp server "s": --allow-private-address is for a server reached over the network (--url, or a --metadata URL), not a --command`},
		{"per-client remote", ServerRequest{Name: "s", URL: u, PerClient: true}, `mcp server "s": --per-client is for a local server (--command or --metadata); a remote one already gets a session per client`},
		{"initialize-first for a command", ServerRequest{Name: "s", Command: "c", InitializeFirst: true}, `mcp server "s": --initialize-first is for a remote server (--url): a local one speaks over stdio and is asked in its own era`},
		{"remote with args", ServerRequest{Name: "s", URL: u, Args: []string{"x"}}, `mcp server "s": --args, --env, --dir and --property belong to a local server (--command), not to a remote one`},
		{"remote with env", ServerRequest{Name: "s", URL: u, Env: []string{"A=1"}}, `mcp server "s": --args, --env, --dir and --property belong to a local server (--command), not to a remote one`},
		{"remote with property", ServerRequest{Name: "s", URL: u, Props: []string{"A"}}, `mcp server "s": --args, --env, --dir and --property belong to a local server (--command), not to a remote one`},
		{"ftp URL", ServerRequest{Name: "s", URL: "ftp://h/x"}, `mcp server "s": --url must be an http:// or https:// URL with a host, not "ftp://h/x"`},
		{"URL without host", ServerRequest{Name: "s", URL: "http:///mcp"}, `mcp server "s": --url must be an http:// or https:// URL with a host, not "http:///mcp"`},
		{"credentials in URL", ServerRequest{Name: "s", URL: "https://u:p@h/mcp"}, `mcp server "s": put credentials in a header with a ${placeholder}, not in the URL`},
		{"bad transport", ServerRequest{Name: "s", URL: u, Transport: "ws"}, `mcp server "s": --transport must be "http" or "sse" (or left out to detect it), not "ws"`},
		{"header without colon", ServerRequest{Name: "s", URL: u, Headers: []string{"Bearer abcdefghijklmnopqrstuvwxyz"}}, `mcp server "s": --header "Bearer a…": write 'Name: value'`},
		{"header name with a space", ServerRequest{Name: "s", URL: u, Headers: []string{"X Team: a"}}, `mcp server "s": --header "X Team: …": write 'Name: value'`},
		{"literal credential header", ServerRequest{Name: "s", URL: u, Headers: []string{"Authorization: Bearer abc"}}, "mcp server \"s\": header Authorization carries a credential, so its value must name a stored secret: write it like 'Bearer ${api-key}' and store the value with `mcp-gateway secret set mcp:s:api-key`"},
		{"literal api key header", ServerRequest{Name: "s", URL: u, Headers: []string{"X-Api-Key: abc"}}, "mcp server \"s\": header X-Api-Key carries a credential, so its value must name a stored secret: write it like 'Bearer ${api-key}' and store the value with `mcp-gateway secret set mcp:s:api-key`"},
		{"local with header", ServerRequest{Name: "s", Command: "c", Headers: []string{"X: y"}}, `mcp server "s": --header and --transport belong to a remote server (--url)`},
		{"local with transport", ServerRequest{Name: "s", Command: "c", Transport: "sse"}, `mcp server "s": --header and --transport belong to a remote server (--url)`},
		{"relative dir", ServerRequest{Name: "s", Command: "c", Dir: "data"}, `mcp server "s": --dir must be an absolute path, not "data"`},
		{"env without =", ServerRequest{Name: "s", Command: "c", Env: []string{"NOVALUE"}}, `mcp server "s": --env "NOVALUE": write NAME=value, NAME made of letters, digits and '_'`},
		{"env name with a dash", ServerRequest{Name: "s", Command: "c", Env: []string{"MY-VAR=1"}}, `mcp server "s": --env "MY-VAR": write NAME=value, NAME made of letters, digits and '_'`},
		{"env name with a digit first", ServerRequest{Name: "s", Command: "c", Env: []string{"1A=1"}}, `mcp server "s": --env "1A": write NAME=value, NAME made of letters, digits and '_'`},
		{"literal credential env", ServerRequest{Name: "s", Command: "c", Env: []string{"GITHUB_TOKEN=ghp_x"}}, "mcp server \"s\": env GITHUB_TOKEN looks like a credential, so its value must name a stored secret: write --env GITHUB_TOKEN='${github_token}' and store the value with `mcp-gateway secret set mcp:s:github_token`"},
		{"bad property", ServerRequest{Name: "s", Command: "c", Props: []string{"my-prop"}}, `mcp server "s": --property "my-prop": name the environment variable it sets (letters, digits and '_')`},
		{"metadata and command", ServerRequest{Name: "s", Metadata: "x", Command: "c"}, `mcp server "s": give exactly one of --url (a remote server), --command (a local one) or --metadata (a registry entry or server.json)`},
		{"missing metadata file", ServerRequest{Name: "s", Metadata: "/nonexistent/server.json"}, `mcp server "s": reading /nonexistent/server.json: open /nonexistent/server.json: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, err := h.buildServer(context.Background(), tt.req)
			wantErr(t, tt.name, err, tt.want)
			if srv != nil {
				t.Errorf("a registration was built: %+v", srv)
			}
		})
	}
}

// What a valid request registers: canonical header names, the
// environment as given (placeholders unexpanded), each property once, named
// by its variable in lower case.
func TestBuildServerAccepted(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}}}
	srv, warnings, err := h.buildServer(context.Background(), ServerRequest{
		Name: "r", URL: "https://127.0.0.1/mcp", Transport: "sse", Description: "remote one",
		Headers: []string{"authorization: Bearer ${api-key}", "x-team:  blue "},
	})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("remote: %v %v", err, warnings)
	}
	if srv.URL != "https://127.0.0.1/mcp" || srv.Transport != "sse" || srv.Description != "remote one" || kind(srv) != "remote" ||
		len(srv.Headers) != 2 || srv.Headers["Authorization"] != "Bearer ${api-key}" || srv.Headers["X-Team"] != "blue" {
		t.Errorf("remote registration: %+v", srv)
	}

	srv, _, err = h.buildServer(context.Background(), ServerRequest{
		Name: "l", Command: "node", Args: []string{"server.js", "--db=${db}"}, Dir: "/srv/x", PerClient: true,
		Env:   []string{"API_KEY=${api_key}", "LOG_LEVEL=debug", "EMPTY_TOKEN="},
		Props: []string{"ROOT", "ROOT", "MAX_ITEMS"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := map[string]string{"API_KEY": "${api_key}", "LOG_LEVEL": "debug", "EMPTY_TOKEN": ""}
	wantProps := []registry.Property{{Name: "root", Env: "ROOT"}, {Name: "max_items", Env: "MAX_ITEMS"}}
	if srv.Command != "node" || !slices.Equal(srv.Args, []string{"server.js", "--db=${db}"}) || srv.Dir != "/srv/x" ||
		srv.Share != mcpconfig.SharePerClient || !mapsEqual(srv.Env, wantEnv) || !slices.Equal(srv.Config, wantProps) {
		t.Errorf("local registration: %+v", srv)
	}
	if got := endpoint(srv); got != "node server.js --db=${db}" {
		t.Errorf("endpoint = %q", got)
	}
	if got := placeholders(srv); !slices.Equal(got, []string{"api_key", "db"}) {
		t.Errorf("placeholders = %v, want [api_key db]", got)
	}
}

// A server registered from a server.json file gets the package's command,
// its variables as properties and secrets as placeholders, and the
// request's extra arguments after the package's.
func TestBuildServerFromMetadataFile(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}}}
	file, err := filepath.Abs("metadata/testdata/npm.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, _, err := h.buildServer(context.Background(), ServerRequest{Name: "m", Metadata: "file://" + file, Args: []string{"--extra"}})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Metadata != "file://"+file || srv.Package == "" || srv.Command == "" || len(srv.Args) == 0 || srv.Args[len(srv.Args)-1] != "--extra" {
		t.Errorf("registration from metadata: %+v", srv)
	}
	if srv.Description == "" {
		t.Errorf("the metadata's description was not kept: %+v", srv)
	}

	garbage, _ := filepath.Abs("metadata/testdata/garbage.html")
	_, _, err = h.buildServer(context.Background(), ServerRequest{Name: "m", Metadata: garbage})
	if err == nil || !strings.HasPrefix(err.Error(), `mcp server "m": `+garbage+": ") {
		t.Errorf("garbage metadata: %v", err)
	}
}

// A metadata URL is read through Options.Fetch when it is set (the test's
// stand-in for the network), and an error there names the URL.
func TestBuildServerFetchesMetadata(t *testing.T) {
	data, err := os.ReadFile("metadata/testdata/registry-entry.json")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}, Fetch: func(_ context.Context, url string) ([]byte, error) {
		asked = append(asked, url)
		if strings.HasSuffix(url, "/missing") {
			return nil, os.ErrNotExist
		}
		return data, nil
	}}}
	srv, _, err := h.buildServer(context.Background(), ServerRequest{Name: "m", Metadata: "https://registry.example/v0/servers/x"})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Command == "" || srv.Metadata != "https://registry.example/v0/servers/x" {
		t.Errorf("registration: %+v", srv)
	}
	_, _, err = h.buildServer(context.Background(), ServerRequest{Name: "m", Metadata: "https://registry.example/missing"})
	wantErr(t, "missing", err, `mcp server "m": reading https://registry.example/missing: file does not exist`)
	if !slices.Equal(asked, []string{"https://registry.example/v0/servers/x", "https://registry.example/missing"}) {
		t.Errorf("fetched %v", asked)
	}
}

// The address checks at registration warn about a private address and
// about a cloud-metadata one (refused at every connection); a server with
// its own override (--allow-private-address) gets no private-address warning.
func TestAddressWarnings(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{}}}, privateGuard: &netguard.Policy{AllowPrivate: true}}
	tests := []struct {
		url          string
		allowPrivate bool
		want         []string
	}{
		{"https://8.8.8.8/mcp", false, nil},
		{"http://127.0.0.1:9/mcp", true, nil},
		{"http://10.1.2.3/mcp", false, []string{"10.1.2.3 resolves to 10.1.2.3, a private address: allowed, but DNS rebinding remains a risk (--allow-private-address registers it without this warning)"}},
		{"http://169.254.169.254/mcp", true, []string{"169.254.169.254 resolves to 169.254.169.254, a cloud metadata address: connections to it are refused unless the host runs with --allow-any-address"}},
	}
	for _, tt := range tests {
		srv, warnings, err := h.buildServer(context.Background(), ServerRequest{Name: "r", URL: tt.url, AllowPrivateAddress: tt.allowPrivate})
		if err != nil || srv == nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if !sameList(warnings, tt.want) {
			t.Errorf("%s (allow private %v): warnings\n got  %q\n want %q", tt.url, tt.allowPrivate, warnings, tt.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
