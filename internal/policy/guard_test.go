package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

func TestQueue(t *testing.T) {
	var answers []string
	q := &Queue{OnAnswer: func(a *ApprovalRequest, outcome, by string) { answers = append(answers, a.Name+":"+outcome+":"+by) }}
	for _, allow := range []bool{true, false} {
		got := make(chan bool, 1)
		go func() {
			ok, _, _ := q.Ask(context.Background(), &ApprovalRequest{Name: "t", Reason: "r"})
			got <- ok
		}()
		var id string
		for id == "" {
			if l := q.List(); len(l) == 1 {
				id = l[0].ID
			}
			time.Sleep(time.Millisecond)
		}
		if err := q.Answer(id, allow, "me"); err != nil {
			t.Fatal(err)
		}
		if <-got != allow {
			t.Fatalf("answered %v, the call got the other", allow)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, _, err := q.Ask(ctx, &ApprovalRequest{Name: "late"}); ok || err == nil {
		t.Fatal("an ended wait must deny")
	}
	if err := q.Answer("99", true, "me"); err == nil {
		t.Fatal("answering an unknown id must fail")
	}
	if strings.Join(answers, ",") != "t:granted:me,t:denied:me,late:cancelled:" {
		t.Fatalf("answers %v", answers)
	}
}

func TestGuardAudit(t *testing.T) {
	set, err := Parse(DefaultPermit, Source{Name: "p.cedar", Text: []byte(`@id("no-rm") forbid(principal, action, resource == MCP::Tool::"fs/rm");
@id("ask") @requireApproval("check it") permit(principal, action, resource == MCP::Tool::"fs/write");`)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Engine: NewEngine(set), Principal: "default", Audit: l, ApprovalTimeout: time.Second}
	call := func(name string, elicit func(context.Context, json.RawMessage) (json.RawMessage, error)) string {
		c := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardTool, Server: "fs", Name: name}, Method: "tools/call",
			Arguments: json.RawMessage(`{"path":"/tmp/x","token":"hunter2"}`), Elicit: elicit}
		done, werr := g.Admit(context.Background(), c)
		if werr != nil {
			return werr.Message
		}
		done(gateway.Reply{Result: json.RawMessage(`{"content":[],"isError":true}`)})
		return "ok"
	}
	if got := call("rm", nil); !strings.Contains(got, `forbidden by policy "no-rm" (p.cedar:1:1)`) {
		t.Errorf("rm: %s", got)
	}
	if got := call("write", nil); !strings.Contains(got, "cannot be asked") {
		t.Errorf("write without elicitation: %s", got)
	}
	approve := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"approve":true}}`), nil
	}
	if got := call("write", approve); got != "ok" {
		t.Errorf("approved write: %s", got)
	}
	never := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if got := call("write", never); !strings.Contains(got, "nobody answered within 1s") {
		t.Errorf("unanswered write: %s", got)
	}
	if got := call("read", nil); got != "ok" {
		t.Errorf("read: %s", got)
	}
	l.Close()
	res, err := audit.Verify(path)
	if err != nil || len(res.Problems) > 0 || res.Records != 5 {
		t.Fatalf("%d records, %v %v", res.Records, res.Problems, err)
	}
	b, _ := readFile(path)
	for _, want := range []string{`"outcome":"denied"`, `"approval":"granted"`, `"approval":"timeout"`, `"outcome":"tool_error"`, `"argsSha256":"`} {
		if !strings.Contains(b, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(b, "hunter2") {
		t.Error("arguments in full without --audit-arguments")
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestServerFromConfig: what a policy sees of a configured server,
// requiresOAuth included.
func TestServerFromConfig(t *testing.T) {
	for _, tc := range []struct {
		in   mcpconfig.Server
		want Server
	}{
		{mcpconfig.Server{Name: "fs", Command: []string{"npx", "-y", "fs"}}, Server{Name: "fs", Type: "local-stdio", Command: "npx", Args: []string{"-y", "fs"}}},
		{mcpconfig.Server{Name: "r", Kind: mcpconfig.KindRemote, URL: "https://r.example/mcp"}, Server{Name: "r", Type: "remote", IdentityURL: "https://r.example/mcp"}},
		{mcpconfig.Server{Name: "o", Kind: mcpconfig.KindRemote, URL: "https://o.example/mcp", Transport: "http", OAuth: &mcpconfig.OAuth{ClientID: "c"}}, Server{Name: "o", Type: "remote-http", IdentityURL: "https://o.example/mcp", RequiresOAuth: true}},
	} {
		if got := ServerFromConfig(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.in.Name, got, tc.want)
		}
	}
}

// A completion or subscription (Refers) is decided like the use of its
// item: denied by the same forbid (an argument rule seeing the arguments
// known so far), and refused, nobody asked, when the use needs approval.
func TestGuardReferences(t *testing.T) {
	set, err := Parse(DefaultPermit, Source{Name: "p.cedar", Text: []byte(`@id("no-secret") forbid(principal, action == MCP::Action::"getPrompt", resource == MCP::Prompt::"s/greet")
  when { context.args has who && context.args.who like "secret*" };
@id("no-tmpl") forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"file:///{path}");
@id("ask") @requireApproval("check it") permit(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"mem://x");`)})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Engine: NewEngine(set), Principal: "default"}
	asked := false
	elicit := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		asked = true
		return json.RawMessage(`{"action":"accept","content":{"approve":true}}`), nil
	}
	for _, tc := range []struct {
		method string
		item   gateway.GuardItem
		args   string
		want   string // "" allowed, else in the error
	}{
		{"completion/complete", gateway.GuardItem{Kind: gateway.GuardPrompt, Server: "s", Name: "greet"}, `{"who":"secret-x"}`, `forbidden by policy "no-secret"`},
		{"completion/complete", gateway.GuardItem{Kind: gateway.GuardPrompt, Server: "s", Name: "greet"}, `{"who":"secr"}`, ""}, // its values are filtered (Permits)
		{"completion/complete", gateway.GuardItem{Kind: gateway.GuardPrompt, Server: "s", Name: "greet"}, `{"who":"bo"}`, ""},
		{"completion/complete", gateway.GuardItem{Kind: gateway.GuardTemplate, Server: "s", Name: "file:///{path}"}, `{"path":"a"}`, `completion/complete of file:///{path} is denied: forbidden by policy "no-tmpl"`},
		{"resources/subscribe", gateway.GuardItem{Kind: gateway.GuardResource, Server: "s", Name: "mem://x"}, ``, `nobody is asked to approve a resources/subscribe`},
		{"resources/subscribe", gateway.GuardItem{Kind: gateway.GuardResource, Server: "s", Name: "mem://y"}, ``, ""},
	} {
		c := &gateway.GuardCall{GuardItem: tc.item, Method: tc.method, Refers: true, Elicit: elicit}
		if tc.args != "" {
			c.Arguments = json.RawMessage(tc.args)
		}
		_, werr := g.Admit(context.Background(), c)
		switch {
		case tc.want == "" && werr != nil:
			t.Errorf("%s %s %s: %s", tc.method, tc.item.Name, tc.args, werr.Message)
		case tc.want != "" && (werr == nil || !strings.Contains(werr.Message, tc.want)):
			t.Errorf("%s %s %s: %v, want %q", tc.method, tc.item.Name, tc.args, werr, tc.want)
		}
	}
	if asked {
		t.Error("a person was asked to approve a subscription")
	}
	for args, want := range map[string]bool{`{"who":"secret-plan"}`: false, `{"who":"bob"}`: true} {
		if got := g.Permits(&gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardPrompt, Server: "s", Name: "greet"}, Arguments: json.RawMessage(args)}); got != want {
			t.Errorf("Permits %s: %v", args, got)
		}
	}
	if g.Permits(&gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Server: "s", Name: "mem://x"}}) {
		t.Error("Permits of a use needing approval")
	}
}

type counts map[string]int

func (c counts) Count(action, result string) { c[action+" "+result]++ }

// Each decision is counted by action and result: permit, deny, and the
// three outcomes of an approval; with no policy loaded, nothing.
func TestGuardCountsDecisions(t *testing.T) {
	set, err := Parse(DefaultPermit, Source{Name: "p.cedar", Text: []byte(`@id("no-rm") forbid(principal, action, resource == MCP::Tool::"fs/rm");
@id("ask") @requireApproval("check it") permit(principal, action, resource == MCP::Tool::"fs/write");`)})
	if err != nil {
		t.Fatal(err)
	}
	c := counts{}
	g := &Guard{Engine: NewEngine(set), Principal: "default", ApprovalTimeout: 50 * time.Millisecond, Decisions: c}
	answer := func(reply string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if reply == "" {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return json.RawMessage(reply), nil
		}
	}
	for _, tc := range []struct {
		kind, name string
		elicit     func(context.Context, json.RawMessage) (json.RawMessage, error)
		refers     bool
	}{
		{gateway.GuardTool, "rm", nil, false},
		{gateway.GuardTool, "read", nil, false},
		{gateway.GuardPrompt, "p", nil, false},
		{gateway.GuardTool, "write", answer(`{"action":"accept","content":{"approve":true}}`), false},
		{gateway.GuardTool, "write", answer(`{"action":"decline"}`), false},
		{gateway.GuardTool, "write", nil, false}, // nobody can be asked
		{gateway.GuardTool, "write", answer(""), false},
		{gateway.GuardTool, "write", nil, true}, // a reference to it is not asked for
	} {
		_, _ = g.Admit(context.Background(), &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: tc.kind, Server: "fs", Name: tc.name},
			Method: "tools/call", Elicit: tc.elicit, Refers: tc.refers})
	}
	want := counts{"invokeTool deny": 2, "invokeTool permit": 1, "getPrompt permit": 1, "invokeTool approval_granted": 1,
		"invokeTool approval_denied": 2, "invokeTool approval_timeout": 1}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("counted %v, want %v", c, want)
	}
	none := counts{}
	g = &Guard{Engine: NewEngine(nil), Principal: "default", Decisions: none, Audit: nil}
	_, _ = g.Admit(context.Background(), &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardTool, Server: "fs", Name: "x"}})
	if len(none) != 0 {
		t.Errorf("counted %v with no policy", none)
	}
}

// A forbid of a resource template refuses a read of a URI made from it:
// the template is hidden from resources/templates/list, and the URI (not
// listed itself) must not be readable by filling the template in.
func TestGuardTemplateForbidsItsURIs(t *testing.T) {
	set, err := Parse(DefaultPermit, Source{Name: "p.cedar", Text: []byte(`@id("no-secrets")
forbid(principal, action == MCP::Action::"readResource", resource == MCP::Resource::"file:///secret/{name}");`)})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Engine: NewEngine(set), Principal: "default"}
	for _, c := range []struct {
		template string
		denied   bool
	}{
		{"file:///secret/{name}", true},
		{"file:///public/{name}", false},
		{"", false},
	} {
		call := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardResource, Server: "fs", Name: "file:///secret/key", Template: c.template}, Method: "resources/read"}
		_, werr := g.Admit(context.Background(), call)
		if (werr != nil) != c.denied || (werr != nil && !strings.Contains(werr.Message, `"no-secrets"`)) {
			t.Errorf("read through template %q: %v, want denied %v", c.template, werr, c.denied)
		}
		if g.Permits(call) == c.denied {
			t.Errorf("Permits through template %q = %v", c.template, !c.denied)
		}
	}
}

// The arguments a person approves are shown as one compact line with
// every character that does not print escaped: whitespace between tokens
// must not push a part out of sight or fake another line of `approval ls`,
// and a bidirectional override must not reorder what is read.
func TestApprovalShowsArgumentsPlainly(t *testing.T) {
	args := json.RawMessage("{\"path\":\"/tmp/ok\"" + strings.Repeat("\n", 50) + ",\n\"then\":\"8 2026-01-01T00:00:00Z ci tools/call fs/read {} harmless\",\"x\":\"\u202egnp.exe\"}")
	a := ApprovalRequest{ID: "7", Principal: "ci", Method: "tools/call", Server: "fs", Name: "write", Arguments: args, Reason: "r"}
	got := a.Describe()
	if strings.ContainsAny(got, "\n\u202e") || strings.Count(got, "\t") != 6 {
		t.Errorf("approval ls line %q: it must be one line of 7 fields, the override escaped", got)
	}
	if !strings.Contains(got, `{"path":"/tmp/ok","then":"8 2026`) || !strings.Contains(got, `\u202egnp.exe`) {
		t.Errorf("approval ls line %q does not show the arguments", got)
	}
	var asked string
	_, _ = elicit(context.Background(), func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		asked, _ = wireString(p, "message")
		return nil, context.Canceled
	}, &a, "fs/write")
	if strings.ContainsRune(asked, '\u202e') || strings.Count(asked, "\n") != 2 {
		t.Errorf("elicitation message %q", asked)
	}
}

func wireString(p json.RawMessage, key string) (string, bool) {
	var m map[string]any
	if json.Unmarshal(p, &m) != nil {
		return "", false
	}
	s, ok := m[key].(string)
	return s, ok
}

// The client's name in a record is bounded: a client choosing a name of
// megabytes must not make each of its calls' records that long (and so
// rotate the older records out of the log in a few calls).
func TestGuardAuditBoundsClientName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Engine: NewEngine(nil), Principal: "default", Audit: l}
	info, _ := json.Marshal(map[string]string{"name": strings.Repeat("é", 1<<20), "version": "1"})
	done, werr := g.Admit(context.Background(), &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardTool, Server: "fs", Name: "read"},
		Method: "tools/call", Arguments: json.RawMessage(`{}`), ClientInfo: info})
	if werr != nil {
		t.Fatal(werr)
	}
	done(gateway.Reply{Result: json.RawMessage(`{"content":[]}`)})
	l.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2048 {
		t.Fatalf("one call's record is %d bytes long", len(b))
	}
	var rec audit.Record
	if err := json.Unmarshal(b, &rec); err != nil || !strings.HasPrefix(rec.Client, "éé") || !strings.HasSuffix(rec.Client, "…") {
		t.Fatalf("client %q (%v)", rec.Client, err)
	}
}

// One principal's calls waiting for approval are bounded: past the limit
// its calls are denied at once, and another principal's still queue.
func TestQueueBoundsAPrincipal(t *testing.T) {
	q := &Queue{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < MaxPendingPerPrincipal; i++ {
		go q.Ask(ctx, &ApprovalRequest{Principal: "noisy", Name: "t"}) //nolint:errcheck // ends with cancel
	}
	for len(q.List()) < MaxPendingPerPrincipal {
		time.Sleep(time.Millisecond)
	}
	ended, end := context.WithCancel(context.Background())
	end() // refused before waiting: a wait would end at once with ctx's error instead
	if ok, _, err := q.Ask(ended, &ApprovalRequest{Principal: "noisy", Name: "t"}); ok || err == nil || !strings.Contains(err.Error(), "already wait") {
		t.Fatalf("one call past the limit: %v %v, want refused at once", ok, err)
	}
	got := make(chan bool, 1)
	go func() {
		ok, _, _ := q.Ask(ctx, &ApprovalRequest{Principal: "quiet", Name: "t"})
		got <- ok
	}()
	var id string
	for id == "" {
		for _, a := range q.List() {
			if a.Principal == "quiet" {
				id = a.ID
			}
		}
		time.Sleep(time.Millisecond)
	}
	if err := q.Answer(id, true, "me"); err != nil || !<-got {
		t.Fatalf("another principal's call: %v", err)
	}
}

// A denial goes to the agent: it names a policy by its @id, or by the
// file's base name and line, never by the host's path to the file; an
// error in the file is the operator's and names the whole path.
func TestDenialNamesNoPath(t *testing.T) {
	const file = "/srv/corp-secrets/policies/rules.cedar"
	set, err := Parse(DefaultPermit, Source{Name: file, Text: []byte(`@id("no-rm") forbid(principal, action, resource == MCP::Tool::"fs/rm");
forbid(principal, action, resource == MCP::Tool::"fs/mv");`)})
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Engine: NewEngine(set), Principal: "default"}
	for name, want := range map[string]string{
		"rm": `tools/call of fs/rm is denied: forbidden by policy "no-rm" (rules.cedar:1:1)`,
		"mv": `tools/call of fs/mv is denied: forbidden by policy "rules.cedar:2"`,
	} {
		c := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardTool, Server: "fs", Name: name}, Method: "tools/call"}
		_, werr := g.Admit(context.Background(), c)
		if werr == nil || werr.Code != CodeDenied || !strings.HasSuffix(werr.Message, want) {
			t.Fatalf("%s: %v, want code %d and %q", name, werr, CodeDenied, want)
		}
		if b := werr.Marshal(); strings.Contains(string(b), "/srv") || strings.Contains(string(b), "corp-secrets") {
			t.Errorf("%s: the denial names the policy file's path: %s", name, b)
		}
	}
	_, err = Parse(DefaultPermit, Source{Name: file, Text: []byte(`forbid(principal, action == MCP::Action::"nope", resource);`)})
	if err == nil || !strings.Contains(err.Error(), file+":1:1") {
		t.Errorf("a policy error must name the whole path: %v", err)
	}
}

// CodeDenied is none of the codes the major SDKs give a meaning of their
// own (see its doc comment), and within the implementations' range.
func TestCodeDeniedIsNoSDKsOwn(t *testing.T) {
	reserved := map[int64]string{
		-32000: "TypeScript and Python SDKs: connection closed",
		-32001: "TypeScript and Python SDKs: request timeout; Go SDK: unknown error",
		-32002: "MCP: resource not found (before 2026-07-28)",
		-32003: "Go SDK: client is closing (read as ErrConnectionClosed)",
		-32004: "Go SDK: server is closing (read as ErrConnectionClosed)",
		-32005: "Go SDK: rejected by transport",
	}
	if why, ok := reserved[CodeDenied]; ok {
		t.Fatalf("CodeDenied %d is taken: %s", CodeDenied, why)
	}
	if CodeDenied > -32000 || CodeDenied < -32019 {
		t.Fatalf("CodeDenied %d is outside -32019..-32000, the range MCP leaves to implementations", CodeDenied)
	}
}
