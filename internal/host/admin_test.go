package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
)

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true,
		"GITHUB_TOKEN": true, "CLIENT_SECRET": true, "DB_PASSWORD": true,
		"Accept": false, "X-Team": false, "MEMORY_FILE_PATH": false, "LOG_LEVEL": false,
	} {
		if got := credentialName(name); got != want {
			t.Errorf("credentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestScalar(t *testing.T) {
	for raw, want := range map[string]string{`"a b"`: "a b", `true`: "true", `1.50`: "1.50", `7`: "7"} {
		if v, null, err := scalar([]byte(raw)); err != nil || null || v != want {
			t.Errorf("scalar(%s) = %q %v %v, want %q", raw, v, null, err, want)
		}
	}
	if _, null, err := scalar([]byte(`null`)); !null || err != nil {
		t.Errorf("null: %v %v", null, err)
	}
	if _, _, err := scalar([]byte(`{"a":1}`)); err == nil {
		t.Error("an object was accepted")
	}
}

// A header or variable given twice is refused, naming it, rather than the
// last one silently kept.
func TestServerRepeatedNames(t *testing.T) {
	h := &Host{opts: Options{Attach: attach.Options{Guard: &netguard.Policy{AllowAll: true}}}}
	tests := []struct {
		req  ServerRequest
		want string // "" accepted
	}{
		{ServerRequest{Name: "r", URL: "http://127.0.0.1:1/mcp", Headers: []string{"X-Team: a", "x-team: b"}}, "header X-Team is given twice"},
		{ServerRequest{Name: "r", URL: "http://127.0.0.1:1/mcp", Headers: []string{"X-Team: a", "Accept: a, b"}}, ""},
		{ServerRequest{Name: "l", Command: "c", Env: []string{"A=1", "A=2"}}, "--env A is given twice"},
		{ServerRequest{Name: "l", Command: "c", Env: []string{"A=1", "a=2"}}, ""},
	}
	for _, tt := range tests {
		_, _, err := h.buildServer(context.Background(), tt.req)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.req, err, tt.want)
		}
	}
}

// A metadata URL goes through the address checks of a server's URL: a
// cloud-metadata or link-local address is refused before any connection,
// also for a server registered with --allow-private-address (metadata).
func TestMetadataURLChecked(t *testing.T) {
	guard := &netguard.Policy{}
	h := &Host{opts: Options{Attach: attach.Options{Guard: guard}}, privateGuard: &netguard.Policy{AllowPrivate: true}}
	tests := []struct {
		url          string
		allowPrivate bool
		want         string
	}{
		{"http://169.254.169.254/latest/meta-data", false, "cloud metadata address"},
		{"http://169.254.169.254/latest/meta-data", true, "cloud metadata address"},
		{"http://[fe80::1]:9/server.json", false, "link-local address"},
	}
	for _, tt := range tests {
		_, _, err := h.buildServer(context.Background(), ServerRequest{Name: "m", Metadata: tt.url, AllowPrivateAddress: tt.allowPrivate})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--metadata %s (allow private %v): %v, want %q", tt.url, tt.allowPrivate, err, tt.want)
		}
	}
}

// mcp-add's text names each tool with the first line of its description;
// the definitions (input schemas) stay out of it.
func TestAddText(t *testing.T) {
	long := strings.Repeat("é", 200)
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"create_entities","description":"Create entities.\nMore detail here.","inputSchema":{"type":"object","properties":{"entities":{"type":"array"}}}}`),
		json.RawMessage(`{"name":"bare","inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"long","description":"` + long + `","inputSchema":{"type":"object"}}`),
	}
	got := addText("Added", "memory", tools)
	for _, want := range []string{`Added mcp server "memory" with 3 tools.`, "\n- create_entities: Create entities.\n- bare\n- long: é"} {
		if !strings.Contains(got, want) {
			t.Errorf("addText lacks %q:\n%s", want, got)
		}
	}
	for _, banned := range []string{"inputSchema", "More detail", "entities\":"} {
		if strings.Contains(got, banned) {
			t.Errorf("addText holds %q:\n%s", banned, got)
		}
	}
	if line := got[strings.LastIndex(got, "- long: "):]; !strings.HasSuffix(line, "…") || len(line) > len("- long: ")+160+len("…") || !utf8.ValidString(line) {
		t.Errorf("a long description is not cut to one short valid line: %q", line)
	}
}
