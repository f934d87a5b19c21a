package gateway

import "strings"

// PrefixMode says when an exposed name carries its server's name.
type PrefixMode string

const (
	// PrefixCollisions is the sandbox contract's rule: servers in sorted order,
	// the first server with a name keeps it, later ones get "<server>_<name>".
	PrefixCollisions PrefixMode = ""
	// PrefixAlways exposes every name as "<server>_<name>".
	PrefixAlways PrefixMode = "always"
	// PrefixNever exposes original names only; a name already taken is skipped.
	PrefixNever PrefixMode = "never"
)

// serverPrefix turns a server name into a name prefix: every character
// outside [A-Za-z0-9_.-] becomes '_' (so "github/o/r" becomes "github_o_r").
func serverPrefix(server string) string {
	var b strings.Builder
	b.Grow(len(server))
	for i := 0; i < len(server); i++ {
		c := server[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// candidates returns the names to try, in order, for an item of a server.
func (m PrefixMode) candidates(server, name string) []string {
	prefixed := serverPrefix(server) + "_" + name
	switch m {
	case PrefixAlways:
		return []string{prefixed}
	case PrefixNever:
		return []string{name}
	default:
		return []string{name, prefixed}
	}
}
