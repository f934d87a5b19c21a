package policy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func tool(server, name, def, args string) *Request {
	r := &Request{Principal: "default", Action: ActionInvokeTool, Server: Server{Name: server, Type: "local-stdio", Command: "npx", Args: []string{"-y", "pkg"}},
		Kind: TypeTool, Name: name, Annotations: ParseAnnotations(json.RawMessage(def))}
	if args != "" {
		r.Args = json.RawMessage(args)
	}
	return r
}

func TestDecide(t *testing.T) {
	readOnly := `{"annotations":{"readOnlyHint":true,"destructiveHint":false}}`
	cases := []struct {
		name     string
		def      Default
		policies string
		req      *Request
		allow    bool
		by       []string
		approval string
	}{
		{"no policy matches, default permit", DefaultPermit, `forbid(principal, action, resource == MCP::Tool::"memory/other");`,
			tool("memory", "read_graph", "{}", `{}`), true, nil, ""},
		{"no policy matches, default deny", DefaultDeny, `permit(principal, action, resource == MCP::Tool::"memory/other");`,
			tool("memory", "read_graph", "{}", `{}`), false, nil, ""},
		{"permit by server membership", DefaultDeny, `@id("mem") permit(principal, action == MCP::Action::"invokeTool", resource in MCP::Server::"memory");`,
			tool("memory", "read_graph", "{}", `{}`), true, []string{"mem"}, ""},
		{"forbid wins over permit", DefaultDeny, "@id(\"all\") permit(principal, action, resource);\n@id(\"no-delete\") forbid(principal, action, resource == MCP::Tool::\"memory/delete_entities\");",
			tool("memory", "delete_entities", "{}", `{}`), false, []string{"no-delete"}, ""},
		{"destructive pessimistic when absent", DefaultPermit, `@id("d") forbid(principal, action, resource is MCP::Tool) when { resource.destructive };`,
			tool("memory", "read_graph", "{}", `{}`), false, []string{"d"}, ""},
		{"annotated read-only passes", DefaultPermit, `@id("d") forbid(principal, action, resource is MCP::Tool) when { resource.destructive };`,
			tool("memory", "read_graph", readOnly, `{}`), true, nil, ""},
		{"argument rule", DefaultPermit, `@id("etc") forbid(principal, action, resource) when { context has args && context.args has path && context.args.path like "/etc/*" };`,
			tool("fs", "read_file", "{}", `{"path":"/etc/passwd","n":1.5,"tags":["a",null],"o":{"x":null}}`), false, []string{"etc"}, ""},
		{"argument rule not matching", DefaultPermit, `@id("etc") forbid(principal, action, resource) when { context.args.path like "/etc/*" };`,
			tool("fs", "read_file", "{}", `{"path":"/home/x"}`), true, nil, ""},
		{"server attributes", DefaultDeny, `@id("npx") permit(principal, action, resource) when { resource.serverName == "memory" && resource.server.type == "local-stdio" && resource.server.args.contains("-y") && context.request_time > datetime("2020-01-01") };`,
			tool("memory", "x", "{}", `{}`), true, []string{"npx"}, ""},
		{"approval", DefaultDeny, `@id("ask") @requireApproval("deleting needs a person") permit(principal, action, resource == MCP::Tool::"memory/delete_entities");`,
			tool("memory", "delete_entities", "{}", `{}`), true, []string{"ask"}, "deleting needs a person"},
		{"unnamed policy is named by file and line", DefaultPermit, "permit(principal, action, resource);\n\nforbid(principal, action, resource);",
			tool("memory", "x", "{}", `{}`), false, []string{"p.cedar:3"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := Parse(c.def, Source{Name: "p.cedar", Text: []byte(c.policies)})
			if err != nil {
				t.Fatal(err)
			}
			d := set.Decide(c.req)
			if d.Allow != c.allow || strings.Join(d.Policies, ",") != strings.Join(c.by, ",") || d.Approval != c.approval {
				t.Fatalf("got allow=%v by %v approval %q (errors %v); want allow=%v by %v approval %q", d.Allow, d.Policies, d.Approval, d.Errors, c.allow, c.by, c.approval)
			}
		})
	}
}

func TestParseErrorsNameFileLineColumn(t *testing.T) {
	cases := []struct{ text, want string }{
		{"permit(principal, action, resource);\nforbid(principal, action, resource)\n  when { resource.destructive ;", `bad.cedar:3:31: syntax error: expected "}", found ";"`},
		{"permit (principal, action, resource)\nwhen { context.x == 1 \n", `bad.cedar:3:1: syntax error: expected "}", but the file ends (a policy ends with ';')`},
		{"permit (principal, action, resource);\nforbid (principal, action resource);\n", `bad.cedar:2:27: syntax error: expected ",", found "resource"`},
		{"permit (principal, action, resource) when { context.x == };", `bad.cedar:1:59: syntax error at ";": invalid primary`},
		{"permit (principal, action, resource) when { context.x == \"abc };", `bad.cedar:1:58: syntax error: literal not terminated`},
		{"permit(principal, action == MCP::Action::\"invoke\", resource);", "bad.cedar:1:1: unknown action \"invoke\""},
		{"permit(principal, action, resource is MCP::Tol);", "bad.cedar:1:1: unknown entity type MCP::Tol"},
		{"@requireApproval(\"x\") forbid(principal, action, resource);", "bad.cedar:1:1: @requireApproval belongs on a permit"},
		{"@id(\"a\") permit(principal, action, resource);\n@id(\"a\") forbid(principal, action, resource);", "bad.cedar:2:1: policy id \"a\" is already used at bad.cedar:1:1"},
	}
	for _, c := range cases {
		_, err := Parse(DefaultPermit, Source{Name: "bad.cedar", Text: []byte(c.text)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "exact got") {
			t.Errorf("%q: %v: cedar-go's wording, not what was expected", c.text, err)
		}
	}
}

func TestVisible(t *testing.T) {
	cases := []struct {
		name     string
		def      Default
		policies string
		req      *Request
		visible  bool
	}{
		{"forbidden tool hidden", DefaultPermit, `forbid(principal, action, resource == MCP::Tool::"m/a");`, tool("m", "a", "{}", ""), false},
		{"argument forbid keeps it listed", DefaultPermit, `forbid(principal, action, resource) when { context.args.path like "/etc/*" };`, tool("m", "a", "{}", ""), true},
		{"default deny hides unpermitted", DefaultDeny, `permit(principal, action, resource == MCP::Tool::"m/b");`, tool("m", "a", "{}", ""), false},
		{"argument permit keeps it listed", DefaultDeny, `permit(principal, action, resource) when { context.args.n == 1 };`, tool("m", "a", "{}", ""), true},
	}
	for _, c := range cases {
		set, err := Parse(c.def, Source{Name: "p.cedar", Text: []byte(c.policies)})
		if err != nil {
			t.Fatal(err)
		}
		if got := set.Visible(c.req); got != c.visible {
			t.Errorf("%s: visible %v, want %v", c.name, got, c.visible)
		}
	}
}

func TestNoSetPermitsEverything(t *testing.T) {
	var s *Set
	if d := s.Decide(tool("m", "a", "{}", "{}")); !d.Allow {
		t.Fatal("no policy must permit")
	}
}

// The examples of docs/policy.md parse.
func TestDocExamplesParse(t *testing.T) {
	b, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```cedar\n")
	if len(blocks) < 2 {
		t.Fatal("no cedar block in docs/policy.md")
	}
	for _, blk := range blocks[1:] {
		text, _, _ := strings.Cut(blk, "```")
		set, err := Parse(DefaultPermit, Source{Name: "docs", Text: []byte(text)})
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		d := set.Decide(&Request{Principal: "ci", Sandbox: true, Action: ActionInvokeTool, Kind: TypeTool,
			Server: Server{Name: "remote1", Type: "remote-http"}, Name: "x", Annotations: ParseAnnotations(json.RawMessage(`{"annotations":{"readOnlyHint":true,"destructiveHint":false}}`)), Args: json.RawMessage(`{}`)})
		if !d.Allow || len(d.Errors) > 0 {
			t.Errorf("a read-only remote tool: %+v", d)
		}
		d = set.Decide(&Request{Principal: "ci", Sandbox: true, Action: ActionInvokeTool, Kind: TypeTool,
			Server: Server{Name: "filesystem", Type: "local-stdio"}, Name: "read_file", Annotations: ParseAnnotations(json.RawMessage(`{"annotations":{"destructiveHint":false}}`)), Args: json.RawMessage(`{"path":"/etc/shadow"}`)})
		if d.Allow || strings.Join(d.Policies, ",") != "no-etc" {
			t.Errorf("read_file /etc/shadow: %+v", d)
		}
	}
}
