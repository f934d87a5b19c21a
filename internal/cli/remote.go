package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// checkRemotes applies the address checks to every remote server's URL and,
// in the sandbox launcher (secrets only from envs), resolves its headers, so
// a bad URL or a missing secret fails before anything starts.
func checkRemotes(ctx context.Context, specs []mcpconfig.Server, guard *netguard.Policy, envsOnly bool) error {
	for _, s := range specs {
		if s.Kind != mcpconfig.KindRemote {
			continue
		}
		if err := guard.CheckURL(ctx, s.Name, s.URL); err != nil {
			return err // it names the server
		}
		if envsOnly {
			if _, err := s.ResolveHeaders(nil); err != nil {
				return err
			}
			if _, err := s.ResolveOAuth(nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// secretLookup resolves a ${NAME} placeholder of a remote server's header in
// serve mode: the server's envs, then the environment, then the secrets file.
func secretLookup(s mcpconfig.Server, secrets map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := s.Env[name]; ok {
			return v, true
		}
		if v, ok := os.LookupEnv(name); ok && name != tokenEnv {
			return v, true
		}
		v, ok := secrets[name]
		return v, ok
	}
}

// readSecrets reads NAME=value lines (blank lines and # comments skipped)
// from a file only its owner may read.
func readSecrets(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets file %s has mode %o: make it readable by its owner only (chmod 600)", path, fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	defer f.Close()
	secrets := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("secrets file %s, line %d: want NAME=value", path, n)
		}
		secrets[strings.TrimSpace(name)] = value
	}
	return secrets, sc.Err()
}

func clientInfo() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":"mcp-gateway","version":%q}`, version()))
}
