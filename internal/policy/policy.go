// Package policy decides, with Cedar policies (github.com/cedar-policy/cedar-go),
// what a gateway's client may see and call.
//
// The schema (see docs/policy.md): actions MCP::Action::"register",
// "invokeTool", "invokePrimordial", "readResource", "getPrompt"; the
// principal is the sandbox (MCP::Sandbox, host mode) or the gateway's client
// (MCP::Client::"default"); resources MCP::Server, MCP::Tool, MCP::Resource,
// MCP::Prompt and MCP::Primordial (the gateway's own tools), each tool,
// resource and prompt a member of its server; context request_time (a
// datetime) and args (the call's arguments as a record).
//
// Forbid wins over permit. When nothing matches, the default decides:
// permit (no policy is today's behaviour) or deny (--policy-default deny:
// forbid unless permitted). A matching permit annotated
// @requireApproval("reason") allows the call only once a person approves.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// Actions of the schema.
const (
	ActionRegister         = "register"
	ActionInvokeTool       = "invokeTool"
	ActionInvokePrimordial = "invokePrimordial"
	ActionReadResource     = "readResource"
	ActionGetPrompt        = "getPrompt"
)

// Entity types of the schema.
const (
	TypeAction     = cedar.EntityType("MCP::Action")
	TypeSandbox    = cedar.EntityType("MCP::Sandbox")
	TypeClient     = cedar.EntityType("MCP::Client")
	TypeServer     = cedar.EntityType("MCP::Server")
	TypeTool       = cedar.EntityType("MCP::Tool")
	TypeResource   = cedar.EntityType("MCP::Resource")
	TypePrompt     = cedar.EntityType("MCP::Prompt")
	TypePrimordial = cedar.EntityType("MCP::Primordial")
)

// Default is what is decided when no policy matches.
type Default string

const (
	DefaultPermit Default = "permit"
	DefaultDeny   Default = "deny"
)

// ParseDefault reads --policy-default.
func ParseDefault(s string) (Default, error) {
	switch Default(s) {
	case DefaultPermit, DefaultDeny:
		return Default(s), nil
	case "":
		return DefaultPermit, nil
	}
	return "", fmt.Errorf("--policy-default must be permit or deny, not %q", s)
}

// Source is one named document of policies: a file, or a policy stored by
// the host daemon.
type Source struct {
	// Name is the file's name. Errors give it whole; decisions, which
	// reach the agents, give positions (and the id of a policy without
	// @id) with its base name only: an agent learns nothing of the host's
	// paths.
	Name string
	Text []byte
}

// compiled is one policy with what decisions report of it.
type compiled struct {
	id       string // @id, else base:line (base: the file's base name)
	where    string // base:line:col, as decisions give it to agents
	at       string // file:line:col, as the operator's listings and errors give it
	forbid   bool
	approval string // @requireApproval's reason; "" when it has none
	approve  bool
}

// Set is an immutable, parsed set of policies.
type Set struct {
	byID     map[cedar.PolicyID]*compiled
	ids      []string // in source order
	def      Default
	approval bool // some permit asks for approval
	index    index
	cache    candidateCache
	statics  staticCache
}

// Len is the number of policies.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.ids)
}

// IDs are the policies' ids in source order.
func (s *Set) IDs() []string { return slices.Clone(s.ids) }

// cedar-go's syntax errors: the parser's (the position and text of the
// token it stopped at, then what it found wrong) and the scanner's.
var (
	parsePos   = regexp.MustCompile(`^parser error: parse error at <input>:(\d+):(\d+) ("(?:[^"\\]|\\.)*"): (.*)$`)
	parseExact = regexp.MustCompile(`^exact got (.*) want (.*)$`)
	scanPos    = regexp.MustCompile(`^parser error: <input>:(\d+):(\d+): (.*)$`)
)

// syntaxError rewrites cedar-go's syntax error msg about file name (its
// text) as "name:line:col: syntax error: ...", saying what was expected
// where it reads "exact got X want Y".
func syntaxError(name string, text []byte, msg string) string {
	if m := scanPos.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s:%s:%s: syntax error: %s", name, m[1], m[2], m[3])
	}
	m := parsePos.FindStringSubmatch(msg)
	if m == nil {
		return name + ": " + msg
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	near, _ := strconv.Unquote(m[3])
	e := parseExact.FindStringSubmatch(m[4])
	if e == nil {
		if near == "" {
			return fmt.Sprintf("%s:%d:%d: syntax error at the end of the file: %s", name, line, col, m[4])
		}
		return fmt.Sprintf("%s:%d:%d: syntax error at %q: %s", name, line, col, near, m[4])
	}
	got, want := e[1], e[2]
	if got == "" {
		return fmt.Sprintf("%s:%d:%d: syntax error: expected %q, but the file ends (a policy ends with ';')", name, line, col, want)
	}
	// The parser reports the token after the one it refused: point at
	// that one.
	line, col = tokenBefore(text, line, col, got)
	return fmt.Sprintf("%s:%d:%d: syntax error: expected %q, found %q", name, line, col, want, got)
}

// tokenBefore returns the line and column of tok when it is the text just
// before line:col (spaces between), else line:col unchanged.
func tokenBefore(text []byte, line, col int, tok string) (int, int) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			return line, col
		}
		off += i + 1
	}
	off += col - 1
	if off > len(text) {
		return line, col
	}
	before := bytes.TrimRight(text[:off], " \t\r\n")
	if !bytes.HasSuffix(before, []byte(tok)) {
		return line, col
	}
	start := len(before) - len(tok)
	l := 1 + bytes.Count(text[:start], []byte("\n"))
	return l, start - (bytes.LastIndexByte(text[:start], '\n') + 1) + 1
}

// Parse parses and checks sources into a Set. An error names the file,
// line and column of every problem found.
func Parse(def Default, sources ...Source) (*Set, error) {
	if def == "" {
		def = DefaultPermit
	}
	s := &Set{byID: map[cedar.PolicyID]*compiled{}, def: def, index: newIndex()}
	var errs []error
	where := map[string]string{}
	for _, src := range sources {
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			errs = append(errs, errors.New(syntaxError(src.Name, src.Text, err.Error())))
			continue
		}
		base := filepath.Base(src.Name)
		for _, p := range list {
			pos := p.Position()
			at := fmt.Sprintf("%s:%d:%d", src.Name, pos.Line, pos.Column)
			c := &compiled{
				where:  fmt.Sprintf("%s:%d:%d", base, pos.Line, pos.Column),
				at:     at,
				forbid: p.Effect() == cedar.Forbid,
			}
			ann := p.Annotations()
			c.id = string(ann["id"])
			if c.id == "" {
				c.id = fmt.Sprintf("%s:%d", base, pos.Line)
			}
			if reason, ok := ann["requireApproval"]; ok {
				if c.forbid {
					errs = append(errs, fmt.Errorf("%s: @requireApproval belongs on a permit, not a forbid", at))
					continue
				}
				c.approve, c.approval = true, string(reason)
				if c.approval == "" {
					c.approval = "this call needs a person's approval"
				}
				s.approval = true
			}
			if err := checkScope(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", at, err))
				continue
			}
			if prev, dup := where[c.id]; dup {
				errs = append(errs, fmt.Errorf("%s: policy id %q is already used at %s", at, c.id, prev))
				continue
			}
			where[c.id] = at
			s.byID[cedar.PolicyID(c.id)] = c
			s.index.add(cedar.PolicyID(c.id), p)
			s.ids = append(s.ids, c.id)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// knownTypes are the entity types a policy's scope may name.
var knownTypes = map[cedar.EntityType]bool{TypeAction: true, TypeSandbox: true, TypeClient: true, TypeServer: true,
	TypeTool: true, TypeResource: true, TypePrompt: true, TypePrimordial: true}

var knownActions = map[string]bool{ActionRegister: true, ActionInvokeTool: true, ActionInvokePrimordial: true,
	ActionReadResource: true, ActionGetPrompt: true}

// checkScope refuses a scope naming an entity type or action the schema
// lacks: such a policy could never match, which is almost always a typo.
func checkScope(p *cedar.Policy) error {
	a := (*xast.Policy)(p.AST())
	var uids []cedar.EntityUID
	var typs []cedar.EntityType
	for _, n := range []any{a.Principal, a.Action, a.Resource} {
		switch n := n.(type) {
		case xast.ScopeTypeEq:
			uids = append(uids, n.Entity)
		case xast.ScopeTypeIn:
			uids = append(uids, n.Entity)
		case xast.ScopeTypeInSet:
			uids = append(uids, n.Entities...)
		case xast.ScopeTypeIs:
			typs = append(typs, n.Type)
		case xast.ScopeTypeIsIn:
			typs = append(typs, n.Type)
			uids = append(uids, n.Entity)
		}
	}
	for _, u := range uids {
		typs = append(typs, u.Type)
		if u.Type == TypeAction && !knownActions[string(u.ID)] {
			return fmt.Errorf("unknown action %q (known: register, invokeTool, invokePrimordial, readResource, getPrompt)", string(u.ID))
		}
	}
	for _, t := range typs {
		if !knownTypes[t] {
			return fmt.Errorf("unknown entity type %s in the policy's scope (known: MCP::Action, MCP::Sandbox, MCP::Client, MCP::Server, MCP::Tool, MCP::Resource, MCP::Prompt, MCP::Primordial)", t)
		}
	}
	return nil
}

// Policy describes one policy of a set, for the operator's listings.
type Policy struct {
	ID       string `json:"id"`
	Where    string `json:"where"` // the file as given: file:line:col
	Effect   string `json:"effect"`
	Approval string `json:"requireApproval,omitempty"`
}

// Policies describes the set's policies in source order.
func (s *Set) Policies() []Policy {
	if s == nil {
		return nil
	}
	out := make([]Policy, 0, len(s.ids))
	for _, id := range s.ids {
		c := s.byID[cedar.PolicyID(id)]
		eff := "permit"
		if c.forbid {
			eff = "forbid"
		}
		out = append(out, Policy{ID: c.id, Where: c.at, Effect: eff, Approval: c.approval})
	}
	return out
}

// Engine holds the current policy set; it is replaced whole and read
// without a lock on every decision.
type Engine struct {
	set     atomic.Pointer[Set]
	version atomic.Uint64
	mu      sync.Mutex
	watch   []func()
}

// NewEngine returns an engine deciding with set (nil: no policy, every
// request permitted).
func NewEngine(set *Set) *Engine {
	e := &Engine{}
	e.set.Store(set)
	e.version.Store(1)
	return e
}

// Current returns the current set (nil when there is none).
func (e *Engine) Current() *Set { return e.set.Load() }

// Replace makes set the current one and tells the watchers.
func (e *Engine) Replace(set *Set) {
	e.set.Store(set)
	e.version.Add(1)
	e.mu.Lock()
	watch := slices.Clone(e.watch)
	e.mu.Unlock()
	for _, f := range watch {
		f()
	}
}

// Version changes each time the set is replaced.
func (e *Engine) Version() uint64 { return e.version.Load() }

// OnChange calls f after each Replace.
func (e *Engine) OnChange(f func()) {
	e.mu.Lock()
	e.watch = append(e.watch, f)
	e.mu.Unlock()
}

// Active reports whether decisions can deny anything.
func (e *Engine) Active() bool { return e.set.Load() != nil }

// Decision is the outcome of one request.
type Decision struct {
	Allow bool
	// Policies are the ids of the policies that decided: the matching
	// forbids of a denial, the matching permits of an allowance; empty when
	// the default decided.
	Policies []string
	// Where are the positions (file:line:col) of Policies.
	Where []string
	// Approval is the reason of a matching permit's @requireApproval: the
	// call is allowed once a person approves.
	Approval string
	// Default is set when no policy matched and the default decided.
	Default bool
	// Errors are the policies that could not be evaluated (an attribute
	// they read is absent), which Cedar skips.
	Errors []string
}

// Reason says in a sentence why the request was denied or needs approval.
func (d Decision) Reason() string {
	switch {
	case !d.Allow && d.Default:
		return "no policy permits it (the policy default is deny)"
	case !d.Allow:
		return "forbidden by policy " + d.named()
	case d.Approval != "":
		return "policy " + d.named() + " requires approval: " + d.Approval
	}
	return "permitted"
}

func (d Decision) named() string {
	parts := make([]string, len(d.Policies))
	for i, id := range d.Policies {
		parts[i] = strconv.Quote(id)
		if i < len(d.Where) && d.Where[i] != id && !strings.HasPrefix(d.Where[i], id+":") {
			parts[i] += " (" + d.Where[i] + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// Decide evaluates a request against the current set.
func (e *Engine) Decide(r *Request) Decision {
	return e.set.Load().Decide(r)
}

// Decide evaluates a request: forbid wins; else a permit allows (asking
// for approval when it says so); else the default decides.
func (s *Set) Decide(r *Request) Decision {
	if s == nil {
		return Decision{Allow: true, Default: true}
	}
	ok, diag := s.authorize(r)
	d := Decision{Allow: bool(ok)}
	for _, e := range diag.Errors {
		d.Errors = append(d.Errors, fmt.Sprintf("%s: %s", e.PolicyID, e.Message))
	}
	if n := len(diag.Reasons); n > 0 { // one allocation for both
		buf := make([]string, 2*n)
		d.Policies, d.Where = buf[:0:n], buf[n:n:2*n]
	}
	for _, reason := range diag.Reasons {
		c := s.byID[reason.PolicyID]
		d.Policies = append(d.Policies, c.id)
		d.Where = append(d.Where, c.where)
		if c.approve && d.Approval == "" {
			d.Approval = c.approval
		}
	}
	sortTogether(d.Policies, d.Where)
	if len(diag.Reasons) == 0 {
		d.Default = true
		d.Allow = s.def == DefaultPermit
	}
	return d
}

// Visible reports whether an item may be listed: it is hidden only when
// every call to it would be denied whatever its arguments, that is when a
// forbid matches with no arguments known, or when the default is deny and
// no permit matches or depends on the arguments.
func (s *Set) Visible(r *Request) bool {
	if s == nil {
		return true
	}
	ok, diag := s.authorize(r)
	if ok {
		return true
	}
	if len(diag.Reasons) > 0 {
		return false // a forbid matched
	}
	if s.def == DefaultPermit {
		return true
	}
	for _, e := range diag.Errors {
		if c := s.byID[e.PolicyID]; c != nil && !c.forbid {
			return true // a permit that depends on what is not known yet
		}
	}
	return false
}

// authorize evaluates the policies that may match r.
// Forbid wins; the policies that read no context are decided once per
// request's entities (see static), the others on each request.
func (s *Set) authorize(r *Request) (cedar.Decision, cedar.Diagnostic) {
	pr, res := r.principal(), r.resource()
	c := s.candidates(r.Action, res, r.Server.Name)
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	sc.g = entityGetter{r: r, principalUID: pr, resourceUID: res}
	g := &sc.g
	var diag cedar.Diagnostic
	var permits []cedar.DiagnosticReason
	if len(c.staticForbid)+len(c.staticPermit) > 0 {
		st := s.static(r, c, g, cedar.Request{Principal: pr, Action: cedar.NewEntityUID(TypeAction, cedar.String(r.Action)), Resource: res})
		diag.Errors = append(diag.Errors, st.errors...)
		if len(st.forbids) > 0 {
			diag.Reasons = st.forbids
			return cedar.Deny, diag
		}
		permits = st.permits
	}
	if len(c.dynamic) > 0 {
		ok, dd := cedar.Authorize(c.dynamicAll, g, r.cedarRequest(sc, pr, res, c.args))
		diag.Errors = append(diag.Errors, dd.Errors...)
		if !ok && len(dd.Reasons) > 0 { // a forbid matched
			diag.Reasons = dd.Reasons
			return cedar.Deny, diag
		}
		if ok {
			permits = append(slices.Clone(permits), dd.Reasons...)
		}
	}
	if len(permits) > 0 {
		diag.Reasons = permits
		return cedar.Allow, diag
	}
	return cedar.Deny, diag
}

// sortTogether sorts ids (and where alongside) for stable messages.
func sortTogether(ids, where []string) {
	if len(ids) < 2 {
		return
	}
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(ids[a], ids[b]) })
	ni, nw := make([]string, len(ids)), make([]string, len(where))
	for i, j := range idx {
		ni[i] = ids[j]
		if j < len(where) {
			nw[i] = where[j]
		}
	}
	copy(ids, ni)
	copy(where, nw)
}
