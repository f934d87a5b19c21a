package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// auditedGateway launches a sandbox gateway with the memory server and its
// audit log at file, rotated beyond maxBytes, and makes calls calls.
func auditedGateway(t *testing.T, file string, maxBytes, calls int) *gw {
	t.Helper()
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--audit-file", file, "--audit-max-bytes", fmt.Sprint(maxBytes))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := g.connect(ctx)
	for i := 0; i < calls; i++ {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	return g
}

func recordHash(t *testing.T, line string) string {
	t.Helper()
	var r struct{ Hash string }
	if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Hash) != 64 {
		t.Fatalf("audit line %q has no hash (%v)", line, err)
	}
	return r.Hash
}

// `audit verify` fails on a log whose head was cut (it does not start at
// its genesis), saying so by file and line, and passes when given the hash
// it should start from.
func TestAuditVerifyCutHead(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	g := auditedGateway(t, file, 100<<20, 3)
	g.stop()
	lines := readLines(t, file)
	if len(lines) < 4 {
		t.Fatalf("only %d audit records", len(lines))
	}
	from := recordHash(t, lines[1])
	if err := os.WriteFile(file, []byte(strings.Join(lines[2:], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runGateway(t, nil, "audit", "verify", file)
	if code != 1 || !strings.Contains(out, file+":1: the chain does not start at its genesis: the first record (3) carries prev "+from) ||
		!strings.Contains(out, "give the hash it should start from with --from") || !strings.Contains(out, "FAILED: 1 problems") {
		t.Fatalf("verify of a cut log: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runGateway(t, nil, "audit", "verify", "--from", from, file)
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("ok: %d records in 1 files, chained from --from %s", len(lines)-2, from)) {
		t.Fatalf("verify --from the cut record's hash: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code = runGateway(t, nil, "audit", "verify", "--from", "nothex", file); code != 2 || !strings.Contains(stderr, "--from must be a record's hash") {
		t.Fatalf("verify --from nothex: exit %d %s", code, stderr)
	}
}

// A rotated file removed from the middle fails `audit verify`, which names
// it (and still reads the files after it).
func TestAuditVerifyMissingRotatedFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	g := auditedGateway(t, file, 200, 5) // about one record a file
	g.stop()
	for _, n := range []int{1, 2, 3} {
		if _, err := os.Stat(fmt.Sprintf("%s.%d", file, n)); err != nil {
			t.Fatalf("want rotated files: %v", err)
		}
	}
	if out, stderr, code := runGateway(t, nil, "audit", "verify", file); code != 0 {
		t.Fatalf("verify of the intact rotated log: exit %d\n%s%s", code, out, stderr)
	}
	if err := os.Remove(file + ".2"); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runGateway(t, nil, "audit", "verify", file)
	if code != 1 || !strings.Contains(out, file+".2: missing: a rotated file was removed") || !strings.Contains(out, file+".3") {
		t.Fatalf("verify with FILE.2 removed: exit %d\n%s%s", code, out, stderr)
	}
}

// The audit file is never opened through a symbolic link (the gateway may
// run as root): the launch fails naming it, and the link's target is
// untouched.
func TestAuditFileSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	g := newGW(t)
	g.launch(policyConfig(t), "--audit-file", link)
	if g.exit == 0 {
		t.Fatal("the gateway started with its audit file a symbolic link")
	}
	if want := "audit file " + link + " is a symbolic link"; !strings.Contains(g.stderr, want) {
		t.Fatalf("stderr %q lacks %q", g.stderr, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Fatalf("the link's target now holds %q", b)
	}
}

// Two gateways given one audit file: the second refuses to start, naming
// the file and the first one's pid, and the first's chain stays whole.
func TestAuditFileOneWriter(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	first := auditedGateway(t, file, 100<<20, 1)
	second := newGW(t)
	second.launch(policyConfig(t), "--audit-file", file)
	if second.exit == 0 {
		t.Fatal("a second gateway started on the same audit file")
	}
	if want := fmt.Sprintf("audit file %s is locked by another gateway (pid %d", file, first.pid); !strings.Contains(second.stderr, want) {
		t.Fatalf("stderr %q lacks %q", second.stderr, want)
	}
	first.stop()
	if out, stderr, code := runGateway(t, nil, "audit", "verify", file); code != 0 {
		t.Fatalf("verify after the refused second gateway: exit %d\n%s%s", code, out, stderr)
	}
}

// An approval answered on the control socket is recorded as approved by
// the socket peer's user (SO_PEERCRED), not by the daemon's: the daemon
// runs here with another $USER, which main recorded.
func TestAuditApprovedByPeer(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv("USER", "daemon-user-not-the-person")
	state := filepath.Join(t.TempDir(), "state")
	h := startHost(t, state)
	h.mustCLI("", "server", "add", "memory", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl")
	a := h.createSandbox("a", "--static", "memory")
	ask := filepath.Join(t.TempDir(), "ask.cedar")
	_ = os.WriteFile(ask, []byte(`@id("ask-create") @requireApproval("a person checks new entities")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/create_entities");
`), 0o600)
	h.mustCLI("", "policy", "set", ask)
	cs := a.connect(ctx)
	done := make(chan error, 1)
	go func() {
		res, err := callErr(ctx, cs, "create_entities", map[string]any{"entities": []map[string]any{{"name": "Ada", "entityType": "person", "observations": []string{"x"}}}})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %s", text(res))
		}
		done <- err
	}()
	var id string
	waitFor(ctx, t, "the call in the approval queue", func() bool {
		out, _, _ := h.cli("", "approval", "ls", "--json")
		var list []struct{ ID string }
		if json.Unmarshal([]byte(out), &list) == nil && len(list) == 1 {
			id = list[0].ID
			return true
		}
		return false
	})
	h.mustCLI("", "approval", "allow", id)
	if err := <-done; err != nil {
		t.Fatalf("the approved call: %v", err)
	}
	recs := auditRecords(t, filepath.Join(state, "audit.jsonl"))
	want := "host:" + me.Username
	for _, match := range []map[string]any{
		{"type": "approval", "name": "create_entities", "approval": "granted"},
		{"type": "call", "name": "create_entities", "approval": "granted", "outcome": "ok"},
	} {
		r := findRecord(recs, match)
		if r == nil {
			t.Fatalf("no audit record %v", match)
		}
		if r["approvedBy"] != want {
			t.Errorf("record %v: approvedBy %v, want %q (the control socket peer's user)", match, r["approvedBy"], want)
		}
	}
	if r := findRecord(recs, map[string]any{"type": "admin", "action": "approval"}); r == nil || r["principal"] != want {
		t.Errorf("the admin record of the approval: %v, want principal %q", r, want)
	}
}
