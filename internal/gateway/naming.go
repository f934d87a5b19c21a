package gateway

import "strings"

// PrefixMode says when an exposed name carries its server's name.
type PrefixMode string

const (
	// PrefixCollisions is the sandbox contract's rule: servers in sorted order,
	// the first server with a name keeps it, later ones get "<server>_<name>".
	// A server added to a running gateway comes after every server already
	// there: a name once exposed stays with its server until that server is
	// removed (see nameClaims).
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

// claim is the item an exposed name was given to: a server's tool or prompt
// by its original name.
type claim struct {
	server   *server
	original string
}

// nameClaims holds every name exposed so far for one kind, by exposed name.
// A name stays claimed while its server is in the router, even while that
// server is down or no longer lists the item, so no other server takes it
// meanwhile; it is released when the server is removed.
type nameClaims map[string]claim

// byOwner is the inverse: the name each item holds.
func (c nameClaims) byOwner() map[claim]string {
	out := make(map[claim]string, len(c))
	for name, owner := range c {
		if prev, ok := out[owner]; !ok || name < prev {
			out[owner] = name
		}
	}
	return out
}

// release forgets the names of a removed server.
func (c nameClaims) release(s *server) {
	for name, owner := range c {
		if owner.server == s {
			delete(c, name)
		}
	}
}
