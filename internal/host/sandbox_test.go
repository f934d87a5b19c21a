package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/attach"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

// Registering a local server lists its tools once (for mcp-find) and keeps
// them in the state; server ls and inspect show the registration.
func TestAddServerListsTools(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	req := localServer(t, "mem")
	req.Description = "A test server."
	res := mustAdd(t, h, req)
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	var names []string
	for _, tool := range res.Server.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, testTools) {
		t.Errorf("listed tools %v, want %v", names, testTools)
	}
	if got := res.Server.Tools[1]; got != (registry.Tool{Name: "echo", Description: "Echoes its text.\nSecond line."}) {
		t.Errorf("tool kept as %+v", got)
	}
	ls := h.Servers()
	if len(ls) != 1 || ls[0].Name != "mem" || ls[0].Kind != "local" || ls[0].Endpoint != req.Command || ls[0].Description != "A test server." || ls[0].Tools != 3 || len(ls[0].Sandboxes) != 0 {
		t.Errorf("server ls: %+v", ls)
	}
	// The tools are in the state file, so mcp-find knows them after a restart.
	st := loadState(t, h)
	if len(st.Servers["mem"].Tools) != 3 {
		t.Errorf("state file holds %+v", st.Servers["mem"])
	}

	_, err := h.AddServer(context.Background(), localServer(t, "mem"))
	wantErr(t, "second registration", err, `mcp server "mem" is already registered (`+req.Command+`); remove it first, or pass --replace`)

	_, err = h.InspectServer("nope")
	wantErr(t, "inspect unknown", err, `mcp server "nope" is not registered (registered: mem)`)
	_, err = h.RemoveServer("nope")
	wantErr(t, "remove unknown", err, `mcp server "nope" is not registered (registered: mem)`)
}

// A server that cannot start is still registered, with a warning saying its
// tools could not be listed and why (its own stderr).
func TestAddServerThatFails(t *testing.T) {
	h := openHost(t, t.TempDir())
	req := localServer(t, "broken")
	req.Env = []string{testServerEnv + "=fail"}
	res := mustAdd(t, h, req)
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "its tools could not be listed yet, so mcp-find knows only its name and description: ") ||
		!strings.Contains(res.Warnings[0], "cannot open the database") {
		t.Errorf("warnings: %q", res.Warnings)
	}
	if len(res.Server.Tools) != 0 || h.Servers()[0].Name != "broken" {
		t.Errorf("registration: %+v", res.Server)
	}
	// A static sandbox with it is created; the server's failure is a warning.
	sb := mustSandbox(t, h, "a", "broken")
	if len(sb.Warnings) != 1 || !strings.HasPrefix(sb.Warnings[0], `mcp server "broken" did not start (`) || !strings.HasSuffix(sb.Warnings[0], "); it is retried in the background") {
		t.Errorf("sandbox create warnings: %q", sb.Warnings)
	}
	if st := h.Sandboxes()[0].Status["broken"]; st.State != "failed" {
		t.Errorf("sandbox ls status of broken: %+v", st)
	}
	// Loading it into a running sandbox fails and attaches nothing.
	mustSandbox(t, h, "d")
	_, err := h.Load(context.Background(), "broken", "d")
	if err == nil || !strings.HasPrefix(err.Error(), `mcp server "broken" did not start, so it is not loaded: `) {
		t.Errorf("load of a failing server: %v", err)
	}
	if got := loadState(t, h).Sandboxes["d"].Servers; len(got) != 0 {
		t.Errorf("sandbox d has %v attached after a failed load", got)
	}
}

// A static sandbox sees exactly mcp-exec and its servers' tools; its local
// server runs in the sandbox's own directory, with ${sandbox} and
// ${sandbox_dir} filled in; its token reaches it and no other sandbox.
func TestStaticSandbox(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	mustAdd(t, h, localServer(t, "mem", "SB_NAME=${sandbox}", "SB_DIR=${sandbox_dir}"))
	a := mustSandbox(t, h, "a", "mem", " mem ", "")
	if a.Mode != registry.ModeStatic || !slices.Equal(a.Servers, []string{"mem"}) || a.URL != "http://127.0.0.1:8811/mcp" || len(a.Token) != 64 || len(a.Warnings) != 0 {
		t.Errorf("sandbox create: %+v", a)
	}
	b := mustSandbox(t, h, "b", "mem")
	ca, cb := connect(t, h, a.Token), connect(t, h, b.Token)
	if got, want := ca.tools(), append([]string{"mcp-exec"}, testTools...); !slices.Equal(got, want) {
		t.Errorf("tools of a static sandbox: %v, want %v", got, want)
	}
	aDir := filepath.Join(dir, "sandboxes", "a", "mem")
	if got := ca.callOK("env", map[string]string{"name": "SB_NAME"}); got != "true:a" {
		t.Errorf("${sandbox} in a: %q", got)
	}
	if got := ca.callOK("env", map[string]string{"name": "SB_DIR"}); got != "true:"+aDir {
		t.Errorf("${sandbox_dir} in a: %q", got)
	}
	if got := ca.callOK("args", map[string]string{}); got != "|"+aDir {
		t.Errorf("args and working directory in a: %q", got)
	}
	if got := cb.callOK("env", map[string]string{"name": "SB_NAME"}); got != "true:b" {
		t.Errorf("${sandbox} in b: %q", got)
	}
	// The host's own environment does not leak into a server's.
	if got := ca.callOK("env", map[string]string{"name": "HOME"}); got != "false:" {
		t.Errorf("HOME in a server: %q", got)
	}
	if h.tenant("not-a-token") != nil || h.tenant("") != nil {
		t.Error("an unknown token reaches a sandbox")
	}
	if h.tenant(a.Token) == h.tenant(b.Token) {
		t.Error("two sandboxes share a gateway")
	}

	_, err := h.CreateSandbox(context.Background(), SandboxRequest{Name: "a"})
	wantErr(t, "same name", err, "sandbox \"a\" already exists; remove it first with `mcp-gateway sandbox rm a`")
	_, err = h.CreateSandbox(context.Background(), SandboxRequest{Name: "c", Static: []string{"mem", "nope"}})
	wantErr(t, "unknown server", err, `sandbox "c": mcp server "nope" is not registered (registered: mem)`)
	_, err = h.CreateSandbox(context.Background(), SandboxRequest{Name: "c", Static: []string{"", ""}}) // --static ","
	wantErr(t, "empty static names", err, `sandbox "c": the static list "," names no server`)
	_, err = h.CreateSandbox(context.Background(), SandboxRequest{Name: "bad name"})
	wantErr(t, "bad name", err, `sandbox name "bad name": use only letters, digits, '.', '-' and '_'`)
	_, err = h.CreateSandbox(context.Background(), SandboxRequest{Name: "mcp-gateway"})
	wantErr(t, "reserved name", err, `sandbox name "mcp-gateway" is reserved for the gateway itself; choose another name`)
	if _, ok := loadState(t, h).Sandboxes["c"]; ok {
		t.Error("a refused sandbox was saved")
	}

	ls := h.Sandboxes()
	if len(ls) != 2 || ls[0].Name != "a" || ls[0].Mode != "static" || ls[0].Status["mem"].State != "ready" || ls[1].Name != "b" {
		t.Errorf("sandbox ls: %+v", ls)
	}
	health := h.HealthSandboxes()
	if got := health["a"]; got.Mode != "static" || got.Tools != 4 || !slices.Equal(got.Servers, []string{"mem"}) || got.Upstreams["mem"] != (ServerHealth{State: "ready", Tools: 3}) {
		t.Errorf("health of a: %+v", got)
	}
	info, err := h.InspectServer("mem")
	if err != nil || !slices.Equal(info.Sandboxes, []string{"a", "b"}) || info.Kind != "local" || len(info.Secrets) != 0 {
		t.Errorf("inspect: %+v %v", info, err)
	}

	// Removing a sandbox revokes its token at once and removes its files;
	// the other sandbox keeps working.
	if err := h.RemoveSandbox("a"); err != nil {
		t.Fatal(err)
	}
	if h.tenant(a.Token) != nil {
		t.Error("a removed sandbox's token still works")
	}
	if _, err := os.Stat(filepath.Join(dir, "sandboxes", "a")); !os.IsNotExist(err) {
		t.Errorf("the removed sandbox's directory: %v", err)
	}
	if got := cb.callOK("echo", map[string]string{"text": "still here"}); got != "still here" {
		t.Errorf("b after a's removal: %q", got)
	}
	if _, ok := h.HealthSandboxes()["a"]; ok {
		t.Error("a removed sandbox is in /health")
	}
	wantErr(t, "remove again", h.RemoveSandbox("a"), `sandbox "a" does not exist (sandboxes: b)`)
}

// Load and unload attach a server to a running sandbox and detach it: its
// tools join and leave the sandbox's tools/list, and the attachment is saved.
func TestLoadUnload(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	sb := mustSandbox(t, h, "s")
	if sb.Mode != registry.ModeDynamic {
		t.Errorf("a sandbox without servers is %q", sb.Mode)
	}
	c := connect(t, h, sb.Token)
	builtins := []string{"mcp-find", "mcp-add", "mcp-config-set", "mcp-exec"}
	if got := c.tools(); !slices.Equal(got, builtins) {
		t.Errorf("tools of a dynamic sandbox: %v", got)
	}

	ctx := context.Background()
	res, err := h.Load(ctx, "mem", "s")
	if err != nil {
		t.Fatal(err)
	}
	if res.Server != "mem" || len(res.Tools) != 3 {
		t.Errorf("load result: %+v", res)
	}
	if got, want := c.tools(), append(slices.Clone(builtins), testTools...); !slices.Equal(got, want) {
		t.Errorf("tools after load: %v, want %v", got, want)
	}
	if got := loadState(t, h).Sandboxes["s"].Servers; !slices.Equal(got, []string{"mem"}) {
		t.Errorf("saved attachments: %v", got)
	}

	for _, tt := range []struct {
		server, sandbox, want string
	}{
		{"mem", "s", `mcp server "mem" is already loaded in sandbox "s"`},
		{"nope", "s", `mcp server "nope" is not registered (registered: mem)`},
		{"mem", "nope", `sandbox "nope" does not exist (sandboxes: s)`},
	} {
		_, err := h.Load(ctx, tt.server, tt.sandbox)
		wantErr(t, "load "+tt.server+" into "+tt.sandbox, err, tt.want)
	}
	wantErr(t, "unload from unknown", h.Unload("mem", "nope"), `sandbox "nope" does not exist (sandboxes: s)`)
	wantErr(t, "unload unknown", h.Unload("other", "s"), `mcp server "other" is not loaded in sandbox "s" (it has: mem)`)

	if err := h.Unload("mem", "s"); err != nil {
		t.Fatal(err)
	}
	if got := c.tools(); !slices.Equal(got, builtins) {
		t.Errorf("tools after unload: %v", got)
	}
	if got := loadState(t, h).Sandboxes["s"].Servers; len(got) != 0 {
		t.Errorf("saved attachments after unload: %v", got)
	}
	wantErr(t, "unload again", h.Unload("mem", "s"), `mcp server "mem" is not loaded in sandbox "s" (it has: none)`)
}

// Removing a registered server detaches it from every sandbox (tools gone,
// configuration forgotten, files removed) and says which secrets are left.
func TestRemoveServerDetaches(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	mustAdd(t, h, localServer(t, "mem", "DB=${db_path}"))
	mustAdd(t, h, localServer(t, "other"))
	if _, err := h.SetSecret(context.Background(), "mcp:mem:db_path", "/tmp/x"); err != nil {
		t.Fatal(err)
	}
	a := mustSandbox(t, h, "a", "mem", "other")
	mustSandbox(t, h, "b", "mem")
	c := connect(t, h, a.Token)
	if got := c.tools(); len(got) != 7 {
		t.Fatalf("tools with two servers: %v", got)
	}
	res, err := h.RemoveServer("mem")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.DetachedFrom, []string{"a", "b"}) || !slices.Equal(res.Secrets, []string{"mcp:mem:db_path"}) {
		t.Errorf("server rm: %+v", res)
	}
	// Names are stable: other's tools, prefixed while mem held the plain
	// names, keep their names (a client may be calling them).
	want := []string{"mcp-exec"}
	for _, tool := range testTools {
		want = append(want, "other_"+tool)
	}
	if got := c.tools(); !slices.Equal(got, want) {
		t.Errorf("tools of a after server rm: %v, want %v", got, want)
	}
	st := loadState(t, h)
	if _, ok := st.Servers["mem"]; ok || !slices.Equal(st.Sandboxes["a"].Servers, []string{"other"}) || len(st.Sandboxes["b"].Servers) != 0 {
		t.Errorf("state after server rm: servers %v, a %v, b %v", sortedKeys(st.Servers), st.Sandboxes["a"].Servers, st.Sandboxes["b"].Servers)
	}
	for _, d := range []string{filepath.Join(dir, "sandboxes", "a", "mem"), filepath.Join(dir, "probe", "mem")} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s after server rm: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sandboxes", "a", "other")); err != nil {
		t.Errorf("the other server's directory: %v", err)
	}
}

// Everything a command changes is in the state file, and a host opened on
// the same directory serves it again: the same tokens reach the same
// sandboxes with the same servers and configuration.
func TestStateRestored(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	req := localServer(t, "mem")
	req.Props = []string{"COLOR"}
	mustAdd(t, h, req)
	static := mustSandbox(t, h, "st", "mem")
	dyn := mustSandbox(t, h, "dyn")
	c := connect(t, h, dyn.Token)
	c.callOK("mcp-config-set", map[string]any{"server": "mem", "config": map[string]any{"color": "green"}})
	c.callOK("mcp-add", map[string]string{"name": "mem"})
	closeHost(t, h)
	if h.tenant(static.Token) != nil {
		t.Error("a closed host still serves a token")
	}

	h2 := openHost(t, dir)
	cs, cd := connect(t, h2, static.Token), connect(t, h2, dyn.Token)
	if got, want := cs.tools(), append([]string{"mcp-exec"}, testTools...); !slices.Equal(got, want) {
		t.Errorf("restored static sandbox's tools: %v, want %v", got, want)
	}
	if got, want := cd.tools(), append([]string{"mcp-find", "mcp-add", "mcp-config-set", "mcp-exec"}, testTools...); !slices.Equal(got, want) {
		t.Errorf("restored dynamic sandbox's tools: %v, want %v", got, want)
	}
	if got := cd.callOK("env", map[string]string{"name": "COLOR"}); got != "true:green" {
		t.Errorf("restored configuration: COLOR is %q", got)
	}
	if got := cs.callOK("env", map[string]string{"name": "COLOR"}); got != "false:" {
		t.Errorf("the static sandbox got another sandbox's configuration: COLOR is %q", got)
	}
	if ls := h2.Servers(); len(ls) != 1 || ls[0].Tools != 3 || !slices.Equal(ls[0].Sandboxes, []string{"dyn", "st"}) {
		t.Errorf("restored server ls: %+v", ls)
	}
}

// A state file that cannot be read stops Open, naming the file, and is left
// as it was.
func TestOpenRefusesABadStateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, registry.StateFile)
	bad := []byte(`{"version":1,"servers":{"a":{"name":"b"}}}`)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Dir: dir, Attach: attach.Options{Logger: quietLogger()}})
	wantErr(t, "Open", err, "state file "+path+`: server entry "a" does not carry its own name; it was left untouched: repair it, or move it away to start with an empty registry`)
	if got, _ := os.ReadFile(path); string(got) != string(bad) {
		t.Errorf("the state file was changed: %s", got)
	}
}

func loadState(t *testing.T, h *Host) *registry.State {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.opts.Dir, registry.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st registry.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}
