package host

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Removing a sandbox removes the policies stored for it alone, and its
// engine; the audit log says so; a new sandbox of the same name (now, and
// after a restart) starts with the global policies only.
func TestRemoveSandboxRemovesItsPolicies(t *testing.T) {
	dir := t.TempDir()
	h := openHost(t, dir)
	mustAdd(t, h, localServer(t, "mem"))
	mustSandbox(t, h, "a", "mem")
	mustSandbox(t, h, "b", "mem")
	for _, req := range []PolicyRequest{
		{Name: "global", Text: `@id("no-echo") forbid(principal, action, resource == MCP::Tool::"mem/echo");`},
		{Name: "own", Sandbox: "a", Text: `@id("no-env") forbid(principal, action, resource == MCP::Tool::"mem/env");`},
		{Name: "b-own", Sandbox: "b", Text: `@id("no-args") forbid(principal, action, resource == MCP::Tool::"mem/args");`},
	} {
		if _, err := h.SetPolicy(req); err != nil {
			t.Fatalf("policy set %s: %v", req.Name, err)
		}
	}
	decision := func(sandbox, tool string) string {
		t.Helper()
		res, err := h.TestPolicy(PolicyTestRequest{Sandbox: sandbox, Tool: tool})
		if err != nil {
			t.Fatalf("policy test %s %s: %v", sandbox, tool, err)
		}
		return res.Decision
	}
	if decision("a", "mem/env") != "deny" || decision("a", "mem/echo") != "deny" {
		t.Fatal("a's own and the global policies do not apply to it")
	}

	res, err := h.RemoveSandboxReport("a")
	if err != nil || !slices.Equal(res.Policies, []string{"own"}) {
		t.Fatalf("sandbox rm: %+v %v, want its policy own removed with it", res, err)
	}
	var left []string
	for _, p := range h.Policies() {
		left = append(left, p.Sandbox+":"+p.Name)
	}
	if !slices.Equal(left, []string{":global", "b:b-own"}) {
		t.Errorf("policies after sandbox rm: %v", left)
	}
	if _, ok := h.gov.engines["a"]; ok {
		t.Error("the removed sandbox's engine is still held")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, PoliciesFile)); strings.Contains(string(b), "no-env") {
		t.Errorf("the policy store still holds the removed sandbox's policy:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl")); !strings.Contains(string(b), `"action":"policy rm","name":"own"`) ||
		!strings.Contains(string(b), "sandbox a, removed with it") {
		t.Errorf("the audit log does not record the policy removed with the sandbox:\n%s", b)
	}

	// A new sandbox of the same name: the global policies only.
	mustSandbox(t, h, "a", "mem")
	if got := decision("a", "mem/env"); got != "allow" {
		t.Errorf("the new sandbox a inherits the old one's policy: env is %s", got)
	}
	if got := decision("a", "mem/echo"); got != "deny" {
		t.Errorf("the global policy does not apply to the new sandbox a: echo is %s", got)
	}
	if got := decision("b", "mem/args"); got != "deny" {
		t.Errorf("b's own policy was lost: args is %s", got)
	}
	closeHost(t, h)
	h = openHost(t, dir)
	if got := decision("a", "mem/env"); got != "allow" {
		t.Errorf("after a restart, env in a is %s", got)
	}
	// Removing a sandbox without policies of its own removes none.
	if res, err := h.RemoveSandboxReport("a"); err != nil || len(res.Policies) != 0 {
		t.Errorf("sandbox rm without policies: %+v %v", res, err)
	}
}

// A permit of register that asks for approval does not attach the server
// unasked: nobody can be asked while attaching, so it is denied.
func TestRegisterNeedingApprovalIsDenied(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, localServer(t, "mem"))
	mustSandbox(t, h, "a")
	if _, err := h.SetPolicy(PolicyRequest{Name: "ask", Text: `@id("ask-register") @requireApproval("a person decides")
permit(principal, action == MCP::Action::"register", resource == MCP::Server::"mem");`}); err != nil {
		t.Fatal(err)
	}
	_, err := h.Load(context.Background(), "mem", "a")
	if err == nil || !strings.Contains(err.Error(), "nobody is asked to approve") {
		t.Fatalf("load under a permit asking for approval: %v, want denied", err)
	}
	if slices.Contains(h.state.Sandboxes["a"].Servers, "mem") {
		t.Fatal("the server was attached without approval")
	}
}

func TestValidPolicyName(t *testing.T) {
	for name, want := range map[string]bool{
		"":                       false,
		"a":                      true,
		"team-A_1.v2":            true,
		strings.Repeat("x", 128): true,
		strings.Repeat("x", 129): false,
		"a b":                    false,
		"a/b":                    false,
		"é":                      false,
		"a\n":                    false,
	} {
		if got := validPolicyName(name); got != want {
			t.Errorf("validPolicyName(%q) = %v, want %v", name, got, want)
		}
	}
}
