package mcpconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The mcpServers format is the configuration file of Claude Desktop,
// Cursor, Windsurf, Claude Code and others:
//
//	{"mcpServers": {"name": {"command": "npx", "args": [...], "env": {...}, "cwd": "/"},
//	                "other": {"url": "https://...", "headers": {...}, "type": "http"}}}
//
// and VS Code's {"servers": {...}} with the same entries.

// serversFile is a document in the mcpServers format.
type serversFile struct {
	key    string // "mcpServers" or "servers"
	value  []byte
	inputs bool // VS Code's "inputs" was given
}

// Properties of mcpServers entries.
var (
	commandEntryProps = []string{"command", "args", "env", "cwd", "type", "disabled"}
	urlEntryProps     = []string{"url", "serverUrl", "headers", "env", "type", "disabled"}
)

// isServersFile recognises the mcpServers format: a top-level object with
// exactly the key "mcpServers"; or VS Code's, with the key "servers" (and
// perhaps "inputs") whose value holds only entries with "command", "url",
// "serverUrl" or "type" — a server of the mcp object named "servers" has
// none of those as names of its own properties' objects.
func isServersFile(data []byte) (*serversFile, bool) {
	data = bytes.TrimSpace(data)
	if kind(data) != "object" || checkSyntax(data) != nil {
		return nil, false
	}
	ms, err := members(data)
	if err != nil || len(ms) == 0 {
		return nil, false
	}
	if len(ms) == 1 && ms[0].key == "mcpServers" {
		return &serversFile{key: "mcpServers", value: ms[0].value}, true
	}
	f := &serversFile{key: "servers"}
	for _, m := range ms {
		switch m.key {
		case "servers":
			f.value = m.value
		case "inputs":
			f.inputs = true
		default:
			return nil, false
		}
	}
	if f.value == nil || kind(f.value) != "object" {
		return nil, false
	}
	entries, err := members(f.value)
	if err != nil || len(entries) == 0 {
		return nil, false
	}
	for _, e := range entries {
		if kind(e.value) != "object" {
			return nil, false
		}
		props, _ := members(e.value)
		if !slices.ContainsFunc(props, func(p member) bool {
			return p.key == "command" || p.key == "url" || p.key == "serverUrl" || p.key == "type"
		}) {
			return nil, false
		}
	}
	return f, true
}

// parseServersFile validates and converts an mcpServers document.
func parseServersFile(f *serversFile) ([]Server, []Warning, error) {
	var warns []Warning
	if f.inputs {
		warns = append(warns, Warning{Property: "inputs", Message: `"inputs" ignored: ${input:...} variables are not supported; put values in each server's "env"`})
	}
	switch kind(f.value) {
	case "object":
	case "null":
		return []Server{}, warns, nil
	default:
		return nil, warns, &Error{Message: fmt.Sprintf("%q must be an object keyed by server name, not %s", f.key, describe(f.value))}
	}
	ms, err := members(f.value)
	if err != nil {
		return nil, warns, &Error{Message: syntaxMessage(err), Err: err}
	}
	byName := make(map[string]*entry, len(ms))
	for _, m := range ms {
		if old, ok := byName[m.key]; ok {
			old.value, old.dup = m.value, true
			continue
		}
		byName[m.key] = &entry{name: m.key, value: m.value}
	}
	if len(byName) > MaxServers {
		return nil, warns, &Error{Message: fmt.Sprintf("%d servers given; at most %d are allowed", len(byName), MaxServers)}
	}
	entries := make([]*entry, 0, len(byName))
	for _, e := range byName {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.name, b.name) })

	servers := make([]Server, 0, len(entries))
	var errs []error
	var named []string // the names checkName let through
	for _, e := range entries {
		if err := checkName(e.name); err != nil {
			errs = append(errs, err)
			continue
		}
		named = append(named, e.name)
		if kind(e.value) != "object" {
			errs = append(errs, &Error{Server: e.name, Message: `the value must be a JSON object with "command" (a local server) or "url" (a remote one), not ` + describe(e.value)})
			continue
		}
		if err := e.split(); err != nil {
			errs = append(errs, &Error{Server: e.name, Message: syntaxMessage(err), Err: err})
			continue
		}
		if e.dup {
			warns = append(warns, Warning{Server: e.name, Message: "the name is given more than once; the last one is used"})
		}
		for _, p := range e.dupProps {
			warns = append(warns, Warning{Server: e.name, Property: p, Message: fmt.Sprintf("property %q is given more than once; the last one is used", p)})
		}
		s, known, skip, errs1 := convertServersEntry(e)
		switch {
		case skip != nil:
			warns = append(warns, *skip)
			continue
		case len(errs1) > 0:
			errs = append(errs, errs1...)
			continue
		}
		warns = append(warns, unknownProps(e, listed(known))...)
		servers = append(servers, s)
	}
	errs = append(errs, checkGatewayNames(named)...)
	if len(errs) > 0 {
		return nil, warns, joinErrors(errs)
	}
	return servers, warns, nil
}

// convertServersEntry turns one mcpServers entry into a Server; skip is set
// for a disabled one.
func convertServersEntry(e *entry) (s Server, known []string, skip *Warning, errs []error) {
	s.Name = e.name
	fail := func(prop, format string, args ...any) {
		errs = append(errs, &Error{Server: e.name, Property: prop, Message: fmt.Sprintf(format, args...)})
	}
	if raw, ok := e.props["disabled"]; ok {
		switch kind(raw) {
		case "boolean":
			if string(bytes.TrimSpace(raw)) == "true" {
				return s, nil, &Warning{Server: e.name, Property: "disabled", Message: `"disabled" is true; the server is skipped`}, nil
			}
		default:
			fail("disabled", `property "disabled" must be true or false, not %s`, describe(raw))
		}
	}
	transport, typ := "", ""
	if raw, ok := e.props["type"]; ok {
		typ, _ = jsonString(raw)
		switch typ {
		case "stdio":
		case "http", "streamable-http", "streamableHttp":
			transport = TransportHTTP
		case "sse":
			transport = TransportSSE
		default:
			fail("type", `property "type" must be "stdio", "http", "streamable-http" or "sse", not %s`, quoteRaw(raw))
		}
	}
	env, errs1 := envObject(e.name, "env", e.props["env"])
	errs = append(errs, errs1...)
	s.Env = env

	urlProp := ""
	for _, p := range []string{"url", "serverUrl"} {
		if e.has(p) {
			if urlProp != "" && !bytes.Equal(e.props[p], e.props[urlProp]) {
				fail(p, `properties "url" and "serverUrl" differ; give only one`)
			}
			if urlProp == "" {
				urlProp = p
			}
		}
	}
	switch {
	case e.has("command") && urlProp != "":
		fail("command", `properties "command" and %q cannot be given together; a server is local (command) or remote (url)`, urlProp)
		return s, nil, nil, errs
	case e.has("command"):
		if transport != "" {
			fail("type", `property "type" is %q, but the entry has "command"; a command server is "stdio"`, typ)
		}
		s.Kind = KindLocal
		s.Command, s.Dir, errs1 = commandEntry(e)
		errs = append(errs, errs1...)
		return s, commandEntryProps, nil, errs
	case urlProp != "":
		if typ == "stdio" {
			fail("type", `property "type" is "stdio", but the entry has %q; a remote server is "http" or "sse"`, urlProp)
		}
		s.Kind, s.Transport = KindRemote, transport
		u, err := remoteURL(e.name, urlProp, e.props[urlProp])
		errs = appendNonNil(errs, err)
		s.URL = u
		if raw, ok := e.props["headers"]; ok {
			h, errs1 := headerTemplates(e.name, "headers", raw)
			s.Headers = h
			errs = append(errs, errs1...)
		}
		return s, urlEntryProps, nil, errs
	}
	fail("", `an entry needs "command" (a local server) or "url" (a remote one)`)
	return s, nil, nil, errs
}

// commandEntry reads command, args and cwd: the argv runs as it is, without
// a shell.
func commandEntry(e *entry) (argv []string, dir string, errs []error) {
	fail := func(prop, format string, args ...any) {
		errs = append(errs, &Error{Server: e.name, Property: prop, Message: fmt.Sprintf(format, args...)})
	}
	cmd, ok := jsonString(e.props["command"])
	switch {
	case !ok || strings.TrimSpace(cmd) == "":
		fail("command", `property "command" must be a non-blank string`)
	case strings.IndexByte(cmd, 0) >= 0:
		fail("command", `property "command" must not contain a NUL character`)
	}
	argv = []string{cmd}
	if raw, ok := e.props["args"]; ok {
		args, bad, ok := stringList(raw)
		switch {
		case !ok && bad >= 0:
			fail("args", `property "args" must be an array of strings; item %d is %s`, bad, describeItem(raw, bad))
		case !ok:
			fail("args", `property "args" must be an array of strings, not %s`, describe(raw))
		case slices.ContainsFunc(args, func(a string) bool { return strings.IndexByte(a, 0) >= 0 }):
			fail("args", `property "args" must not contain a NUL character`)
		default:
			argv = append(argv, args...)
		}
	}
	if raw, ok := e.props["cwd"]; ok {
		d, ok := jsonString(raw)
		switch {
		case !ok:
			fail("cwd", `property "cwd" must be a string, not %s`, describe(raw))
		case !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0:
			fail("cwd", `property "cwd" must be an absolute path, not %q`, d)
		default:
			dir = d
		}
	}
	return argv, dir, errs
}

// describeItem names the JSON type of item i of a valid array.
func describeItem(raw []byte, i int) string {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || i >= len(items) {
		return "not a string"
	}
	return describe(items[i])
}

// envObject validates and decodes an env object of an mcpServers entry,
// with the rules of "envs".
func envObject(server, prop string, raw []byte) (map[string]string, []error) {
	if raw == nil {
		return nil, nil
	}
	if kind(raw) != "object" {
		return nil, []error{&Error{Server: server, Property: prop,
			Message: fmt.Sprintf("property %q must be an object of environment variable names to strings, not %s", prop, describe(raw))}}
	}
	ms, err := members(raw)
	if err != nil {
		return nil, []error{&Error{Server: server, Property: prop, Message: syntaxMessage(err), Err: err}}
	}
	var errs []error
	env := make(map[string]string, len(ms))
	for _, m := range ms {
		fail := func(format string, args ...any) {
			errs = append(errs, &Error{Server: server, Property: prop, Env: m.key, Message: fmt.Sprintf(format, args...)})
		}
		v, ok := jsonString(m.value)
		switch {
		case !isEnvName(m.key):
			fail(`env %q is not a valid name; use letters, digits and "_", not starting with a digit`, m.key)
		case !ok:
			fail("env %q must be a string, not %s", m.key, describe(m.value))
		case strings.IndexByte(v, 0) >= 0:
			fail("env %q must not contain a NUL character", m.key)
		default:
			env[m.key] = v
		}
	}
	if len(errs) > 0 || len(env) == 0 {
		return nil, errs
	}
	return env, nil
}
