package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mcpgoOnce sync.Once
	mcpgoBin  string
	mcpgoErr  error
)

// mcpgoServer builds test/mcpgo, a stdio server on mark3labs/mcp-go (whose
// decoder matches member names regardless of case), once per test run.
func mcpgoServer(t *testing.T) string {
	t.Helper()
	mcpgoOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join(filepath.Dir(gatewayBin), "mcpgo"))
		if err != nil {
			mcpgoErr = err
			return
		}
		build := exec.Command("go", "build", "-o", dir, "./test/mcpgo")
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			mcpgoErr = fmt.Errorf("building test/mcpgo: %v\n%s", err, out)
		}
		mcpgoBin = dir
	})
	if mcpgoErr != nil {
		t.Fatal(mcpgoErr)
	}
	return mcpgoBin
}

// foldServer is one real server behind the gateway, with a tool whose
// string argument a policy forbids to start with /etc/.
type foldServer struct {
	server, runCmd string
	tool           string   // its name as exposed
	arg            string   // the argument the policy decides on
	folded         []string // spellings of arg that differ from it only by case
	answer         string   // what the tool answers for the argument /tmp/ok
	resources      bool     // it serves note://public and note://secret
}

const foldPolicy = `@id("all")
permit(principal, action, resource);

@id("no-etc")
forbid(principal, action == MCP::Action::"invokeTool", resource is MCP::Tool)
  when { context.args has %[1]s && context.args.%[1]s like "/etc/*" };

@id("no-secret-note")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"note://secret");
`

// A forbid on a tool's argument (context.args.path like "/etc/*") or on a
// resource's URI decides on the members the gateway reads; a server whose
// decoder folds case (mcp-go) reads params.ARGUMENTS, arguments.PATH,
// params.URI, the long s (U+017F) as s, as the same members. Each such
// spelling is refused with -32600 naming it, before any server sees it,
// identically in front of mcp-go, the Go SDK and the TypeScript
// server-everything; the correct spellings keep working, the policy keeps
// deciding them, and the audit log never records a folded call as allowed.
func TestFoldedNamesRefused(t *testing.T) {
	servers := []foldServer{
		{server: "mcpgo", runCmd: mcpgoServer(t), tool: "read_file", arg: "path",
			folded: []string{"PATH", "Path", "pAth"}, answer: "read /tmp/ok", resources: true},
		{server: "gosdk", runCmd: testServerCmd(), tool: "echo", arg: "text",
			folded: []string{"TEXT", "Text", "tExt"}, answer: "/tmp/ok"},
		{server: "everything", runCmd: filepath.Join(npmBin, "mcp-server-everything"), tool: "echo", arg: "message",
			folded: []string{"MESSAGE", "Message", `me\u017f\u017fage`, "me\u017fsage"}, answer: "Echo: /tmp/ok"},
	}
	for _, fs := range servers {
		t.Run(fs.server, func(t *testing.T) {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			s := startServe(t, fmt.Sprintf(`{%q: {"runCmd": %q}}`, fs.server, fs.runCmd),
				"--policy-file", writePolicy(t, fmt.Sprintf(foldPolicy, fs.arg)), "--audit-file", audit, "--audit-arguments")
			rs := newRawSession(t, s.gw)
			call := func(id int, params string) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
			}
			// args writes name as it is given: its \u escapes stay escapes.
			args := func(name, value string) string { return `{"` + name + `":"` + value + `"}` }
			id := 10

			// The members of the message itself and of params: refused by
			// the parser, whatever the server.
			for _, tc := range []struct{ body, member, want string }{
				{call(id, `{"name":"`+fs.tool+`","ARGUMENTS":`+args(fs.arg, "/etc/passwd")+`}`), "params.ARGUMENTS", "arguments"},
				{call(id, `{"name":"`+fs.tool+`","Arguments":`+args(fs.arg, "/etc/passwd")+`}`), "params.Arguments", "arguments"},
				{call(id, `{"name":"`+fs.tool+`","argument\u017f":`+args(fs.arg, "/etc/passwd")+`}`), `params["argumentſ"]`, "arguments"},
				{call(id, `{"Name":"`+fs.tool+`","arguments":`+args(fs.arg, "/etc/passwd")+`}`), "params.Name", "name"},
				{call(id, `{"name":"`+fs.tool+`","arguments":`+args(fs.arg, "/tmp/ok")+`,"_meta":{"progresstoken":1}}`), "params._meta.progresstoken", "progressToken"},
				{call(id, `{"name":"`+fs.tool+`","arguments":`+args(fs.arg, "/tmp/ok")+`,"_META":{"progressToken":1}}`), "params._META", "_meta"},
				{`{"jsonrpc":"2.0","ID":11,"method":"tools/call","params":{"name":"` + fs.tool + `","arguments":` + args(fs.arg, "/etc/passwd") + `}}`, "ID", "id"},
				{`{"jsonrpc":"2.0","id":12,"Method":"tools/call","params":{"name":"` + fs.tool + `","arguments":` + args(fs.arg, "/etc/passwd") + `}}`, "Method", "method"},
				{`{"jsonrpc":"2.0","id":13,"method":"tools/call","PARAMS":{"name":"` + fs.tool + `","arguments":` + args(fs.arg, "/etc/passwd") + `}}`, "PARAMS", "params"},
				{`{"jsonrpc":"2.0","id":14,"method":"resources/read","params":{"URI":"note://secret"}}`, "params.URI", "uri"},
			} {
				resp, body := rs.post(tc.body)
				wantRPCError(t, tc.body, resp, body, 400, -32600, "member "+tc.member+" ", fmt.Sprintf("spell it %q", tc.want))
			}

			// A tool's arguments: refused where they are a declared property
			// but for case.
			for _, name := range fs.folded {
				id++
				body := call(id, `{"name":"`+fs.tool+`","arguments":`+args(name, "/etc/passwd")+`}`)
				resp, rb := rs.post(body)
				var decoded map[string]any
				_ = json.Unmarshal([]byte(args(name, "")), &decoded)
				var member string
				for k := range decoded {
					member = k
				}
				wantRPCError(t, body, resp, rb, 200, -32600, fmt.Sprintf("member %s is %q but for case", pathName("params.arguments", member), fs.arg),
					fmt.Sprintf("tool %q declares %q", fs.tool, fs.arg))
			}
			// The same in the 2026-07-28 era, without a session.
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
			status, _, sbody := s.rawPost(t, call(40, `{"name":"`+fs.tool+`","arguments":`+args(fs.folded[0], "/etc/passwd")+`,`+meta+`}`),
				map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": fs.tool})
			if status != 200 || !strings.Contains(sbody, `"code":-32600`) || !strings.Contains(sbody, "params.arguments."+fs.folded[0]) {
				t.Errorf("a 2026-07-28 call with arguments.%s: %d %s; want -32600 naming it", fs.folded[0], status, sbody)
			}

			// The correct spellings: an allowed path is served, a forbidden
			// one denied by the policy.
			resp, body := rs.post(call(50, `{"name":"`+fs.tool+`","arguments":`+args(fs.arg, "/tmp/ok")+`}`))
			var r rpcReply
			if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || r.Result == nil || len(r.Result.Content) == 0 || r.Result.Content[0].Text != fs.answer {
				t.Errorf("an allowed call: %s %s; want the text %q", resp.Status, body, fs.answer)
			}
			resp, body = rs.post(call(51, `{"name":"`+fs.tool+`","arguments":`+args(fs.arg, "/etc/passwd")+`}`))
			wantDenied(t, "a forbidden path", resp, body, "no-etc")
			if fs.resources {
				resp, body = rs.post(`{"jsonrpc":"2.0","id":52,"method":"resources/read","params":{"uri":"note://public"}}`)
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"note note://public"`) {
					t.Errorf("reading note://public: %s %s", resp.Status, body)
				}
				resp, body = rs.post(`{"jsonrpc":"2.0","id":53,"method":"resources/read","params":{"uri":"note://secret"}}`)
				wantRPCError(t, "reading note://secret", resp, body, 200, -32010, "no-secret-note")
			}

			// Nothing under /etc was ever allowed.
			for _, rec := range auditRecords(t, audit) {
				if a, _ := json.Marshal(rec["args"]); rec["decision"] == "allow" && strings.Contains(string(a), "/etc/") {
					t.Errorf("the audit log allowed %v", rec)
				}
			}
		})
	}
}

// pathName is wire.JoinPath as the e2e test sees it: a name that reads as
// an identifier after a dot, else quoted in brackets.
func pathName(path, name string) string {
	for _, r := range name {
		if !(r == '_' || r == '$' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return fmt.Sprintf("%s[%q]", path, name)
		}
	}
	return path + "." + name
}

const undeclaredPolicy = `@id("read-any-outside-etc")
permit(principal, action == MCP::Action::"invokeTool", resource == MCP::Tool::"mcpgo/read_any")
  when { context.args has path && !(context.args.path like "/etc/*") };
`

// A tool that declares no properties cannot be protected by the argument
// check (docs/policy.md): its server reads {"PATH":...} as its field Path.
// What the docs advise instead works: under --policy-default deny, a
// permit that requires the exact member denies a call without it, and a
// call with both spellings is refused as a repetition. (This documents a
// limit and the way around it; it passes on the code before the fold
// check too.)
func TestFoldedNamesUndeclaredTool(t *testing.T) {
	s := startServe(t, fmt.Sprintf(`{"mcpgo": {"runCmd": %q}}`, mcpgoServer(t)),
		"--policy-file", writePolicy(t, undeclaredPolicy), "--policy-default", "deny")
	rs := newRawSession(t, s.gw)
	call := func(id int, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_any","arguments":%s}}`, id, args)
	}
	resp, body := rs.post(call(1, `{"path":"/tmp/ok"}`))
	var r rpcReply
	if resp.StatusCode != 200 || json.Unmarshal(body, &r) != nil || r.Result == nil || len(r.Result.Content) == 0 || r.Result.Content[0].Text != "read /tmp/ok" {
		t.Errorf("an allowed call: %s %s", resp.Status, body)
	}
	resp, body = rs.post(call(2, `{"path":"/etc/passwd"}`))
	wantDenied(t, "a forbidden path", resp, body, "denied")
	resp, body = rs.post(call(3, `{"PATH":"/etc/passwd"}`))
	wantDenied(t, "the path spelled PATH", resp, body, "denied")
	resp, body = rs.post(call(4, `{"path":"/tmp/ok","PATH":"/etc/passwd"}`))
	wantRPCError(t, "both spellings", resp, body, 400, -32600, "params.arguments.PATH", "but for case")
}
