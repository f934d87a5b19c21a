package host

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

var dynamicBuiltins = []string{"mcp-find", "mcp-add", "mcp-config-set", "mcp-exec"}

// mcp-find ranks the registered servers by name, description and tools,
// marks the ones already added, and refuses an empty query or a bad limit.
func TestMCPFind(t *testing.T) {
	h := openHost(t, t.TempDir())
	mem := localServer(t, "memory")
	mem.Description = "Knowledge graph memory."
	mustAdd(t, h, mem)
	files := localServer(t, "files")
	files.Description = "Read and write files."
	files.Props = []string{"ROOT"}
	mustAdd(t, h, files)
	sb := mustSandbox(t, h, "s")
	c := connect(t, h, sb.Token)

	res := c.call("mcp-find", map[string]any{"query": "knowledge graph"})
	if res.IsError || res.text() != "1. memory: Knowledge graph memory.\nAttach one with mcp-add {\"name\": \"<server>\"}." {
		t.Errorf("mcp-find knowledge graph: %q", res.text())
	}
	c.callOK("mcp-add", map[string]string{"name": "files"})
	res = c.call("mcp-find", map[string]any{"query": "files", "limit": 1})
	if got := res.text(); got != "1. files (already added): Read and write files.\nAttach one with mcp-add {\"name\": \"<server>\"}." {
		t.Errorf("mcp-find files: %q", got)
	}
	var structured struct {
		Servers []foundServer `json:"servers"`
	}
	if err := json.Unmarshal(res.Structured, &structured); err != nil {
		t.Fatal(err)
	}
	want := foundServer{Name: "files", Description: "Read and write files.", AllTools: 3, Config: []registry.Property{{Name: "root", Env: "ROOT"}}, Attached: true}
	if len(structured.Servers) != 1 {
		t.Fatalf("structured: %s", res.Structured)
	}
	got := structured.Servers[0]
	got.Score = 0
	if got.Name != want.Name || got.Description != want.Description || got.AllTools != 3 || !slices.Equal(got.Config, want.Config) || !got.Attached {
		t.Errorf("structured result %+v, want %+v", got, want)
	}
	// A tool's name matches too, and is named in the result.
	if got := c.callOK("mcp-find", map[string]any{"query": "echo", "limit": 50}); !strings.Contains(got, "(matching tools: echo)") {
		t.Errorf("mcp-find echo: %q", got)
	}
	if got := c.callOK("mcp-find", map[string]any{"query": "zebra"}); got != "No registered server matches. Try other words." {
		t.Errorf("mcp-find zebra: %q", got)
	}

	for _, tt := range []struct {
		args any
		want string
	}{
		{map[string]any{"query": "  "}, "mcp-find: query is empty: say in a few words what the server should do"},
		{map[string]any{}, "mcp-find: query is empty: say in a few words what the server should do"},
		{map[string]any{"query": "x", "limit": 51}, "mcp-find: limit must be between 1 and 50, not 51"},
		{map[string]any{"query": "x", "limit": -1}, "mcp-find: limit must be between 1 and 50, not -1"},
		{map[string]any{"query": 3}, "mcp-find: arguments: json: cannot unmarshal number into Go struct field .query of type string"},
	} {
		if got := c.callErr("mcp-find", tt.args); got != tt.want {
			t.Errorf("mcp-find %v:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

// mcp-add attaches a server: its tools come back in the result and join
// tools/list; adding it again says so; an unknown or failing server is
// refused with the reason.
func TestMCPAdd(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	broken := localServer(t, "broken")
	broken.Env = []string{testServerEnv + "=fail"}
	mustAdd(t, h, broken)
	sb := mustSandbox(t, h, "s")
	c := connect(t, h, sb.Token)

	res := c.call("mcp-add", map[string]string{"name": "mem"})
	wantText := `Added mcp server "mem" with 3 tools. They are in tools/list now; call them directly or through mcp-exec (their input schemas are in this result's structuredContent and in tools/list):
- args: Returns the server's arguments and working directory.
- echo: Echoes its text.
- env: Returns an environment variable of the server process.`
	if res.IsError || res.text() != wantText {
		t.Errorf("mcp-add mem:\n%s", res.text())
	}
	var structured struct {
		Server string
		Tools  []struct{ Name string }
	}
	if err := json.Unmarshal(res.Structured, &structured); err != nil || structured.Server != "mem" || len(structured.Tools) != 3 || structured.Tools[1].Name != "echo" {
		t.Errorf("mcp-add structured content: %s (%v)", res.Structured, err)
	}
	if got, want := c.tools(), append(slices.Clone(dynamicBuiltins), testTools...); !slices.Equal(got, want) {
		t.Errorf("tools after mcp-add: %v, want %v", got, want)
	}
	if got := loadState(t, h).Sandboxes["s"].Servers; !slices.Equal(got, []string{"mem"}) {
		t.Errorf("saved attachment: %v", got)
	}
	if got := c.callOK("mcp-add", map[string]string{"name": "mem"}); !strings.HasPrefix(got, `Already added: mcp server "mem" with 3 tools.`) {
		t.Errorf("mcp-add again: %q", got)
	}

	for _, tt := range []struct {
		args any
		want string
	}{
		{map[string]string{}, `mcp-add: give the server's name: {"name": "<server>"}`},
		{map[string]any{"name": 1}, `mcp-add: give the server's name: {"name": "<server>"}`},
		{map[string]string{"name": "nope"}, `mcp-add: mcp server "nope" is not registered (registered: broken, mem)`},
	} {
		if got := c.callErr("mcp-add", tt.args); got != tt.want {
			t.Errorf("mcp-add %v:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
	if got := c.callErr("mcp-add", map[string]string{"name": "broken"}); !strings.HasPrefix(got, `mcp-add: mcp server "broken" did not start, so it is not loaded: `) {
		t.Errorf("mcp-add broken: %q", got)
	}
	if got := loadState(t, h).Sandboxes["s"].Servers; !slices.Equal(got, []string{"mem"}) {
		t.Errorf("attachments after a failed mcp-add: %v", got)
	}
}

// A static sandbox has mcp-exec only: the discovery tools are refused as
// unknown.
func TestStaticSandboxHasNoDiscovery(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	sb := mustSandbox(t, h, "s", "mem")
	c := connect(t, h, sb.Token)
	r := c.request("tools/call", map[string]any{"name": "mcp-add", "arguments": map[string]string{"name": "mem"}})
	if r.Error == nil || !strings.Contains(string(r.Error), "Unknown tool: mcp-add") {
		t.Errorf("mcp-add in a static sandbox: result %s, error %s", r.Result, r.Error)
	}
}

// mcp-config-set sets this sandbox's properties of a server (saved, and
// the server's instance restarted with them), unsets one with null, and
// refuses unknown properties, bad values and a missing required one.
func TestMCPConfigSet(t *testing.T) {
	h := openHost(t, t.TempDir())
	req := localServer(t, "mem")
	req.Props = []string{"COLOR", "SIZE"}
	mustAdd(t, h, req)
	sb := mustSandbox(t, h, "s")
	other := mustSandbox(t, h, "o")
	c, co := connect(t, h, sb.Token), connect(t, h, other.Token)

	// Before the server is added: saved, applied when it is.
	got := c.callOK("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"color": "red", "size": 3}})
	if got != `Set the configuration of mcp server "mem" for this sandbox. It applies when the server is added (mcp-add).` {
		t.Errorf("config-set before add: %q", got)
	}
	c.callOK("mcp-add", map[string]string{"name": "mem"})
	if got := c.callOK("env", map[string]string{"name": "COLOR"}); got != "true:red" {
		t.Errorf("COLOR after add: %q", got)
	}
	if got := c.callOK("env", map[string]string{"name": "SIZE"}); got != "true:3" {
		t.Errorf("SIZE after add: %q", got)
	}
	// After: the instance restarts with the new values; null unsets.
	res := c.call("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"color": true, "size": nil}})
	if res.text() != `Set the configuration of mcp server "mem" for this sandbox. Its instance was restarted with it.` {
		t.Errorf("config-set after add: %q", res.text())
	}
	if string(res.Structured) != `{"config":{"color":"true"},"server":"mem"}` {
		t.Errorf("config-set structured content: %s", res.Structured)
	}
	if got := c.callOK("env", map[string]string{"name": "COLOR"}); got != "true:true" {
		t.Errorf("COLOR after the change: %q", got)
	}
	if got := c.callOK("env", map[string]string{"name": "SIZE"}); got != "false:" {
		t.Errorf("SIZE after null: %q", got)
	}
	if got := loadState(t, h).Sandboxes["s"].Config["mem"]; len(got) != 1 || got["color"] != "true" {
		t.Errorf("saved configuration: %v", got)
	}
	// Another sandbox's configuration is its own.
	co.callOK("mcp-add", map[string]string{"name": "mem"})
	if got := co.callOK("env", map[string]string{"name": "COLOR"}); got != "false:" {
		t.Errorf("COLOR in the other sandbox: %q", got)
	}

	for _, tt := range []struct {
		args any
		want string
	}{
		{map[string]any{"server": "mem"}, `mcp-config-set: give {"server": "<server>", "config": {"<property>": <value>}}`},
		{map[string]any{"config": map[string]any{}}, `mcp-config-set: give {"server": "<server>", "config": {"<property>": <value>}}`},
		{map[string]any{"server": "nope", "config": map[string]any{}}, `mcp-config-set: mcp server "nope" is not registered (registered: mem)`},
		{map[string]any{"server": "mem", "config": map[string]any{"shape": "x"}}, `mcp-config-set: mcp server "mem" has no property "shape" (it declares: color, size)`},
		{map[string]any{"server": "mem", "config": map[string]any{"color": []int{1}}}, `mcp-config-set: property "color": must be a string, number or boolean, not [1]`},
	} {
		if got := c.callErr("mcp-config-set", tt.args); got != tt.want {
			t.Errorf("mcp-config-set %v:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
	if got := loadState(t, h).Sandboxes["s"].Config["mem"]; len(got) != 1 || got["color"] != "true" {
		t.Errorf("configuration after refusals: %v", got)
	}
}

// A required property without a default must be set before the server can
// run in a sandbox, and cannot be unset.
func TestRequiredProperty(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	h.mu.Lock()
	h.state.Servers["mem"].Config = []registry.Property{{Name: "root", Env: "ROOT", Required: true}, {Name: "mode", Env: "MODE", Default: "fast"}}
	h.mu.Unlock()
	sb := mustSandbox(t, h, "s")
	c := connect(t, h, sb.Token)
	if got := c.callErr("mcp-add", map[string]string{"name": "mem"}); got != `mcp-add: mcp server "mem" needs its property "root": set it with mcp-config-set {"server":"mem","config":{"root":...}}` {
		t.Errorf("mcp-add without the required property: %q", got)
	}
	if got := c.callErr("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"mode": "slow"}}); got != `mcp-config-set: mcp server "mem" needs property "root"` {
		t.Errorf("config-set without the required property: %q", got)
	}
	c.callOK("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"root": "/data"}})
	c.callOK("mcp-add", map[string]string{"name": "mem"})
	if got := c.callOK("env", map[string]string{"name": "ROOT"}); got != "true:/data" {
		t.Errorf("ROOT: %q", got)
	}
	if got := c.callOK("env", map[string]string{"name": "MODE"}); got != "true:fast" {
		t.Errorf("MODE (its default): %q", got)
	}
	if got := c.callErr("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"root": nil}}); got != `mcp-config-set: mcp server "mem" needs property "root"` {
		t.Errorf("unsetting the required property: %q", got)
	}
	_, err := h.CreateSandbox(t.Context(), SandboxRequest{Name: "st", Static: []string{"mem"}})
	wantErr(t, "static sandbox", err, `sandbox "st": mcp server "mem" needs its property "root": set it with mcp-config-set {"server":"mem","config":{"root":...}}`)
}

// mcp-exec calls any tool of the sandbox by name, with the client's own
// call's result; it refuses a built-in tool, an unknown one and a call
// without a name.
func TestMCPExec(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	sb := mustSandbox(t, h, "s", "mem")
	c := connect(t, h, sb.Token)
	if got := c.callOK("mcp-exec", map[string]any{"name": "echo", "arguments": map[string]string{"text": "hi"}}); got != "hi" {
		t.Errorf("mcp-exec echo: %q", got)
	}
	if got := c.callOK("mcp-exec", map[string]any{"name": "args"}); !strings.HasPrefix(got, "|") {
		t.Errorf("mcp-exec without arguments: %q", got)
	}
	for _, tt := range []struct {
		args any
		want string
	}{
		{map[string]any{}, `mcp-exec: give the tool's name: {"name": "<tool>", "arguments": {...}}`},
		{map[string]any{"name": "mcp-exec"}, `mcp-exec: mcp-exec is one of the gateway's own tools: call it directly`},
		{map[string]any{"name": "nope"}, `mcp-exec: Unknown tool: nope (JSON-RPC error -32602)`},
	} {
		if got := c.callErr("mcp-exec", tt.args); got != tt.want {
			t.Errorf("mcp-exec %v:\n got  %q\n want %q", tt.args, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"  short  ", 10, "short"},
		{"first\r\nsecond", 80, "first"},
		{"abcdef", 3, "abc…"},
		{"ab é", 4, "ab…"}, // the cut falls inside é: it moves back to a rune start
		{"", 5, ""},
	} {
		if got := oneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
