package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/codemode"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/policy"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
)

// GovernanceOptions configure the host's policies, approvals and audit log.
type GovernanceOptions struct {
	// Default decides when no policy matches ("" is permit).
	Default policy.Default
	// AuditFile is the audit log; "" means audit.jsonl in the state
	// directory, "-" none.
	AuditFile string
	// AuditArguments records calls' arguments in full.
	AuditArguments bool
	// AuditMaxBytes rotates the audit log beyond this size; 0: 100 MiB.
	AuditMaxBytes int64
	// ApprovalTimeout bounds the wait for a person's approval; 0: 5 min.
	ApprovalTimeout time.Duration
	// MaxPendingApprovals bounds the calls of one sandbox waiting in the
	// approval queue; 0: policy.MaxPendingPerPrincipal.
	MaxPendingApprovals int
}

// PoliciesFile is the policy store's name in the state directory.
const PoliciesFile = "policies.json"

// StoredPolicy is one policy document the host keeps: global, or for one sandbox.
type StoredPolicy struct {
	Name    string    `json:"name"`
	Sandbox string    `json:"sandbox,omitempty"` // "" for every sandbox
	File    string    `json:"file"`              // the name positions are given in
	Text    string    `json:"text"`
	Set     time.Time `json:"set"`
}

// PolicyRequest is `policy set`.
type PolicyRequest struct {
	Name    string `json:"name"`
	Sandbox string `json:"sandbox,omitempty"`
	File    string `json:"file"`
	Text    string `json:"text"`
}

// PolicySummary describes a stored document in `policy ls`.
type PolicySummary struct {
	Name     string          `json:"name"`
	Sandbox  string          `json:"sandbox,omitempty"`
	File     string          `json:"file"`
	Set      time.Time       `json:"set"`
	Policies []policy.Policy `json:"policies"`
}

// PolicyTestRequest is `policy test`.
type PolicyTestRequest struct {
	Sandbox string          `json:"sandbox"`
	Tool    string          `json:"tool"` // server/tool, or a built-in tool's name
	Args    json.RawMessage `json:"args,omitempty"`
}

// PolicyTestResult is the decision `policy test` prints.
type PolicyTestResult struct {
	Decision string   `json:"decision"` // allow, deny, approval
	Reason   string   `json:"reason"`
	Policies []string `json:"policies,omitempty"`
	Where    []string `json:"where,omitempty"`
	Approval string   `json:"approval,omitempty"`
	Default  bool     `json:"default,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

// governance is the host's policy store, its sandboxes' engines, the
// approval queue and the audit log. Changed under h.mu.
type governance struct {
	opts     GovernanceOptions
	path     string
	policies []StoredPolicy
	engines  map[string]*policy.Engine // by sandbox
	// decisions count each sandbox's decisions (nil without metrics), with
	// the function removing its series.
	decisions map[string]sandboxDecisions
	queue     *policy.Queue
	audit     *audit.Log
	log       *slog.Logger
	servers   atomic.Pointer[map[string]policy.Server]
}

// openGovernance reads the policy store and opens the audit log.
func openGovernance(dir string, opts GovernanceOptions, log *slog.Logger) (*governance, error) {
	g := &governance{opts: opts, path: filepath.Join(dir, PoliciesFile), engines: map[string]*policy.Engine{}, decisions: map[string]sandboxDecisions{}, queue: &policy.Queue{MaxPerPrincipal: opts.MaxPendingApprovals}, log: log}
	g.servers.Store(&map[string]policy.Server{})
	b, err := os.ReadFile(g.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("policy store: %w", err)
	default:
		if err := json.Unmarshal(b, &g.policies); err != nil {
			return nil, fmt.Errorf("policy store %s is not valid JSON (restore it, or remove it to start without policies): %w", g.path, err)
		}
	}
	if _, err := g.setFor("", g.policies); err != nil {
		return nil, fmt.Errorf("policy store %s: %w", g.path, err)
	}
	switch opts.AuditFile {
	case "-":
	default:
		file := opts.AuditFile
		if file == "" {
			file = filepath.Join(dir, "audit.jsonl")
		}
		if g.audit, err = audit.Open(file, audit.Options{MaxBytes: opts.AuditMaxBytes, Arguments: opts.AuditArguments, Logger: log}); err != nil {
			return nil, err
		}
	}
	g.queue.OnAnswer = func(a *policy.ApprovalRequest, outcome, by string) {
		g.write(&audit.Record{Type: "approval", Principal: a.Principal, Server: a.Server, Name: a.Name, Method: a.Method,
			Approval: outcome, ApprovedBy: by, Policies: a.Policies, Detail: "approval " + a.ID})
	}
	return g, nil
}

func (g *governance) write(r *audit.Record) {
	if g.audit == nil {
		return
	}
	if err := g.audit.Write(r); err != nil {
		g.log.Error("writing the audit log failed", "err", err)
	}
}

// setFor parses the policies that apply to a sandbox ("": the global ones
// only); nil when there are none and the default is permit.
func (g *governance) setFor(sandbox string, stored []StoredPolicy) (*policy.Set, error) {
	var sources []policy.Source
	for _, p := range stored {
		if p.Sandbox == "" || p.Sandbox == sandbox {
			sources = append(sources, policy.Source{Name: p.File, Text: []byte(p.Text)})
		}
	}
	if len(sources) == 0 && g.opts.Default != policy.DefaultDeny {
		return nil, nil
	}
	return policy.Parse(g.opts.Default, sources...)
}

// guardFor makes a sandbox's guard; its engine follows the policy store.
func (h *Host) guardFor(sb *sandbox) *policy.Guard {
	g := h.gov
	set, err := g.setFor(sb.name, g.policies)
	if err != nil { // checked when stored; a sandbox-specific set can still clash
		h.log.Error("the sandbox's policies do not load; everything is denied until fixed", "sandbox", sb.name, "err", err)
		set, _ = policy.Parse(policy.DefaultDeny)
	}
	e := policy.NewEngine(set)
	e.OnChange(sb.gw.GuardChanged)
	g.engines[sb.name] = e
	guard := &policy.Guard{Engine: e, Principal: sb.name, Sandbox: true, Servers: h.policyServer,
		Audit: g.audit, Approvals: g.queue, ApprovalTimeout: g.opts.ApprovalTimeout, Logger: h.log}
	if h.opts.Telemetry != nil && h.opts.Telemetry.Metrics != nil {
		d, forget := h.opts.Telemetry.Metrics.PolicyDecisions(sb.name)
		g.decisions[sb.name] = sandboxDecisions{d, forget}
		guard.Decisions = d
	}
	return guard
}

type sandboxDecisions struct {
	*telemetry.PolicyDecisions
	forget func()
}

// countRegister counts a register decision of a sandbox.
func (g *governance) countRegister(sandbox, result string) {
	if d, ok := g.decisions[sandbox]; ok {
		d.Count(policy.ActionRegister, result)
	}
}

// policyServer describes a registered server to the policies, from a
// snapshot taken after every change of the registry (read without h.mu).
func (h *Host) policyServer(name string) policy.Server {
	if s, ok := (*h.gov.servers.Load())[name]; ok {
		return s
	}
	return policy.Server{Name: name}
}

// snapshotServers refreshes what policyServer reads. Called with h.mu held.
func (h *Host) snapshotServers() {
	m := make(map[string]policy.Server, len(h.state.Servers))
	for name, srv := range h.state.Servers {
		m[name] = serverForPolicy(name, srv)
	}
	h.gov.servers.Store(&m)
}

func serverForPolicy(name string, srv *registry.Server) policy.Server {
	if srv.Remote() {
		typ := "remote"
		if srv.Transport != "" {
			typ += "-" + srv.Transport
		}
		return policy.Server{Name: name, Type: typ, IdentityURL: srv.URL, RequiresOAuth: srv.OAuth != nil}
	}
	return policy.Server{Name: name, Type: "local-stdio", Command: srv.Command, Args: srv.Args}
}

// validPolicyName reports whether name is 1 to 128 of [A-Za-z0-9._-]. (A
// regexp with {1,128} compiles to 128 copies of its class: 119 KB allocated
// in every process's init, serve's too.)
func validPolicyName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SetPolicy stores a policy document (replacing one of the same name and
// scope) and applies it to the running sandboxes at once.
func (h *Host) SetPolicy(req PolicyRequest) (*PolicySummary, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !validPolicyName(req.Name) {
		return nil, fmt.Errorf("policy name %q: use letters, digits, '.', '-', '_' (up to 128)", req.Name)
	}
	if req.Sandbox != "" && h.state.Sandboxes[req.Sandbox] == nil {
		return nil, h.unknownSandbox(req.Sandbox)
	}
	if req.File == "" {
		req.File = req.Name + ".cedar"
	}
	alone, err := policy.Parse(h.gov.opts.Default, policy.Source{Name: req.File, Text: []byte(req.Text)})
	if err != nil {
		return nil, err
	}
	next := slices.DeleteFunc(slices.Clone(h.gov.policies), func(p StoredPolicy) bool { return p.Name == req.Name && p.Sandbox == req.Sandbox })
	next = append(next, StoredPolicy{Name: req.Name, Sandbox: req.Sandbox, File: req.File, Text: req.Text, Set: time.Now().UTC()})
	if err := h.applyPolicies(next); err != nil {
		return nil, err
	}
	return &PolicySummary{Name: req.Name, Sandbox: req.Sandbox, File: req.File, Policies: alone.Policies()}, nil
}

// RemovePolicy removes a stored document and applies the change at once.
func (h *Host) RemovePolicy(name, sandbox string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(h.gov.policies), func(p StoredPolicy) bool { return p.Name == name && p.Sandbox == sandbox })
	if len(next) == len(h.gov.policies) {
		scope := "global"
		if sandbox != "" {
			scope = "of sandbox " + sandbox
		}
		return fmt.Errorf("no %s policy named %q (run `mcp-gateway policy ls`)", scope, name)
	}
	return h.applyPolicies(next)
}

// removeSandboxPolicies forgets a removed sandbox's engine and removes the
// policy documents stored for it alone, each audited as a policy rm, and
// returns their names. Called with h.mu held, the sandbox already gone.
func (h *Host) removeSandboxPolicies(sandbox string) ([]string, error) {
	g := h.gov
	delete(g.engines, sandbox)
	if d, ok := g.decisions[sandbox]; ok {
		d.forget()
		delete(g.decisions, sandbox)
	}
	var names []string
	next := slices.DeleteFunc(slices.Clone(g.policies), func(p StoredPolicy) bool {
		if p.Sandbox == sandbox {
			names = append(names, p.Name)
			return true
		}
		return false
	})
	if len(names) == 0 {
		return nil, nil
	}
	if err := h.applyPolicies(next); err != nil {
		return nil, fmt.Errorf("the sandbox is removed but its policies (%s) stay stored and would apply to a new sandbox of that name: %w; remove them with `mcp-gateway policy rm NAME --sandbox %s`",
			strings.Join(names, ", "), err, sandbox)
	}
	for _, name := range names {
		g.write(&audit.Record{Type: "admin", Principal: "host:" + currentUser(), Action: "policy rm", Name: name,
			Outcome: "ok", Detail: "sandbox " + sandbox + ", removed with it (sandbox rm)"})
	}
	h.log.Info("removed the sandbox's policies with it", "sandbox", sandbox, "policies", names)
	return names, nil
}

// applyPolicies checks every sandbox's set of next, saves next and
// replaces each sandbox's engine's set (clients hear list_changed where
// their lists change). Called with h.mu held.
func (h *Host) applyPolicies(next []StoredPolicy) error {
	g := h.gov
	sets := map[string]*policy.Set{}
	if _, err := g.setFor("", next); err != nil {
		return err
	}
	for name := range h.sandboxes {
		set, err := g.setFor(name, next)
		if err != nil {
			return fmt.Errorf("sandbox %q: %w", name, err)
		}
		sets[name] = set
	}
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(g.path, b, 0o600); err != nil {
		return fmt.Errorf("saving the policy store: %w", err)
	}
	g.policies = next
	for name, set := range sets {
		if e := g.engines[name]; e != nil {
			e.Replace(set)
		}
	}
	return nil
}

// Policies lists the stored documents.
func (h *Host) Policies() []PolicySummary {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []PolicySummary{}
	for _, p := range h.gov.policies {
		s := PolicySummary{Name: p.Name, Sandbox: p.Sandbox, File: p.File, Set: p.Set}
		if set, err := policy.Parse(h.gov.opts.Default, policy.Source{Name: p.File, Text: []byte(p.Text)}); err == nil {
			s.Policies = set.Policies()
		}
		out = append(out, s)
	}
	return out
}

// TestPolicy decides a call as the sandbox would make it, without making it.
func (h *Host) TestPolicy(req PolicyTestRequest) (*PolicyTestResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sb := h.sandboxes[req.Sandbox]
	if sb == nil {
		return nil, h.unknownSandbox(req.Sandbox)
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, fmt.Errorf("--args must be a JSON object: %v", err)
	}
	r := &policy.Request{Principal: sb.name, Sandbox: true, Args: args, Time: time.Now()}
	server, tool, ok := strings.Cut(req.Tool, "/")
	switch {
	case !ok && isBuiltin(req.Tool):
		r.Action, r.Kind, r.Name = policy.ActionInvokePrimordial, policy.TypePrimordial, req.Tool
	case !ok || server == "" || tool == "":
		return nil, fmt.Errorf("--tool must be server/tool (the server's name and the tool's original name), or a built-in tool's name, not %q", req.Tool)
	default:
		r.Action, r.Kind, r.Name = policy.ActionInvokeTool, policy.TypeTool, tool
		r.Server = h.policyServer(server)
		r.Annotations = policy.ParseAnnotations(h.toolDef(sb, server, tool))
	}
	d := h.gov.engines[sb.name].Decide(r)
	res := &PolicyTestResult{Decision: "deny", Reason: d.Reason(), Policies: d.Policies, Where: d.Where, Default: d.Default, Errors: d.Errors, Approval: d.Approval}
	switch {
	case d.Allow && d.Approval != "":
		res.Decision = "approval"
	case d.Allow:
		res.Decision = "allow"
	}
	return res, nil
}

// toolDef finds a tool's definition in a sandbox's view by its server and
// original name (its exposed name may carry the server's), for its annotations.
func (h *Host) toolDef(sb *sandbox, server, tool string) json.RawMessage {
	defs := sb.gw.Router.Tools(server)
	for _, def := range defs {
		var d struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(def, &d)
		if d.Name == tool || strings.HasSuffix(d.Name, "_"+tool) && len(defs) > 0 {
			return def
		}
	}
	return nil
}

func isBuiltin(name string) bool {
	switch name {
	case "mcp-find", "mcp-add", "mcp-config-set", "mcp-exec", codemode.ToolName:
		return true
	}
	return strings.HasPrefix(name, codemode.GeneratedPrefix) // a generated code-mode tool
}

// checkRegister decides whether a sandbox may attach a server (mcp-add,
// load): the register action.
func (h *Host) checkRegister(sandboxName, server string) error {
	e := h.gov.engines[sandboxName]
	if e == nil || !e.Active() {
		return nil
	}
	d := e.Decide(&policy.Request{Principal: sandboxName, Sandbox: true, Action: policy.ActionRegister, Kind: policy.TypeServer,
		Server: serverForPolicy(server, h.state.Servers[server]), Time: time.Now()})
	rec := &audit.Record{Type: "call", Principal: sandboxName, Action: policy.ActionRegister, Server: server, Policies: d.Policies, Decision: "allow"}
	why := d.Reason()
	if d.Allow && d.Approval != "" {
		// Attaching runs under the host's lock: it cannot wait for a
		// person, and a permit asking for one must not let it through.
		why += "; nobody is asked to approve an attachment (mcp-add, load): permit it without @requireApproval"
		rec.Detail = why
	}
	if !d.Allow || d.Approval != "" {
		h.gov.countRegister(sandboxName, policy.ResultDeny)
		rec.Decision, rec.Outcome = "deny", "denied"
		h.gov.write(rec)
		return fmt.Errorf("mcp-gateway policy: attaching mcp server %q to sandbox %q is denied: %s", server, sandboxName, why)
	}
	h.gov.countRegister(sandboxName, policy.ResultPermit)
	h.gov.write(rec)
	return nil
}

// Approvals lists the calls waiting for approval.
func (h *Host) Approvals() []policy.ApprovalRequest { return h.gov.queue.List() }

// Answer approves or denies a waiting call; by is who answered (the
// control socket's peer, see controlUser), recorded as approvedBy.
func (h *Host) Answer(id string, allow bool, by string) error {
	return h.gov.queue.Answer(id, allow, by)
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprint(os.Getuid())
}

// governanceRoutes adds the policy and approval commands to the control API.
func (h *Host) governanceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /v1/policies", func(w http.ResponseWriter, r *http.Request) {
		var req PolicyRequest
		if decode(w, r, &req) {
			answer(w, func() (any, error) { return h.SetPolicy(req) })
		}
	})
	mux.HandleFunc("GET /v1/policies", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Policies(), nil })
	})
	mux.HandleFunc("DELETE /v1/policies/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) {
			return struct{}{}, h.RemovePolicy(r.PathValue("name"), r.URL.Query().Get("sandbox"))
		})
	})
	mux.HandleFunc("POST /v1/policies/test", func(w http.ResponseWriter, r *http.Request) {
		var req PolicyTestRequest
		if decode(w, r, &req) {
			answer(w, func() (any, error) { return h.TestPolicy(req) })
		}
	})
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Approvals(), nil })
	})
	mux.HandleFunc("POST /v1/approvals/{id}/{answer}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) {
			switch r.PathValue("answer") {
			case "allow":
				return struct{}{}, h.Answer(r.PathValue("id"), true, controlUser(r.Context()))
			case "deny":
				return struct{}{}, h.Answer(r.PathValue("id"), false, controlUser(r.Context()))
			}
			return nil, fmt.Errorf("answer allow or deny, not %q", r.PathValue("answer"))
		})
	})
}

// adminActions names the control API's changes in the audit log.
var adminActions = map[string]string{
	"POST /v1/servers":                             "server add",
	"DELETE /v1/servers/{name}":                    "server rm",
	"PUT /v1/secrets/{name}":                       "secret set",
	"DELETE /v1/secrets/{name}":                    "secret rm",
	"POST /v1/sandboxes":                           "sandbox create",
	"DELETE /v1/sandboxes/{name}":                  "sandbox rm",
	"POST /v1/sandboxes/{name}/servers/{server}":   "load",
	"DELETE /v1/sandboxes/{name}/servers/{server}": "unload",
	"PUT /v1/policies":                             "policy set",
	"DELETE /v1/policies/{name}":                   "policy rm",
	"POST /v1/approvals/{id}/{answer}":             "approval",
}

// audited records every change made over the control API: the action,
// its subject (names only: a secret's value travels in the body, never
// recorded) and its outcome.
func (h *Host) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		defer func() {
			h.mu.Lock()
			h.snapshotServers()
			h.mu.Unlock()
		}()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		var body struct {
			Name    string `json:"name"`
			Sandbox string `json:"sandbox"`
		}
		// Names of what a POST or PUT creates are in its body: read them
		// from a copy.
		if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPut) {
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err == nil {
				_ = json.Unmarshal(b, &body)
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		next.ServeHTTP(sw, r)
		action, ok := adminActions[r.Pattern]
		if !ok {
			return
		}
		rec := &audit.Record{Type: "admin", Principal: controlUser(r.Context()), Action: action, Name: body.Name, Outcome: "ok"}
		switch {
		case r.PathValue("server") != "": // load, unload
			rec.Name, rec.Detail = r.PathValue("server"), "sandbox "+r.PathValue("name")
		case r.PathValue("id") != "": // an approval
			rec.Name, rec.Detail = r.PathValue("id"), r.PathValue("answer")
		case r.PathValue("name") != "":
			rec.Name = r.PathValue("name")
		}
		if body.Sandbox != "" {
			rec.Detail = "sandbox " + body.Sandbox
		}
		if s := r.URL.Query().Get("sandbox"); s != "" {
			rec.Detail = "sandbox " + s
		}
		if sw.status != http.StatusOK {
			rec.Outcome, rec.ErrorClass = "error", http.StatusText(sw.status)
		}
		h.gov.write(rec)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// close closes the audit log.
func (g *governance) close() error { return g.audit.Close() }
