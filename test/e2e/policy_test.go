package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The policies of the serve-mode tests: annotation-based, argument-based,
// forbid over permit, and deny by default (--policy-default deny).
const testPolicies = `// memory's tools, but never a destructive one, nor a search for secrets.
@id("memory-ok")
permit(principal, action == MCP::Action::"invokeTool", resource in MCP::Server::"memory");

@id("no-destructive")
forbid(principal, action == MCP::Action::"invokeTool", resource is MCP::Tool)
  when { resource.destructive };

@id("no-secret-search")
forbid(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/search_nodes")
  when { context.args.query like "*secret*" };

@id("echo-only")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"everything/echo");
`

func writePolicy(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.cedar")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func policyConfig(t *testing.T) string {
	return fmt.Sprintf(`{"memory": {"envs": {"MEMORY_FILE_PATH": %q}}, "everything": {"runCmd": %q}}`,
		filepath.Join(t.TempDir(), "memory.jsonl"), filepath.Join(npmBin, "mcp-server-everything"))
}

func (g *gw) auditFile() string { return filepath.Join(g.dir, "log", "mcp-gateway-audit.jsonl") }

// auditRecords reads the audit log's records.
func auditRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range readLines(t, path) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func findRecord(recs []map[string]any, match map[string]any) map[string]any {
	for _, r := range recs {
		ok := true
		for k, v := range match {
			if fmt.Sprint(r[k]) != fmt.Sprint(v) {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// deniedMeta is the _meta key of a refused tools/call's result (docs/policy.md, "Refusals").
const deniedMeta = "io.github.mcp-gateway/denied"

// callErr calls a tool; a refusal (an isError result with the gateway's
// refusal in its _meta) comes back as an error with its text.
func callErr(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err == nil && res.IsError && res.Meta[deniedMeta] != nil {
		return res, fmt.Errorf("refused: %s", text(res))
	}
	return res, err
}

func TestPolicyServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGW(t)
	policyFile := writePolicy(t, testPolicies)
	g.mustLaunch(policyConfig(t), "--policy-file", policyFile, "--policy-default", "deny")

	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			cs := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "e2e-policy", Version: "1"}, nil), era)
			names := toolNames(ctx, t, cs)
			slices.Sort(names)
			want := []string{"add_observations", "create_entities", "create_relations", "echo", "open_nodes", "read_graph", "search_nodes"}
			if !slices.Equal(names, want) {
				t.Fatalf("tools listed %v, want %v (destructive ones and everything's others hidden)", names, want)
			}
			if res, err := callErr(ctx, cs, "read_graph", map[string]any{}); err != nil || res.IsError {
				t.Fatalf("read_graph: %v %v", err, res)
			}
			if res, err := callErr(ctx, cs, "echo", map[string]any{"message": "hi"}); err != nil || !strings.Contains(text(res), "hi") {
				t.Fatalf("echo: %v %v", err, res)
			}
			if res, err := callErr(ctx, cs, "search_nodes", map[string]any{"query": "plain"}); err != nil || res.IsError {
				t.Fatalf("search_nodes plain: %v %v", err, res)
			}
			denials := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"delete_entities", map[string]any{"entityNames": []string{"x"}}, `forbidden by policy "no-destructive"`}, // forbid wins over memory-ok
				{"search_nodes", map[string]any{"query": "top secret plans"}, `forbidden by policy "no-secret-search"`},
				{"get-sum", map[string]any{"a": 1, "b": 2}, "no policy permits it"},
			}
			for _, d := range denials {
				_, err := callErr(ctx, cs, d.tool, d.args)
				if err == nil || !strings.Contains(err.Error(), d.want) {
					t.Errorf("%s: got %v, want an error with %q", d.tool, err, d.want)
				}
			}
		})
	}

	// Every decision is in the audit log, arguments as a hash, and the
	// chain verifies; an edited, deleted or swapped record is detected.
	recs := auditRecords(t, g.auditFile())
	allowed := findRecord(recs, map[string]any{"type": "call", "server": "memory", "name": "search_nodes", "decision": "allow", "outcome": "ok"})
	if allowed == nil || allowed["argsSha256"] == nil || allowed["args"] != nil || allowed["principal"] != "default" || allowed["client"] != "e2e-policy/1" {
		t.Fatalf("no allowed search_nodes record with an argument hash: %v", recs)
	}
	denied := findRecord(recs, map[string]any{"type": "call", "name": "delete_entities", "decision": "deny", "outcome": "denied"})
	if denied == nil || fmt.Sprint(denied["policies"]) != "[no-destructive]" {
		t.Fatalf("no denied delete_entities record naming its policy: %v", recs)
	}
	if b, _ := os.ReadFile(g.auditFile()); strings.Contains(string(b), "top secret") || strings.Contains(string(b), g.token) {
		t.Fatal("the audit log holds arguments or the token")
	}

	// SIGHUP reloads the file: a changed list is announced; a broken file
	// leaves the policies in force.
	cs, changed := g.connectListChanged(ctx)
	toolNames(ctx, t, cs)
	if err := os.WriteFile(policyFile, []byte(testPolicies+"\n@id(\"sum\") permit(principal, action, resource == MCP::Tool::\"everything/get-sum\");\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(g.pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitListChanged(t, changed, "SIGHUP with a new policy")
	if names := toolNames(ctx, t, cs); !slices.Contains(names, "get-sum") {
		t.Errorf("after the reload: %v", names)
	}
	if err := os.WriteFile(policyFile, []byte("permit(principal, action, resource"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(g.pid, syscall.SIGHUP)
	waitFor(ctx, t, "the reload failure in the log", func() bool { return strings.Contains(g.log(), "reloading the policy file failed") })
	if _, err := callErr(ctx, cs, "get-sum", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Errorf("after a failed reload: %v", err)
	}
	if findRecord(auditRecords(t, g.auditFile()), map[string]any{"type": "admin", "action": "policy reload", "outcome": "ok"}) == nil {
		t.Error("no audit record of the reload")
	}
	verifyAudit(t, g.auditFile())

	// The decisions are counted in the metrics, by action and result.
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", g.port), g.token)
	if v := metricLine(scraped, `mcp_gateway_policy_decisions_total{action="invokeTool",result="deny"}`); v != "6" {
		t.Errorf("invokeTool deny decisions: %q, want 6 (three per era)", v)
	}
	if v := metricLine(scraped, `mcp_gateway_policy_decisions_total{action="invokeTool",result="permit"}`); v == "" || v == "0" {
		t.Errorf("invokeTool permit decisions: %q", v)
	}
}

// scrape GETs a /metrics page (with the bearer token when not "").
func scrape(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// metricLine is the value of a series in a scrape ("" when absent).
func metricLine(scraped, series string) string {
	for line := range strings.Lines(scraped) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	return ""
}

// verifyAudit checks that `audit verify` passes on the file, then fails on
// copies with one record edited, one deleted, two swapped.
func verifyAudit(t *testing.T, file string) {
	t.Helper()
	out, stderr, code := runGateway(t, nil, "audit", "verify", file)
	if code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("audit verify: exit %d\n%s%s", code, out, stderr)
	}
	lines := readLines(t, file)
	if len(lines) < 4 {
		t.Fatalf("only %d audit records", len(lines))
	}
	tampered := map[string][]string{
		"edited":  append(append(slices.Clone(lines[:1]), strings.Replace(lines[1], `"type":"`, `"type":"x`, 1)), lines[2:]...),
		"deleted": append(slices.Clone(lines[:1]), lines[2:]...),
		"swapped": append(append(slices.Clone(lines[:1]), lines[2], lines[1]), lines[3:]...),
	}
	for what, ls := range tampered {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, code := runGateway(t, nil, "audit", "verify", path)
		if code != 1 || !strings.Contains(out, "FAILED") || !strings.Contains(out, path+":2:") {
			t.Errorf("%s record: audit verify exit %d\n%s", what, code, out)
		}
	}
}

func TestPolicyFileErrors(t *testing.T) {
	cases := map[string]string{
		"syntax":         "permit(principal, action, resource);\nforbid(principal, action, resource)\n  when { resource.destructive ;",
		"unknown type":   "permit(principal, action, resource is MCP::Tol);",
		"unknown action": "\n\npermit(principal, action == MCP::Action::\"callTool\", resource);",
	}
	wants := map[string]string{"syntax": `:3:31: syntax error: expected "}", found ";"`, "unknown type": ":1:1: unknown entity type", "unknown action": ":3:1: unknown action"}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGW(t)
			file := writePolicy(t, text)
			g.launch(policyConfig(t), "--policy-file", file)
			if g.exit != 2 || !strings.Contains(g.stderr, file+wants[name]) {
				t.Fatalf("exit %d, stderr %q; want exit 2 naming %s%s", g.exit, g.stderr, file, wants[name])
			}
			if _, err := os.Stat(g.tokenFile()); err == nil {
				t.Fatal("a token file was written for an invalid policy file")
			}
		})
	}
}

// approvalPolicy asks a person before create_entities.
const approvalPolicy = `permit(principal, action, resource);
@id("ask-create")
@requireApproval("creating entities changes the shared graph")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/create_entities");
`

func TestPolicyApprovalByElicitation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(policyConfig(t), "--policy-file", writePolicy(t, approvalPolicy), "--approval-timeout", "3s")
	args := map[string]any{"entities": []map[string]any{{"name": "Ada", "entityType": "person", "observations": []string{"x"}}}}

	answering := func(name, era string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(req) },
		})
		return connectClient(ctx, t, g, c, era)
	}
	// Session era: a form elicitation; 2026-07-28: the same as an
	// input-required result the SDK answers with its handler and retries.
	for _, era := range bothEras {
		var asked string
		yes := answering("approver", era, func(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		})
		res, err := callErr(ctx, yes, "create_entities", args)
		if err != nil || res.IsError {
			t.Fatalf("%s: approved call: %v %v", era, err, res)
		}
		for _, want := range []string{"creating entities changes the shared graph", "memory/create_entities", "Ada"} {
			if !strings.Contains(asked, want) {
				t.Errorf("%s: the elicitation %q lacks %q", era, asked, want)
			}
		}
		no := answering("refuser", era, func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		})
		if _, err := callErr(ctx, no, "create_entities", args); err == nil || !strings.Contains(err.Error(), "approval was denied") {
			t.Fatalf("%s: declined call: %v", era, err)
		}
	}
	slow := answering("sleeper", sessionEra, func(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		time.Sleep(6 * time.Second) // beyond --approval-timeout
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	})
	if _, err := callErr(ctx, slow, "create_entities", args); err == nil || !strings.Contains(err.Error(), "nobody answered within") {
		t.Fatalf("unanswered call: %v", err)
	}
	// A client that declared no elicitation cannot be asked: denied.
	plain := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil), sessionEra)
	if _, err := callErr(ctx, plain, "create_entities", args); err == nil || !strings.Contains(err.Error(), "cannot be asked") {
		t.Fatalf("call by a client without elicitation: %v", err)
	}
	// Others need no approval.
	if res, err := callErr(ctx, plain, "read_graph", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("read_graph: %v %v", err, res)
	}
	recs := auditRecords(t, g.auditFile())
	for _, outcome := range []string{"granted", "denied", "timeout"} {
		found := false
		for _, r := range recs {
			if a, _ := r["approval"].(string); strings.HasPrefix(a, outcome) && r["name"] == "create_entities" {
				found = true
			}
		}
		if !found {
			t.Errorf("no audit record of an approval %s", outcome)
		}
	}
	verifyAudit(t, g.auditFile())
}

// Host mode: policies stored on the daemon apply at once (lists change,
// with list_changed), `policy test` decides without calling, a register
// rule stops mcp-add and load, approvals go through the host's queue, and
// every administrative action is audited.
func TestPolicyHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	metricsPort := freePort(t)
	h := startHost(t, state, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	h.mustCLI("", "server", "add", "memory", "--command", filepath.Join(npmBin, "mcp-server-memory"),
		"--env", "MEMORY_FILE_PATH=${sandbox_dir}/graph.jsonl")
	const secretValue = "s3cret-value-never-audited"
	h.mustCLI(secretValue, "secret", "set", "mcp:memory:unused")
	a := h.createSandbox("a", "--static", "memory")
	dyn := h.createSandbox("dyn")

	ac, changed := a.connectListChanged(ctx)
	if names := toolNames(ctx, t, ac); !slices.Contains(names, "delete_entities") {
		t.Fatalf("before any policy: %v", names)
	}
	modern := connectClient(ctx, t, a, mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "1"}, nil), modernEra)

	dir := t.TempDir()
	noDestructive := filepath.Join(dir, "no-destructive.cedar")
	_ = os.WriteFile(noDestructive, []byte(`@id("no-destructive")
forbid(principal, action == MCP::Action::"invokeTool", resource is MCP::Tool) when { resource.destructive };
`), 0o600)
	out := h.mustCLI("", "policy", "set", noDestructive)
	if !strings.Contains(out, `policy "no-destructive" set for every sandbox (1 policies)`) {
		t.Errorf("policy set: %s", out)
	}
	waitListChanged(t, changed, "policy set")
	for _, cs := range []*mcp.ClientSession{ac, modern} {
		if names := toolNames(ctx, t, cs); slices.Contains(names, "delete_entities") || !slices.Contains(names, "read_graph") {
			t.Errorf("after policy set: %v", names)
		}
		if _, err := callErr(ctx, cs, "delete_entities", map[string]any{"entityNames": []string{"x"}}); err == nil || !strings.Contains(err.Error(), `forbidden by policy "no-destructive"`) {
			t.Errorf("delete_entities: %v", err)
		}
	}
	// mcp-exec is decided as the tool it calls.
	if got, isErr := callText(ctx, t, ac, "mcp-exec", map[string]any{"name": "delete_entities", "arguments": map[string]any{"entityNames": []string{"x"}}}); !isErr || !strings.Contains(got, `forbidden by policy "no-destructive"`) {
		t.Errorf("mcp-exec of a forbidden tool: %v %s", isErr, got)
	}
	out = h.mustCLI("", "policy", "ls")
	if !strings.Contains(out, "no-destructive") || !strings.Contains(out, "forbid") || !strings.Contains(out, noDestructive+":1:1") {
		t.Errorf("policy ls:\n%s", out)
	}
	out = h.mustCLI("", "policy", "test", "--sandbox", "a", "--tool", "memory/delete_entities", "--args", `{"entityNames":["x"]}`)
	if !strings.HasPrefix(out, `deny: forbidden by policy "no-destructive"`) {
		t.Errorf("policy test delete_entities: %s", out)
	}
	out = h.mustCLI("", "policy", "test", "--sandbox", "a", "--tool", "memory/read_graph")
	if !strings.HasPrefix(out, "allow:") {
		t.Errorf("policy test read_graph: %s", out)
	}
	bad := filepath.Join(dir, "bad.cedar")
	_ = os.WriteFile(bad, []byte("permit(principal, action, resource)\nwhen { true"), 0o600)
	h.failCLI(bad+":2:12", "", "policy", "set", bad)

	// A register rule for one sandbox stops mcp-add and load there.
	noAttach := filepath.Join(dir, "no-attach.cedar")
	_ = os.WriteFile(noAttach, []byte(`@id("no-memory-here")
forbid(principal, action == MCP::Action::"register", resource == MCP::Server::"memory");
`), 0o600)
	h.mustCLI("", "policy", "set", noAttach, "--sandbox", "dyn")
	dc := dyn.connectEra(ctx, sessionEra)
	if got, isErr := callText(ctx, t, dc, "mcp-add", map[string]any{"name": "memory"}); !isErr || !strings.Contains(got, `"no-memory-here"`) {
		t.Errorf("mcp-add against a register rule: %v %s", isErr, got)
	}
	h.failCLI(`"no-memory-here"`, "", "load", "memory", "--sandbox", "dyn")
	out = h.mustCLI("", "policy", "test", "--sandbox", "a", "--tool", "mcp-exec")
	if !strings.HasPrefix(out, "allow:") {
		t.Errorf("policy test of a built-in tool: %s", out)
	}

	// Approval through the host's queue (the client cannot be asked).
	ask := filepath.Join(dir, "ask.cedar")
	_ = os.WriteFile(ask, []byte(`@id("ask-create") @requireApproval("a person checks new entities")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"memory/create_entities");
`), 0o600)
	h.mustCLI("", "policy", "set", ask)
	args := map[string]any{"entities": []map[string]any{{"name": "Ada", "entityType": "person", "observations": []string{"x"}}}}
	for _, verdict := range []string{"allow", "deny"} {
		done := make(chan error, 1)
		go func() {
			res, err := callErr(ctx, ac, "create_entities", args)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %s", text(res))
			}
			done <- err
		}()
		var id string
		waitFor(ctx, t, "the call in the approval queue", func() bool {
			out, _, _ := h.cli("", "approval", "ls", "--json")
			var list []struct{ ID, Name, Reason string }
			if json.Unmarshal([]byte(out), &list) == nil && len(list) == 1 && list[0].Name == "create_entities" && list[0].Reason == "a person checks new entities" {
				id = list[0].ID
				return true
			}
			return false
		})
		h.mustCLI("", "approval", verdict, id)
		err := <-done
		if verdict == "allow" && err != nil || verdict == "deny" && (err == nil || !strings.Contains(err.Error(), "approval was denied")) {
			t.Errorf("approval %s: call ended with %v", verdict, err)
		}
	}
	h.failCLI("no call is waiting", "", "approval", "allow", "999")

	// Removing the policy brings the tool back, with list_changed.
	drain(changed)
	h.mustCLI("", "policy", "rm", "no-destructive")
	waitListChanged(t, changed, "policy rm")
	if names := toolNames(ctx, t, ac); !slices.Contains(names, "delete_entities") {
		t.Errorf("after policy rm: %v", names)
	}

	// The decisions are counted by sandbox, action and result.
	scraped := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), "")
	for series, want := range map[string]string{
		`mcp_gateway_policy_decisions_total{action="invokeTool",result="approval_granted",sandbox="a"}`: "1",
		`mcp_gateway_policy_decisions_total{action="invokeTool",result="approval_denied",sandbox="a"}`:  "1",
		`mcp_gateway_policy_decisions_total{action="register",result="deny",sandbox="dyn"}`:             "2",
	} {
		if v := metricLine(scraped, series); v != want {
			t.Errorf("%s = %q, want %s", series, v, want)
		}
	}

	// Removing a sandbox removes its own policies: a new sandbox of the
	// same name may attach memory again.
	out = h.mustCLI("", "sandbox", "rm", "dyn")
	if !strings.Contains(out, "its policies were removed with it: no-attach") {
		t.Errorf("sandbox rm of a sandbox with a policy of its own:\n%s", out)
	}
	if out = h.mustCLI("", "policy", "ls"); strings.Contains(out, "no-memory-here") {
		t.Errorf("policy ls after sandbox rm:\n%s", out)
	}
	h.createSandbox("dyn")
	h.mustCLI("", "load", "memory", "--sandbox", "dyn")

	// The audit log: admin actions, decisions and approvals; no secret.
	file := filepath.Join(state, "audit.jsonl")
	recs := auditRecords(t, file)
	for _, want := range []map[string]any{
		{"type": "admin", "action": "server add", "name": "memory"},
		{"type": "admin", "action": "secret set", "name": "mcp:memory:unused"},
		{"type": "admin", "action": "sandbox create", "name": "a"},
		{"type": "admin", "action": "policy set", "name": "no-destructive"},
		{"type": "admin", "action": "policy rm", "name": "no-destructive"},
		{"type": "admin", "action": "approval", "detail": "allow", "outcome": "ok"},
		{"type": "admin", "action": "load", "name": "memory", "detail": "sandbox dyn", "outcome": "error"},
		{"type": "admin", "action": "policy rm", "name": "no-attach", "detail": "sandbox dyn, removed with it (sandbox rm)"},
		{"type": "admin", "action": "load", "name": "memory", "detail": "sandbox dyn", "outcome": "ok"},
		{"type": "call", "action": "register", "server": "memory", "decision": "deny", "principal": "dyn"},
		{"type": "call", "name": "delete_entities", "decision": "deny", "principal": "a"},
		{"type": "call", "name": "create_entities", "approval": "granted", "outcome": "ok"},
		{"type": "call", "name": "create_entities", "approval": "denied", "outcome": "denied"},
		{"type": "approval", "name": "create_entities", "approval": "granted"},
	} {
		if findRecord(recs, want) == nil {
			t.Errorf("no audit record %v", want)
		}
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), secretValue) || strings.Contains(string(b), a.token) {
		t.Error("the audit log holds a secret or a token")
	}
	verifyAudit(t, file)
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// `mcp-gateway stdio --policy-file`: the same decisions over stdin/stdout,
// with full arguments in the audit log under --audit-arguments.
func TestPolicyStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(gatewayBin, "stdio", "--config", policyConfig(t), "--catalog-file", filepath.Join(t.TempDir(), "none.json"),
		"--policy-file", writePolicy(t, testPolicies), "--policy-default", "deny", "--audit-file", auditFile, "--audit-arguments")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-stdio", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: sessionEra})
	if err != nil {
		t.Fatalf("connecting over stdio: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	if names := toolNames(ctx, t, cs); slices.Contains(names, "delete_entities") || !slices.Contains(names, "echo") || slices.Contains(names, "get-sum") {
		t.Errorf("tools over stdio: %v", names)
	}
	if _, err := callErr(ctx, cs, "search_nodes", map[string]any{"query": "secret"}); err == nil || !strings.Contains(err.Error(), `"no-secret-search"`) {
		t.Errorf("search_nodes over stdio: %v", err)
	}
	cs.Close()
	if r := findRecord(auditRecords(t, auditFile), map[string]any{"name": "search_nodes", "decision": "deny"}); r == nil || fmt.Sprint(r["args"]) != "map[query:secret]" {
		t.Errorf("the denied call's record lacks its full arguments: %v", r)
	}
}

// Completions and subscriptions are decided like prompts/get and
// resources/read of what they refer to: a client learns nothing through
// them that it could not read (both eras; subscriptions in the session era,
// the only one with resources/subscribe).
func TestPolicyCompletionsAndSubscriptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")), "--policy-file", writePolicy(t, `
@id("no-sales")
forbid(principal, action == MCP::Action::"getPrompt", resource == MCP::Prompt::"everything/completable-prompt")
  when { context.args has department && context.args.department == "Sales" };
@id("no-dynamic-text")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"demo://resource/dynamic/text/{resourceId}");
@id("no-startup")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"demo://resource/static/document/startup.md");
`))
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"}
	for _, era := range bothEras {
		t.Run(era, func(t *testing.T) {
			cs := connectClient(ctx, t, g, mcp.NewClient(&mcp.Implementation{Name: "e2e-complete", Version: "1"}, nil), era)
			for _, c := range []struct {
				params *mcp.CompleteParams
				want   string // the values, or the error's policy
			}{
				// A value a use would be denied with is left out.
				{&mcp.CompleteParams{Ref: prompt, Argument: mcp.CompleteParamsArgument{Name: "department", Value: "S"}}, "[Support]"},
				// Completing under denied arguments is refused.
				{&mcp.CompleteParams{Ref: prompt, Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""},
					Context: &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}}}, `forbidden by policy "no-sales"`},
				{&mcp.CompleteParams{Ref: prompt, Argument: mcp.CompleteParamsArgument{Name: "name", Value: ""},
					Context: &mcp.CompleteContext{Arguments: map[string]string{"department": "Engineering"}}}, "[Alice Bob Charlie]"},
				// A template is decided as a read of it.
				{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "demo://resource/dynamic/text/{resourceId}"},
					Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "12"}}, `forbidden by policy "no-dynamic-text"`},
				{&mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "demo://resource/dynamic/blob/{resourceId}"},
					Argument: mcp.CompleteParamsArgument{Name: "resourceId", Value: "12"}}, "[12]"},
			} {
				got := ""
				res, err := cs.Complete(ctx, c.params)
				if err != nil {
					got = err.Error()
				} else {
					got = fmt.Sprint(res.Completion.Values)
				}
				if !strings.Contains(got, c.want) {
					t.Errorf("completing %s%s %s=%q: %s, want %s", c.params.Ref.Name, c.params.Ref.URI, c.params.Argument.Name, c.params.Argument.Value, got, c.want)
				}
			}
			// A URI made from a forbidden template is not readable either.
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/12"})
			if err == nil || !strings.Contains(err.Error(), `forbidden by policy "no-dynamic-text"`) {
				t.Errorf("reading a URI of a forbidden template: %v", err)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/blob/12"}); err != nil {
				t.Errorf("reading a URI of a permitted template: %v", err)
			}
			if era != sessionEra {
				return
			}
			err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://resource/dynamic/text/12"})
			if err == nil || !strings.Contains(err.Error(), `forbidden by policy "no-dynamic-text"`) {
				t.Errorf("subscribing to a URI of a forbidden template: %v", err)
			}
			err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://resource/static/document/startup.md"})
			if err == nil || !strings.Contains(err.Error(), `forbidden by policy "no-startup"`) {
				t.Errorf("subscribing to a resource it may not read: %v", err)
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://resource/static/document/structure.md"}); err != nil {
				t.Errorf("subscribing to a resource it may read: %v", err)
			}
		})
	}
	recs := auditRecords(t, g.auditFile())
	for _, want := range []map[string]any{
		{"type": "call", "method": "completion/complete", "action": "getPrompt", "name": "completable-prompt", "decision": "deny", "policies": "[no-sales]"},
		{"type": "call", "method": "completion/complete", "action": "readResource", "decision": "allow", "outcome": "ok"},
		{"type": "call", "method": "resources/subscribe", "name": "demo://resource/static/document/startup.md", "decision": "deny"},
		{"type": "call", "method": "resources/subscribe", "name": "demo://resource/static/document/structure.md", "decision": "allow", "outcome": "ok"},
	} {
		if findRecord(recs, want) == nil {
			t.Errorf("no audit record %v", want)
		}
	}
}
