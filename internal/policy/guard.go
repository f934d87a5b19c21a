package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// CodeDenied is the JSON-RPC error code of a call a policy refused (or
// that was not approved). It lies in the range MCP leaves to
// implementations (-32000 to -32019) and is one no major SDK gives a
// meaning of its own: the Go SDK's client reads -32003 and -32004 as a
// closed connection, the TypeScript and Python SDKs use -32000 (connection
// closed) and -32001 (request timeout), -32002 was "resource not found",
// and -32020 to -32099 are the specification's (docs/policy.md, "Refusals").
// A refused tools/call reaches the client as an isError result carrying
// this code in its _meta (see gateway.DeniedMeta).
const CodeDenied = -32010

// DefaultApprovalTimeout is how long a call waits for a person's approval.
const DefaultApprovalTimeout = 5 * time.Minute

// Guard is the gateway's Guard for one principal: it filters lists and
// decides calls with the engine's policies, asks for approval, and writes
// the audit log.
type Guard struct {
	Engine *Engine
	// Principal names who calls: the sandbox (Sandbox true) or the client.
	Principal string
	Sandbox   bool
	// Servers describes a server by name for the policies; nil: its name only.
	Servers func(name string) Server
	// Audit receives a record per call; nil: none.
	Audit *audit.Log
	// Approvals is the queue a call needing approval waits in when its
	// client cannot be asked by elicitation; nil: such a call is denied.
	Approvals Approver
	// ApprovalTimeout bounds the wait for an answer; 0: 5 minutes.
	ApprovalTimeout time.Duration
	Logger          *slog.Logger
	// Decisions counts each decision by action and result (the metric
	// mcp_gateway_policy_decisions_total); nil: not counted.
	Decisions DecisionCounter
}

// DecisionCounter counts policy decisions: action is the schema's, result
// one of ResultPermit, ResultDeny, ResultApprovalGranted,
// ResultApprovalDenied, ResultApprovalTimeout.
type DecisionCounter interface {
	Count(action, result string)
}

// Results of a decision, as counted.
const (
	ResultPermit          = "permit"
	ResultDeny            = "deny"
	ResultApprovalGranted = "approval_granted"
	ResultApprovalDenied  = "approval_denied"
	ResultApprovalTimeout = "approval_timeout"
)

// count counts a decision when policies are loaded (without them nothing
// is decided).
func (g *Guard) count(set *Set, action, result string) {
	if g.Decisions != nil && set != nil {
		g.Decisions.Count(action, result)
	}
}

var _ gateway.Guard = (*Guard)(nil)

// MayAsk reports whether a call may need approval: some permit has
// @requireApproval.
func (g *Guard) MayAsk() bool {
	set := g.Engine.Current()
	return set != nil && set.approval
}

// Version changes whenever the policies change.
func (g *Guard) Version() uint64 { return g.Engine.Version() }

func (g *Guard) server(name string) Server {
	if g.Servers != nil && name != "" {
		if s := g.Servers(name); s.Name != "" {
			return s
		}
	}
	return Server{Name: name}
}

// request makes the policy request of an item.
func (g *Guard) request(it gateway.GuardItem) *Request {
	r := &Request{Principal: g.Principal, Sandbox: g.Sandbox, Server: g.server(it.Server), Name: it.Name}
	switch it.Kind {
	case gateway.GuardTool:
		r.Action, r.Kind = ActionInvokeTool, TypeTool
		r.Annotations = ParseAnnotations(it.Def)
	case gateway.GuardPrompt:
		r.Action, r.Kind = ActionGetPrompt, TypePrompt
	case gateway.GuardBuiltin:
		r.Action, r.Kind = ActionInvokePrimordial, TypePrimordial
	default:
		r.Action, r.Kind = ActionReadResource, TypeResource
	}
	return r
}

// Visible reports whether the item is listed.
func (g *Guard) Visible(it gateway.GuardItem) bool {
	set := g.Engine.Current()
	if set == nil {
		return true
	}
	return set.Visible(g.request(it))
}

// Permits decides a request quietly (no audit record, nobody asked): a
// use of the item with these arguments would be allowed without approval.
// The gateway uses it to drop from a completion the values the client
// could not use.
func (g *Guard) Permits(c *gateway.GuardCall) bool {
	set := g.Engine.Current()
	if set == nil {
		return true
	}
	req := g.request(c.GuardItem)
	req.Args, req.Time = c.Arguments, time.Now()
	if req.Args == nil {
		req.Args = json.RawMessage(`{}`)
	}
	d := g.decide(set, req, c.GuardItem)
	return d.Allow && d.Approval == ""
}

// decide decides a request; a resource read through a template is held
// by the template's policies too: refused by its forbid, or asked for
// approval by its permit's @requireApproval, whatever its URI's decision.
func (g *Guard) decide(set *Set, req *Request, it gateway.GuardItem) Decision {
	d := set.Decide(req)
	if d.Allow && it.Template != "" && set != nil {
		t := *req
		t.Name = it.Template
		switch td := set.Decide(&t); {
		case !td.Allow && !td.Default:
			return td
		case td.Allow && td.Approval != "" && d.Approval == "":
			return td
		}
	}
	return d
}

// Admit decides a call: refused with an error naming the policy, held for
// approval, or let through; every outcome is audited.
func (g *Guard) Admit(ctx context.Context, c *gateway.GuardCall) (func(gateway.Reply), *wire.Error) {
	set := g.Engine.Current()
	if set == nil && g.Audit == nil {
		return nil, nil
	}
	began := time.Now()
	req := g.request(c.GuardItem)
	args := c.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	req.Args, req.Time = args, began
	d := g.decide(set, req, c.GuardItem)
	var rec *audit.Record // nil when not audited: a decision builds no record for nothing
	if g.Audit != nil {
		rec = g.record(c, req, set, d)
	}
	for _, e := range d.Errors {
		g.logger().Warn("a policy could not be evaluated and was skipped", "err", e, "server", c.Server, "name", c.Name)
	}
	if !d.Allow {
		g.count(set, req.Action, ResultDeny)
		g.writeDenied(rec, "")
		return nil, denied(c.Method, subjectOf(c), d.Reason(), d)
	}
	if d.Approval != "" && c.Refers {
		g.count(set, req.Action, ResultDeny)
		// A completion or subscription is not worth a person's time, and
		// must not tell what only an approved use would.
		why := "nobody is asked to approve a " + c.Method + "; only a use of it (" + useOf(c.Kind) + ") may be approved"
		g.writeDenied(rec, why)
		return nil, denied(c.Method, subjectOf(c), d.Reason()+"; "+why, d)
	}
	if d.Approval != "" {
		outcome, by, why := g.approve(ctx, c, subjectOf(c), d)
		if rec != nil {
			rec.Approval, rec.ApprovedBy = outcome, by
		}
		g.count(set, req.Action, "approval_"+outcome)
		if outcome != "granted" {
			g.writeDenied(rec, why)
			return nil, denied(c.Method, subjectOf(c), d.Reason()+"; "+why, d)
		}
	} else {
		g.count(set, req.Action, ResultPermit)
	}
	if g.Audit == nil {
		return nil, nil
	}
	return func(reply gateway.Reply) {
		ms := float64(time.Since(began).Microseconds()) / 1000
		rec.DurationMS = &ms
		rec.Outcome, rec.ErrorClass = outcome(reply)
		g.write(rec)
	}, nil
}

// useOf names the method that uses an item of a kind.
func useOf(kind string) string {
	switch kind {
	case gateway.GuardTool, gateway.GuardBuiltin:
		return "tools/call"
	case gateway.GuardPrompt:
		return "prompts/get"
	}
	return "resources/read"
}

// record is the audit record of a decided call.
func (g *Guard) record(c *gateway.GuardCall, req *Request, set *Set, d Decision) *audit.Record {
	rec := &audit.Record{Type: "call", Principal: g.Principal, Client: clientName(c.ClientInfo), Action: req.Action,
		Method: c.Method, Server: c.Server, Name: c.Name, Policies: d.Policies, Run: c.Run}
	if set != nil {
		rec.Decision = "deny"
		if d.Allow {
			rec.Decision = "allow"
		}
	}
	if c.Arguments != nil {
		if g.Audit.Arguments() {
			rec.Args = c.Arguments
		} else {
			rec.ArgsSHA256 = audit.HashArguments(c.Arguments)
		}
	}
	return rec
}

// writeDenied writes the record of a refused call (nil: not audited).
func (g *Guard) writeDenied(rec *audit.Record, why string) {
	if rec == nil {
		return
	}
	rec.Decision, rec.Outcome = "deny", "denied"
	if why != "" {
		rec.Detail = why
	}
	g.write(rec)
}

// subjectOf names a call's item in messages: server/name, or a resource's URI.
func subjectOf(c *gateway.GuardCall) string {
	if c.Server != "" && c.Kind != gateway.GuardResource && c.Kind != gateway.GuardTemplate {
		return c.Server + "/" + c.Name
	}
	return c.Name
}

func denied(method, subject, why string, d Decision) *wire.Error {
	data, _ := json.Marshal(map[string]any{"policies": d.Policies, "where": d.Where})
	return &wire.Error{Code: CodeDenied, Message: fmt.Sprintf("mcp-gateway policy: %s of %s is denied: %s", method, subject, why), Data: data}
}

func (g *Guard) write(rec *audit.Record) {
	if err := g.Audit.Write(rec); err != nil {
		g.logger().Error("writing the audit log failed", "err", err)
	}
}

func (g *Guard) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// outcome classifies a reply for the audit log.
func outcome(r gateway.Reply) (string, string) {
	if r.Error != nil {
		return "error", fmt.Sprintf("jsonrpc %s", wire.Get(r.Error, "code"))
	}
	if string(wire.Get(r.Result, "isError")) == "true" {
		return "tool_error", ""
	}
	return "ok", ""
}

// maxClientName bounds the client's name/version in a record: it is the
// client's to choose, and a record per call carrying megabytes of it would
// rotate the older records out of the audit log (--audit-max-bytes) within
// a few calls.
const maxClientName = 256

func clientName(info json.RawMessage) string {
	name, _ := wire.GetString(info, "name")
	if v, _ := wire.GetString(info, "version"); v != "" {
		name += "/" + v
	}
	if len(name) > maxClientName {
		name = strings.ToValidUTF8(name[:maxClientName], "") + "…"
	}
	return name
}

// approve asks a person: the client by form elicitation when it can be
// asked, else the approval queue. It returns "granted", "denied" or
// "timeout", who answered, and why a call was not approved.
func (g *Guard) approve(ctx context.Context, c *gateway.GuardCall, subject string, d Decision) (outcome, by, why string) {
	timeout := g.ApprovalTimeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	a := &ApprovalRequest{Principal: g.Principal, Server: c.Server, Name: c.Name, Method: c.Method,
		Arguments: args, Reason: d.Approval, Policies: d.Policies}
	var (
		ok  bool
		err error
	)
	switch {
	case c.Elicit != nil:
		by = "client"
		ok, err = elicit(ctx, c.Elicit, a, subject)
	case g.Approvals != nil:
		ok, by, err = g.Approvals.Ask(ctx, a)
	default:
		g.logger().Warn("a call needs approval but nobody can be asked: its client declared no elicitation and there is no approval queue", "call", subject)
		return "denied", "", "the client cannot be asked (it declared no elicitation capability) and only the host daemon has an approval queue"
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout", by, fmt.Sprintf("nobody answered within %s (--approval-timeout)", timeout)
	case err != nil:
		g.logger().Warn("asking for approval failed", "call", subject, "err", err)
		return "denied", by, "asking for approval failed: " + err.Error()
	case ok:
		return "granted", by, ""
	}
	return "denied", by, "approval was denied"
}

// elicit asks the client with a form elicitation.
func elicit(ctx context.Context, ask func(context.Context, json.RawMessage) (json.RawMessage, error), a *ApprovalRequest, subject string) (bool, error) {
	msg := fmt.Sprintf("Approve %s of %s?\nReason: %s\nArguments: %s", a.Method, subject, a.Reason, shownJSON(a.Arguments))
	params, _ := json.Marshal(map[string]any{
		"message": msg,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Let this call run"},
			},
			"required": []string{"approve"},
		},
	})
	res, err := ask(ctx, params)
	if err != nil {
		return false, err
	}
	action, _ := wire.GetString(res, "action")
	approve := string(wire.Get(wire.Get(res, "content"), "approve"))
	return action == "accept" && approve == "true", nil
}

// ServerFromConfig describes a configured server for the policies.
func ServerFromConfig(s mcpconfig.Server) Server {
	out := Server{Name: s.Name, Type: "local-stdio"}
	if s.Kind == mcpconfig.KindRemote {
		out.Type, out.IdentityURL, out.RequiresOAuth = "remote", s.URL, s.OAuth != nil
		if s.Transport != "" {
			out.Type = "remote-" + s.Transport
		}
		return out
	}
	if len(s.Command) > 0 {
		out.Command, out.Args = s.Command[0], s.Command[1:]
	}
	return out
}
