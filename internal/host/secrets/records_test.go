package secrets

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An entry of secrets.json that is not a well-formed record stops Open,
// naming the entry and what is wrong with it; the files are left as they are.
func TestOpenRefusesMalformedEntries(t *testing.T) {
	nonce := base64.StdEncoding.EncodeToString(make([]byte, nonceSize))
	short := base64.StdEncoding.EncodeToString(make([]byte, 4))
	ct := base64.StdEncoding.EncodeToString([]byte("sealed"))
	hash := strings.Repeat("ab", 32)
	entry := func(name, binding, nonce, ct, setAt string) string {
		return `{"name":"` + name + `","binding_sha256":"` + binding + `","nonce":"` + nonce + `","ciphertext":"` + ct + `","set_at":"` + setAt + `"}`
	}
	good := entry("mcp:a:b", hash, nonce, ct, "2026-01-02T03:04:05Z")
	tests := []struct {
		name, entries, want string
	}{
		{"binding not hex", entry("mcp:a:b", "zz", nonce, ct, "2026-01-02T03:04:05Z"), "entry 0: mcp:a:b: binding_sha256 is not a SHA-256 in hex; it was left untouched: fix or remove the entry"},
		{"binding too short", entry("mcp:a:b", "abcd", nonce, ct, "2026-01-02T03:04:05Z"), "entry 0: mcp:a:b: binding_sha256 is not a SHA-256 in hex"},
		{"short nonce", entry("mcp:a:b", hash, short, ct, "2026-01-02T03:04:05Z"), "entry 0: mcp:a:b: the nonce has 4 bytes, not 12"},
		{"no ciphertext", entry("mcp:a:b", hash, nonce, "", "2026-01-02T03:04:05Z"), "entry 0: mcp:a:b: the ciphertext is empty"},
		{"bad time", entry("mcp:a:b", hash, nonce, ct, "yesterday"), `entry 0: mcp:a:b: set_at: parsing time "yesterday"`},
		{"twice", good + "," + good, "entry 1: mcp:a:b appears twice; it was left untouched: remove one of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := `{"version":1,"secrets":[` + tt.entries + `]}`
			if err := os.WriteFile(filepath.Join(dir, SecretsFile), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, KeyFile), validKey(), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, SecretsFile)+": "+tt.want) {
				t.Errorf("Open: %v\nwant it to say %q", err, tt.want)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, SecretsFile)); string(b) != data {
				t.Errorf("secrets.json was changed: %s", b)
			}
		})
	}
}

// Remove refuses a malformed name and says when there is nothing to remove.
func TestRemoveErrors(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Remove("token"); err == nil || !strings.HasPrefix(err.Error(), `secret name "token": it does not start with "mcp:"`) {
		t.Errorf("bad name: %v", err)
	}
	err := s.Remove("mcp:a:b")
	if !errors.Is(err, ErrNotSet) || err.Error() != "secret mcp:a:b: not set" {
		t.Errorf("not set: %v", err)
	}
	if err := s.Set("mcp:a:b", "bind", "v"); err != nil {
		t.Fatal(err)
	}
	if !s.Has("mcp:a:b") || s.Has("mcp:a:c") {
		t.Error("Has")
	}
	if err := s.Remove("mcp:a:b"); err != nil || s.Has("mcp:a:b") {
		t.Errorf("remove: %v", err)
	}
	if s2 := openStore(t, dir); s2.Has("mcp:a:b") {
		t.Error("a removed secret is back after reopening")
	}
}

// Open refuses an empty directory name.
func TestOpenEmptyDir(t *testing.T) {
	if _, err := Open(""); err == nil || err.Error() != "secrets: the host state directory is empty" {
		t.Errorf("Open(\"\"): %v", err)
	}
}
