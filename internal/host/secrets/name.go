package secrets

import (
	"fmt"
	"strings"
)

// namePrefix starts every secret name: mcp:<server>:<key>.
const namePrefix = "mcp:"

// ParseName splits a secret name of the form mcp:<server>:<key> into its
// server and key. Both must be non-empty and made of letters, digits, '.',
// '-' and '_'.
func ParseName(name string) (server, key string, err error) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return "", "", nameError(name, "it does not start with \"mcp:\"")
	}
	server, key, ok = strings.Cut(rest, ":")
	if !ok {
		return "", "", nameError(name, "it has no key after the server")
	}
	if err := checkPart(name, "server", server); err != nil {
		return "", "", err
	}
	if err := checkPart(name, "key", key); err != nil {
		return "", "", err
	}
	return server, key, nil
}

func checkPart(name, what, part string) error {
	if part == "" {
		return nameError(name, "the "+what+" is empty")
	}
	for _, r := range part {
		if !nameRune(r) {
			return nameError(name, fmt.Sprintf("the %s %q has the character %q", what, part, r))
		}
	}
	return nil
}

func nameRune(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	case r == '.', r == '-', r == '_':
		return true
	}
	return false
}

func nameError(name, problem string) error {
	return fmt.Errorf("secret name %q: %s; expected mcp:<server>:<key>, both made of letters, digits, '.', '-' and '_' (for example mcp:github:token)", name, problem)
}
