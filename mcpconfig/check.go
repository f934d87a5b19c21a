package mcpconfig

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Limits of the mcp object (contract: "The platform side").
const (
	MaxServers = 64  // servers in one mcp object
	MaxNameLen = 128 // bytes in one server name
)

// Check applies exactly the rules by which a sandbox API rejects a malformed
// mcp object with HTTP 400, before it creates anything:
//
//   - the object is not a JSON object (null is allowed);
//   - it has more than MaxServers servers;
//   - a name is empty, longer than MaxNameLen bytes, or has a control character;
//   - an entry is not an object (null is allowed);
//   - a key starting "github/" is not github/<owner>/<repo>;
//   - a GitHub entry, or any entry with runCmd, whose runCmd is not a
//     non-blank string;
//   - installCmd is not a string;
//   - envs is not an object, has a name not matching [A-Za-z_][A-Za-z0-9_]*,
//     or a value that is not a string.
//
// run_cmd and install_cmd (E2B's Python spelling) are checked like runCmd and
// installCmd; a property whose value is null counts as absent. Names not in
// any catalog pass: the gateway, which knows its catalog, decides. Every
// object Check rejects, Parse rejects with the same message.
//
// A document in the mcpServers format gets all of Parse's rules for that
// format, since none of them depends on the catalog.
func Check(data []byte) error {
	if servers, ok := isServersFile(data); ok {
		_, _, err := parseServersFile(servers)
		return err
	}
	cfg, err := parseObject(data)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range cfg.entries {
		errs = append(errs, checkEntry(e)...)
	}
	return joinErrors(errs)
}

// object is the mcp object split into entries.
type object struct {
	entries []*entry // sorted by name; one per name, the last one given
}

// entry is one server entry of the mcp object.
type entry struct {
	name     string
	value    []byte
	dup      bool              // the name was given more than once
	props    map[string][]byte // the members of value, null ones left out; nil if value is no object
	keys     []string          // the keys of props, sorted
	dupProps []string          // keys given more than once, sorted
}

func (e *entry) has(key string) bool {
	_, ok := e.props[key]
	return ok
}

// parseObject checks the object as a whole and splits it into entries.
func parseObject(data []byte) (*object, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, &Error{Message: `the config is empty; want a JSON object keyed by server name, e.g. {"memory":{}}`}
	}
	if err := checkSyntax(data); err != nil {
		return nil, &Error{Message: syntaxMessage(err), Err: err}
	}
	switch kind(data) {
	case "null":
		return &object{}, nil
	case "object":
	default:
		return nil, &Error{Message: "the config must be a JSON object keyed by server name, not " + describe(data)}
	}
	ms, err := members(data)
	if err != nil {
		return nil, &Error{Message: syntaxMessage(err), Err: err}
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
		return nil, &Error{Message: fmt.Sprintf("%d servers given; at most %d are allowed", len(byName), MaxServers)}
	}
	cfg := &object{entries: make([]*entry, 0, len(byName))}
	for _, e := range byName {
		if err := e.split(); err != nil {
			return nil, &Error{Server: e.name, Message: syntaxMessage(err), Err: err}
		}
		cfg.entries = append(cfg.entries, e)
	}
	slices.SortFunc(cfg.entries, func(a, b *entry) int { return strings.Compare(a.name, b.name) })
	return cfg, nil
}

// split fills props, keys and dupProps from value.
func (e *entry) split() error {
	if kind(e.value) != "object" {
		return nil
	}
	ms, err := members(e.value)
	if err != nil {
		return err
	}
	e.props = make(map[string][]byte, len(ms))
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] && !slices.Contains(e.dupProps, m.key) {
			e.dupProps = append(e.dupProps, m.key)
		}
		seen[m.key] = true
		if isNull(m.value) {
			delete(e.props, m.key)
			continue
		}
		e.props[m.key] = m.value
	}
	for k := range e.props {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys)
	slices.Sort(e.dupProps)
	return nil
}

// checkEntry applies Check's rules to one entry.
func checkEntry(e *entry) []error {
	if err := checkName(e.name); err != nil {
		return []error{err}
	}
	if k := kind(e.value); k != "object" && k != "null" {
		return []error{&Error{Server: e.name, Message: "the value must be a JSON object (or null), not " + describe(e.value)}}
	}
	var errs []error
	if strings.HasPrefix(e.name, githubPrefix) {
		if _, _, ok := splitGitHub(e.name); !ok {
			return []error{&Error{Server: e.name, Message: `a GitHub server is named github/<owner>/<repo>, owner and repo made of letters, digits, "_", "." and "-" (and not "." or "..")`}}
		}
		if !e.has("runCmd") && !e.has("run_cmd") {
			errs = append(errs, &Error{Server: e.name, Property: "runCmd", Message: `property "runCmd" is required`})
		}
	}
	for _, p := range []string{"runCmd", "run_cmd"} {
		if raw, ok := e.props[p]; ok {
			if s, ok := jsonString(raw); !ok || strings.TrimSpace(s) == "" {
				errs = append(errs, &Error{Server: e.name, Property: p, Message: fmt.Sprintf("property %q must be a non-blank string", p)})
			}
		}
	}
	for _, p := range []string{"installCmd", "install_cmd"} {
		if raw, ok := e.props[p]; ok && kind(raw) != "string" {
			errs = append(errs, &Error{Server: e.name, Property: p, Message: fmt.Sprintf("property %q must be a string", p)})
		}
	}
	if raw, ok := e.props["envs"]; ok {
		errs = append(errs, checkEnvs(e.name, raw)...)
	}
	return errs
}

// checkName applies the rules for a server name.
func checkName(name string) error {
	if name == "" {
		return &Error{Message: `a server name is empty; name each server, e.g. "memory"`}
	}
	if len(name) > MaxNameLen {
		return &Error{Server: name, Message: fmt.Sprintf("the name is %d bytes long; at most %d are allowed", len(name), MaxNameLen)}
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return &Error{Server: name, Message: "the name contains a control character"}
	}
	return nil
}

const githubPrefix = "github/"

// splitGitHub splits a name github/<owner>/<repo>.
func splitGitHub(name string) (owner, repo string, ok bool) {
	rest, ok := strings.CutPrefix(name, githubPrefix)
	if !ok {
		return "", "", false
	}
	owner, repo, ok = strings.Cut(rest, "/")
	if !ok || !isRepoPart(owner) || !isRepoPart(repo) {
		return "", "", false
	}
	return owner, repo, true
}

// isRepoPart reports whether s is a valid GitHub owner or repository name:
// [A-Za-z0-9_.-]+, not "." or "..".
func isRepoPart(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// checkEnvs applies the rules for an envs value.
func checkEnvs(server string, raw []byte) []error {
	if kind(raw) != "object" {
		return []error{&Error{Server: server, Property: "envs", Message: `property "envs" must be an object of environment variable names to strings, not ` + describe(raw)}}
	}
	ms, err := members(raw)
	if err != nil { // cannot happen: the whole object was valid JSON
		return []error{&Error{Server: server, Property: "envs", Message: syntaxMessage(err), Err: err}}
	}
	var errs []error
	for _, m := range ms {
		if !isEnvName(m.key) {
			errs = append(errs, &Error{Server: server, Property: "envs", Env: m.key,
				Message: fmt.Sprintf(`env %q is not a valid name; use letters, digits and "_", not starting with a digit`, m.key)})
			continue
		}
		if kind(m.value) != "string" {
			errs = append(errs, &Error{Server: server, Property: "envs", Env: m.key,
				Message: fmt.Sprintf("env %q must be a string, not %s", m.key, describe(m.value))})
		}
	}
	return errs
}

// isEnvName reports whether s matches ^[A-Za-z_][A-Za-z0-9_]*$.
func isEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
