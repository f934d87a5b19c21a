package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-gateway/mcp-gateway/internal/codemode"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
	"github.com/mcp-gateway/mcp-gateway/internal/host/search"
)

// The built-in tools' definitions. Their names are reserved: a server's tool
// of the same name is renamed by the naming rule.
var (
	toolFind = json.RawMessage(`{"name":"mcp-find","title":"Find MCP servers","description":"Search the MCP servers registered on this host by what they do (their names, descriptions and tools). Returns the best matches; attach one to this sandbox with mcp-add.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"What you need, in a few words, e.g. \"knowledge graph\" or \"read files\"."},"limit":{"type":"integer","minimum":1,"maximum":50,"description":"How many servers to return at most (default 10)."}},"required":["query"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`)
	toolAdd  = json.RawMessage(`{"name":"mcp-add","title":"Add an MCP server","description":"Attach a registered MCP server to this sandbox (find one with mcp-find). Its tools are returned in the result and added to tools/list; call them directly or with mcp-exec.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The server's name, as mcp-find gives it."}},"required":["name"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`)
	toolSet  = json.RawMessage(`{"name":"mcp-config-set","title":"Configure an MCP server","description":"Set this sandbox's configuration of a server (the properties it declares; mcp-find lists them) and restart this sandbox's instance of it. A null value unsets a property.","inputSchema":{"type":"object","properties":{"server":{"type":"string","description":"The server's name."},"config":{"type":"object","description":"Property values by name.","additionalProperties":{"type":["string","number","boolean","null"]}}},"required":["server","config"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`)
	toolExec = json.RawMessage(`{"name":"mcp-exec","title":"Call a tool by name","description":"Call any tool of this sandbox's servers by its name, with its arguments. Useful when a tool was just added and your tool list is not refreshed yet.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The tool's name as listed (or as mcp-add returned it)."},"arguments":{"type":"object","description":"The tool's arguments."}},"required":["name"]},"annotations":{"openWorldHint":true}}`)
)

// builtins are a sandbox's own tools: mcp-exec always; the discovery tools
// in dynamic mode only.
func (h *Host) builtins(sb *sandbox) []gateway.Builtin {
	exec := gateway.Builtin{Tool: toolExec, Call: h.exec}
	var more []gateway.Builtin
	if cm := h.opts.CodeMode; cm != nil {
		opts := *cm
		if sb.tel != nil && sb.tel.Metrics != nil {
			opts.Metrics = sb.tel
		}
		more = append(more, codemode.Builtin(sb.gw.Router, opts))
	}
	if sb.mode != registry.ModeDynamic {
		return append([]gateway.Builtin{exec}, more...)
	}
	return append([]gateway.Builtin{
		{Tool: toolFind, Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) { return h.find(ctx, sb, c) }},
		{Tool: toolAdd, Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) { return h.add(ctx, sb, c) }},
		{Tool: toolSet, Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
			return h.configSet(ctx, sb, c)
		}},
		exec,
	}, more...)
}

// foundServer is one result of mcp-find.
type foundServer struct {
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	Score       float64             `json:"score"`
	Tools       []string            `json:"tools,omitempty"`         // the tools that matched
	AllTools    int                 `json:"toolCount"`               // how many it has
	Config      []registry.Property `json:"configuration,omitempty"` // what mcp-config-set may set
	Attached    bool                `json:"attached"`                // already in this sandbox
}

func (h *Host) find(ctx context.Context, sb *sandbox, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return nil, fmt.Errorf("mcp-find: arguments: %v", err)
	}
	if strings.TrimSpace(args.Query) == "" {
		return nil, fmt.Errorf("mcp-find: query is empty: say in a few words what the server should do")
	}
	if args.Limit < 0 || args.Limit > 50 {
		return nil, fmt.Errorf("mcp-find: limit must be between 1 and 50, not %d", args.Limit)
	}
	h.mu.Lock()
	attached := slices.Clone(h.state.Sandboxes[sb.name].Servers)
	docs := make([]search.Document, 0, len(h.state.Servers))
	byName := map[string]*registry.Server{}
	for _, name := range sortedKeys(h.state.Servers) {
		srv := h.state.Servers[name]
		byName[name] = srv
		d := search.Document{Name: name, Description: srv.Description}
		for _, t := range srv.Tools {
			d.Tools = append(d.Tools, search.Tool{Name: t.Name, Description: t.Description})
		}
		docs = append(docs, d)
	}
	h.mu.Unlock()
	results := search.Rank(docs, args.Query, args.Limit)
	found := make([]foundServer, 0, len(results))
	var b strings.Builder
	for i, r := range results {
		srv := byName[r.Name]
		isAttached := slices.Contains(attached, r.Name)
		found = append(found, foundServer{Name: r.Name, Description: srv.Description, Score: round(r.Score), Tools: r.Tools, AllTools: len(srv.Tools), Config: srv.Config, Attached: isAttached})
		fmt.Fprintf(&b, "%d. %s", i+1, r.Name)
		if isAttached {
			b.WriteString(" (already added)")
		}
		if srv.Description != "" {
			fmt.Fprintf(&b, ": %s", srv.Description)
		}
		if len(r.Tools) > 0 {
			fmt.Fprintf(&b, " (matching tools: %s)", strings.Join(r.Tools, ", "))
		}
		b.WriteString("\n")
	}
	if len(found) == 0 {
		b.WriteString("No registered server matches. Try other words.")
	} else {
		b.WriteString("Attach one with mcp-add {\"name\": \"<server>\"}.")
	}
	return result(b.String(), map[string]any{"servers": found})
}

func (h *Host) add(ctx context.Context, sb *sandbox, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.Name == "" {
		return nil, fmt.Errorf("mcp-add: give the server's name: {\"name\": \"<server>\"}")
	}
	h.mu.Lock()
	var tools []json.RawMessage
	already := slices.Contains(h.state.Sandboxes[sb.name].Servers, args.Name)
	if already {
		tools = sb.gw.Router.Tools(args.Name)
		h.mu.Unlock()
	} else {
		res, err := h.load(ctx, args.Name, sb.name)
		h.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("mcp-add: %w", err)
		}
		tools = res.Tools
	}
	verb := "Added"
	if already {
		verb = "Already added:"
	}
	return result(addText(verb, args.Name, tools), map[string]any{"server": args.Name, "tools": tools})
}

// addText is mcp-add's text: each tool's name and the first line of its
// description, not its whole definition, which costs an agent's context
// (some 10 KB for the memory server's nine tools) and is in the result's
// structuredContent and in tools/list anyway.
func addText(verb, server string, tools []json.RawMessage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s mcp server %q with %d tools. They are in tools/list now; call them directly or through mcp-exec (their input schemas are in this result's structuredContent and in tools/list):", verb, server, len(tools))
	for _, t := range tools {
		var d struct{ Name, Description string }
		_ = json.Unmarshal(t, &d)
		fmt.Fprintf(&b, "\n- %s", d.Name)
		if line := oneLine(d.Description, 160); line != "" {
			fmt.Fprintf(&b, ": %s", line)
		}
	}
	return b.String()
}

// oneLine is the first line of s, at most max bytes (cut at a rune, with "…").
func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

func (h *Host) configSet(ctx context.Context, sb *sandbox, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args struct {
		Server string                     `json:"server"`
		Config map[string]json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.Server == "" || args.Config == nil {
		return nil, fmt.Errorf("mcp-config-set: give {\"server\": \"<server>\", \"config\": {\"<property>\": <value>}}")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	srv := h.state.Servers[args.Server]
	if srv == nil {
		return nil, fmt.Errorf("mcp-config-set: %w", h.unknownServer(args.Server))
	}
	rec := h.state.Sandboxes[sb.name]
	next := map[string]string{}
	for k, v := range rec.Config[args.Server] {
		next[k] = v
	}
	for _, key := range sortedKeys(args.Config) {
		i := slices.IndexFunc(srv.Config, func(p registry.Property) bool { return p.Name == key })
		if i < 0 {
			return nil, fmt.Errorf("mcp-config-set: mcp server %q has no property %q (it declares: %s)", args.Server, key, orNone(propertyNames(srv)))
		}
		v, null, err := scalar(args.Config[key])
		if err != nil {
			return nil, fmt.Errorf("mcp-config-set: property %q: %v", key, err)
		}
		if null {
			delete(next, key)
			continue
		}
		next[key] = v
	}
	for _, p := range srv.Config {
		if _, set := next[p.Name]; p.Required && !set && p.Default == "" {
			return nil, fmt.Errorf("mcp-config-set: mcp server %q needs property %q", args.Server, p.Name)
		}
	}
	prev := rec.Config[args.Server]
	if rec.Config == nil {
		rec.Config = map[string]map[string]string{}
	}
	rec.Config[args.Server] = next
	if err := h.save(); err != nil {
		rec.Config[args.Server] = prev
		return nil, fmt.Errorf("mcp-config-set: %w", err)
	}
	text := fmt.Sprintf("Set the configuration of mcp server %q for this sandbox.", args.Server)
	if slices.Contains(rec.Servers, args.Server) {
		if err := h.restartInstance(ctx, sb, args.Server); err != nil {
			return nil, fmt.Errorf("mcp-config-set: saved, but the server did not restart with it: %w", err)
		}
		text += " Its instance was restarted with it."
	} else {
		text += " It applies when the server is added (mcp-add)."
	}
	return result(text, map[string]any{"server": args.Server, "config": next})
}

func (h *Host) exec(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
	var args struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || args.Name == "" {
		return nil, fmt.Errorf("mcp-exec: give the tool's name: {\"name\": \"<tool>\", \"arguments\": {...}}")
	}
	res, err := c.CallTool(ctx, args.Name, args.Arguments)
	if err != nil {
		return nil, fmt.Errorf("mcp-exec: %w", err)
	}
	return res, nil
}

// result is a CallToolResult with text content and structured content.
func result(text string, structured any) (json.RawMessage, error) {
	return json.Marshal(map[string]any{
		"content":           []map[string]string{{"type": "text", "text": text}},
		"structuredContent": structured,
	})
}

// scalar turns a configuration value into the string its variable gets.
func scalar(raw json.RawMessage) (value string, null bool, err error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false, err
	}
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return x, false, nil
	case bool:
		return strconv.FormatBool(x), false, nil
	case float64:
		return string(raw), false, nil
	}
	return "", false, fmt.Errorf("must be a string, number or boolean, not %s", raw)
}

func propertyNames(srv *registry.Server) []string {
	names := make([]string, len(srv.Config))
	for i, p := range srv.Config {
		names[i] = p.Name
	}
	return names
}

func round(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }
