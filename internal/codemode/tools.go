package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// ToolName is the code-mode built-in; the tools it generates are named
// GeneratedPrefix + their name.
const (
	ToolName        = "code-mode"
	GeneratedPrefix = "code-mode-"
)

// MetaKey is the _meta key of a run's result: {"run", "calls", "limit"}.
const MetaKey = "io.github.mcp-gateway/code-mode"

// Options configure code mode in one gateway.
type Options struct {
	Limits Limits
	Logger *slog.Logger
	// Metrics counts the runs; nil: not counted.
	Metrics Metrics
	// Runners run the programs, in processes of their own; nil: the
	// gateway's own, made at its first run with the default bounds.
	Runners *Runners
}

// Metrics counts runs: outcome is "ok", "error" (the program threw or did
// not compile), "cancelled", or the name of the limit that ended it.
type Metrics interface {
	CodeModeRunEnded(outcome string, calls int)
}

// validName is the name of a generated tool, after GeneratedPrefix, so the
// whole name stays within the 64 characters agents accept.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,54}$`)

var codeModeTool = json.RawMessage(`{"name":"code-mode","title":"Script this gateway's tools in JavaScript",` +
	`"description":"Run JavaScript that calls this gateway's tools as functions, in one call instead of many. ` +
	`With name: create a tool code-mode-<name> over the given servers (or tools); its description lists their functions with typed signatures, its one argument is a program; it is listed to every client of this gateway and lasts as long as the gateway. ` +
	`With script: run the program now over the given servers' tools (all of them when none is given) and create nothing. ` +
	`A program is the body of an async function: call a tool as await servers.<server>.<tool>({...arguments}) (servers[\"my-server\"][\"my-tool\"] for other names; the tool's name at its server, not its listed name), run calls at once with Promise.all, and return a JSON value. ` +
	`A call's value is its structuredContent, else its content (a text as a string, an image as {type, mimeType, bytes}; several items as an array). A failed call throws an Error: name PolicyDenied (the gateway's policy refused it; message says why), ToolError (the tool reported an error; .content), CallError (no result). ` +
	`There are no timers, files, network or modules; console.log's lines come back with the result. Runs are limited in time, CPU, memory, calls and sizes.",` +
	`"inputSchema":{"type":"object","properties":{` +
	`"name":{"type":"string","pattern":"^[A-Za-z0-9_-]{1,54}$","description":"Create the tool code-mode-<name> (replacing one of that name)."},` +
	`"servers":{"type":"array","items":{"type":"string"},"description":"The servers whose tools the program may call."},` +
	`"tools":{"type":"array","items":{"type":"string"},"description":"Or single tools, as server/tool (the tool's name at its server)."},` +
	`"script":{"type":"string","description":"Run this program now."}}},` +
	`"annotations":{"openWorldHint":true}}`)

// Builtin is the code-mode built-in of the gateway whose router is router:
// the tools it creates are added to that router's built-in tools (and so
// go with the gateway).
func Builtin(router *gateway.Router, opts Options) gateway.Builtin {
	m := &mode{router: router, opts: opts}
	return gateway.Builtin{Tool: codeModeTool, Call: m.call, Observed: true}
}

type mode struct {
	router *gateway.Router
	opts   Options

	once    sync.Once
	runners *Runners
	all     toolsCache // the last one-shot run's over every tool
}

// runnersOf are the runners of opts, else the mode's own.
func (m *mode) runnersOf() *Runners {
	if m.opts.Runners != nil {
		return m.opts.Runners
	}
	m.once.Do(func() {
		m.runners = NewRunners(RunnerOptions{Logger: m.opts.Logger, MemoryBytes: m.opts.Limits.MemoryBytes})
	})
	return m.runners
}

func (m *mode) logger() *slog.Logger {
	if m.opts.Logger != nil {
		return m.opts.Logger
	}
	return slog.Default()
}

type codeModeArgs struct {
	Name    string   `json:"name"`
	Servers []string `json:"servers"`
	Tools   []string `json:"tools"`
	Script  *string  `json:"script"`
}

func (m *mode) call(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args codeModeArgs
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return nil, fmt.Errorf("code-mode: arguments: %v; give {\"name\": \"<name>\", \"servers\": [...]} to create a tool, or {\"script\": \"...\"} to run a program now", err)
	}
	sel := selection{Servers: args.Servers, Tools: args.Tools}
	switch {
	case args.Script != nil && args.Name != "":
		return nil, errors.New("code-mode: give name (to create a tool) or script (to run a program now), not both")
	case args.Script != nil:
		cache := (*toolsCache)(nil)
		if len(sel.Servers) == 0 && len(sel.Tools) == 0 {
			cache = &m.all // a one-shot run over every tool
		}
		tools, err := sel.resolve(c, cache)
		if err != nil {
			return nil, err
		}
		return m.run(ctx, c, *args.Script, tools), nil
	case args.Name != "":
		return m.create(c, args.Name, sel)
	}
	return nil, errors.New("code-mode: give {\"name\": \"<name>\", \"servers\": [...]} to create a tool code-mode-<name>, or {\"script\": \"...\"} to run a program now")
}

// selection is what a program may call: servers' tools, and single tools
// (server/tool); everything the caller sees when both are empty.
type selection struct {
	Servers []string `json:"servers,omitempty"`
	Tools   []string `json:"tools,omitempty"`
}

// resolve returns the selected tools as the caller sees them now. When
// they are the ones cache holds (the same tools, names, definitions and
// visibility), it returns that slice: a run of unchanged tools makes no
// new one, and its runner is told they are the same without comparing
// them one by one (Runners.serve).
func (s selection) resolve(c *gateway.BuiltinCall, cache *toolsCache) ([]Tool, error) {
	known := c.ServerNames()
	for _, name := range s.Servers {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("code-mode: no mcp server %q in this gateway (it has: %s)", name, orNone(known))
		}
	}
	var servers []string
	if len(s.Servers) > 0 || len(s.Tools) > 0 {
		servers = slices.Clone(s.Servers)
		for _, t := range s.Tools {
			server, _, ok := strings.Cut(t, "/")
			if !ok || !slices.Contains(known, server) {
				return nil, fmt.Errorf("code-mode: tool %q is not server/tool of a server of this gateway (it has: %s)", t, orNone(known))
			}
			servers = append(servers, server)
		}
	}
	refs := c.Tools(servers)
	whole := make(map[string]bool, len(s.Servers)) // servers whose every tool is selected
	for _, name := range s.Servers {
		whole[name] = true
	}
	selected := func(ref gateway.ToolRef) bool {
		return len(s.Tools) == 0 || whole[ref.Server] || slices.ContainsFunc(s.Tools, func(t string) bool {
			server, name, _ := strings.Cut(t, "/")
			return server == ref.Server && name == ref.Name
		})
	}
	out := cache.get(refs, selected)
	if out == nil {
		out = make([]Tool, 0, len(refs))
		for _, ref := range refs {
			if selected(ref) {
				out = append(out, Tool{Server: ref.Server, Name: ref.Name, Exposed: ref.Exposed, Def: ref.Def, Hidden: ref.Hidden})
			}
		}
	}
	cache.put(refs, out)
	for _, t := range s.Tools {
		server, name, _ := strings.Cut(t, "/")
		if !slices.ContainsFunc(out, func(x Tool) bool { return x.Server == server && x.Name == name && !x.Hidden }) {
			return nil, fmt.Errorf("code-mode: mcp server %q has no tool %q that you may see", server, name)
		}
	}
	return out, nil
}

// toolsCache is the tools a selection resolved to last (nil: none kept).
// A resolved slice is never changed once kept: runs share it.
type toolsCache struct {
	mu    sync.Mutex
	refs  []gateway.ToolRef // what tools was resolved from
	tools []Tool
}

// get returns the kept tools when the selected refs are exactly them, else nil.
func (tc *toolsCache) get(refs []gateway.ToolRef, selected func(gateway.ToolRef) bool) []Tool {
	if tc == nil {
		return nil
	}
	tc.mu.Lock()
	kept, from := tc.tools, tc.refs
	tc.mu.Unlock()
	if kept == nil {
		return nil
	}
	if len(refs) > 0 && len(from) == len(refs) && &from[0] == &refs[0] {
		return kept // the very refs it was resolved from (the gateway's, unchanged)
	}
	j := 0
	for _, ref := range refs {
		if !selected(ref) {
			continue
		}
		if j == len(kept) || !kept[j].is(ref) {
			return nil
		}
		j++
	}
	if j != len(kept) {
		return nil
	}
	return kept
}

func (tc *toolsCache) put(refs []gateway.ToolRef, tools []Tool) {
	if tc == nil {
		return
	}
	tc.mu.Lock()
	tc.refs, tc.tools = refs, tools
	tc.mu.Unlock()
}

// is reports whether t is ref: the same tool, names and visibility, and
// the same definition (the same bytes of the gateway's view).
func (t *Tool) is(ref gateway.ToolRef) bool {
	return t.Server == ref.Server && t.Name == ref.Name && t.Exposed == ref.Exposed && t.Hidden == ref.Hidden &&
		len(t.Def) == len(ref.Def) && (len(t.Def) == 0 || &t.Def[0] == &ref.Def[0])
}

// create adds the tool code-mode-<name> to the gateway's own tools.
func (m *mode) create(c *gateway.BuiltinCall, name string, sel selection) (json.RawMessage, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("code-mode: name %q: use 1 to 54 of A-Z, a-z, 0-9, _ and -", name)
	}
	if len(sel.Servers) == 0 && len(sel.Tools) == 0 {
		return nil, errors.New("code-mode: give the servers (or server/tool tools) the tool's programs may call")
	}
	tools, err := sel.resolve(c, nil)
	if err != nil {
		return nil, err
	}
	full := GeneratedPrefix + name
	def := generatedTool(full, sel, tools)
	gen := &generated{mode: m, sel: sel}
	if err := m.router.SetBuiltin(gateway.Builtin{Tool: def, Call: gen.call, Observed: true}); err != nil {
		return nil, fmt.Errorf("code-mode: %w", err)
	}
	var signatures []string
	for _, t := range tools {
		if !t.Hidden {
			signatures = append(signatures, t.Signature())
		}
	}
	m.logger().Info("code-mode tool created", "tool", full, "servers", sel.Servers, "tools", sel.Tools, "functions", len(tools))
	text := fmt.Sprintf("Created the tool %s: it is in tools/list now (call it directly or with mcp-exec), with {\"script\": \"...\"}. Its programs may call:\n%s", full, strings.Join(signatures, "\n"))
	return json.Marshal(map[string]any{
		"content":           []map[string]string{{"type": "text", "text": text}},
		"structuredContent": map[string]any{"tool": full, "servers": sel.Servers, "tools": sel.Tools, "functions": signatures},
	})
}

// generated is a code-mode-<name> tool.
type generated struct {
	mode  *mode
	sel   selection
	tools toolsCache // its last run's
}

func (g *generated) call(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args struct {
		Script *string `json:"script"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.Script == nil {
		return nil, fmt.Errorf("%s: give the program: {\"script\": \"return await servers.<server>.<tool>({...})\"}", c.Name)
	}
	tools, err := g.sel.resolve(c, &g.tools)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return g.mode.run(ctx, c, *args.Script, tools), nil
}

// generatedTool is the definition of a generated tool: its functions'
// signatures in its description.
func generatedTool(name string, sel selection, tools []Tool) json.RawMessage {
	var b strings.Builder
	what := strings.Join(append(slices.Clone(sel.Servers), sel.Tools...), ", ")
	fmt.Fprintf(&b, "Run a JavaScript program that calls the tools of %s as async functions, and get its returned value as JSON. ", what)
	b.WriteString("The program is the body of an async function: `const x = await servers.<server>.<tool>({...}); return {...};`; Promise.all runs calls at once. ")
	b.WriteString("A call's value is the tool's structuredContent, else its content (text as a string, an image as {type, mimeType, bytes}, several items as an array). ")
	b.WriteString("A failed call throws an Error you may catch: name PolicyDenied (refused by the gateway's policy; message says why), ToolError (.content), CallError. ")
	b.WriteString("No timers, files, network or modules; console.log's lines come back with the result; time, CPU, memory, calls and sizes are limited.\n\nFunctions:\n")
	for _, t := range tools {
		if !t.Hidden {
			b.WriteString(t.Signature())
			b.WriteString("\n")
		}
	}
	def, _ := json.Marshal(map[string]any{
		"name":        name,
		"title":       "Code mode: " + what,
		"description": strings.TrimRight(b.String(), "\n"),
		"inputSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"script": map[string]any{"type": "string", "description": "The program: the body of an async function; return a JSON value."}},
			"required":   []string{"script"},
		},
		"annotations": map[string]any{"openWorldHint": true},
	})
	return def
}

// run runs a program for the caller of c and makes its CallToolResult.
func (m *mode) run(ctx context.Context, c *gateway.BuiltinCall, script string, tools []Tool) json.RawMessage {
	var progress atomic.Uint64
	client := fmt.Sprintf("%p/%s", m.router, c.Client())
	out := m.runnersOf().Run(ctx, client, Program{Source: script, Tools: tools, Limits: m.opts.Limits,
		Call: func(ctx context.Context, t Tool, args json.RawMessage) (json.RawMessage, error) {
			return c.CallInner(ctx, t.Exposed, t.Server+"."+t.Name, args, &progress)
		}})
	outcome := outcomeOf(out.Err)
	if m.opts.Metrics != nil {
		m.opts.Metrics.CodeModeRunEnded(outcome, out.Calls)
	}
	m.logger().Info("code-mode run ended", "tool", c.Name, "run", c.Run(), "outcome", outcome, "calls", out.Calls,
		"elapsed", out.Elapsed, "cpu", out.CPU)
	return resultOf(out, c.Run())
}

// outcomeOf names how a run ended, for the metrics and the log.
func outcomeOf(err error) string {
	var le *LimitError
	var re *RunnerError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &le):
		return le.Limit
	case errors.As(err, &re):
		return "runner"
	case errors.Is(err, ErrCancelled):
		return "cancelled"
	}
	return "error"
}

// resultOf is a run's CallToolResult: the value as text and as
// structuredContent.result; a failure as an isError result saying why
// (and, for a limit, which, in _meta and structuredContent.limit).
func resultOf(out Outcome, run string) json.RawMessage {
	meta := map[string]any{"run": run, "calls": out.Calls}
	structured := map[string]any{"calls": out.Calls}
	if len(out.Logs) > 0 {
		structured["logs"] = out.Logs
	}
	var res map[string]any
	if out.Err == nil {
		structured["result"] = out.Value
		res = map[string]any{"content": []map[string]string{{"type": "text", "text": string(out.Value)}}}
	} else {
		msg := out.Err.Error()
		var le *LimitError
		if errors.As(out.Err, &le) {
			structured["limit"], meta["limit"] = le.Limit, le.Limit
		}
		structured["error"] = msg
		text := msg
		if len(out.Logs) > 0 {
			text += "\nconsole output:\n" + strings.Join(out.Logs, "\n")
		}
		res = map[string]any{"content": []map[string]string{{"type": "text", "text": text}}, "isError": true}
	}
	res["structuredContent"] = structured
	res["_meta"] = map[string]any{MetaKey: meta}
	b, _ := json.Marshal(res)
	return b
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
