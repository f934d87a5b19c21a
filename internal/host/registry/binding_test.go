package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret is bound to its server's endpoint: the URL of a remote server,
// the whole command line of a local one, so changing either one stops the
// secret from being sent.
func TestBinding(t *testing.T) {
	tests := []struct {
		a, b Server
		same bool
	}{
		{Server{URL: "https://a/mcp"}, Server{URL: "https://a/mcp", Headers: map[string]string{"X": "y"}}, true},
		{Server{URL: "https://a/mcp"}, Server{URL: "https://b/mcp"}, false},
		{Server{Command: "npx", Args: []string{"-y", "pkg"}}, Server{Command: "npx", Args: []string{"-y", "pkg"}, Env: map[string]string{"A": "1"}}, true},
		{Server{Command: "npx", Args: []string{"-y", "pkg"}}, Server{Command: "npx", Args: []string{"-y", "other"}}, false},
		{Server{Command: "a b"}, Server{Command: "a", Args: []string{"b"}}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Binding() == tt.b.Binding(); got != tt.same {
			t.Errorf("%+v and %+v: same binding %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	if !(&Server{URL: "u"}).Remote() || (&Server{Command: "c"}).Remote() {
		t.Error("Remote")
	}
}

// Open makes a state directory others can read owner-only, and a sandbox
// entry under another name is refused like a server's.
func TestOpenTightensTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %o, want 700", fi.Mode().Perm())
	}
	if s.Dir() != dir {
		t.Errorf("Dir() = %q", s.Dir())
	}
	os.WriteFile(filepath.Join(dir, StateFile), []byte(`{"version":1,"sandboxes":{"a":{"name":"b","mode":"static"}}}`), 0o600)
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), `sandbox entry "a" does not carry its own name`) {
		t.Errorf("Load: %v", err)
	}
	// Save into a directory that is gone says where it failed.
	os.RemoveAll(dir)
	if err := s.Save(&State{}); err == nil || !strings.HasPrefix(err.Error(), "writing "+filepath.Join(dir, StateFile)+": ") {
		t.Errorf("Save into a removed directory: %v", err)
	}
}
