package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteTokenFile(t *testing.T) {
	t.Run("new directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "etc", "mcp-gateway", ".token")
		if err := WriteTokenFile(path, "first"); err != nil {
			t.Fatal(err)
		}
		// Replacing a file that a user loosened keeps 0600.
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WriteTokenFile(path, testToken); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != testToken {
			t.Errorf("token file holds %q, want %q", b, testToken)
		}
		if m := fileMode(t, path); m != 0o600 {
			t.Errorf("file mode %o, want 600", m)
		}
		if m := fileMode(t, filepath.Dir(path)); m != 0o700 {
			t.Errorf("directory mode %o, want 700", m)
		}
		entries, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Errorf("directory holds %v, want only the token file (no temporary files left)", entries)
		}
	})
	t.Run("existing directory keeps its mode", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, ".token")
		if err := WriteTokenFile(path, testToken); err != nil {
			t.Fatal(err)
		}
		if m := fileMode(t, dir); m != 0o755 {
			t.Errorf("directory mode changed to %o", m)
		}
		if m := fileMode(t, path); m != 0o600 {
			t.Errorf("file mode %o, want 600", m)
		}
	})
	t.Run("empty token", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), ".token")
		if err := WriteTokenFile(path, ""); err == nil {
			t.Fatal("wrote an empty token")
		}
		assertGone(t, path)
	})
}

func TestPIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "mcp-gateway.pid")
	if err := WritePIDFile(path, 4242); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "4242\n" {
		t.Errorf("pid file holds %q", b)
	}
	if m := fileMode(t, path); m != 0o644 {
		t.Errorf("pid file mode %o, want 644", m)
	}
	if err := RemovePIDFile(path, 4243); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("RemovePIDFile removed another pid's file: %v", err)
	}
	if err := RemovePIDFile(path, 4242); err != nil {
		t.Fatal(err)
	}
	assertGone(t, path)
	if err := RemovePIDFile(path, 4242); err != nil {
		t.Errorf("removing a missing pid file: %v", err)
	}
}

func TestRunningMissingFile(t *testing.T) {
	if pid, ok := Running(filepath.Join(t.TempDir(), "none.pid")); ok {
		t.Errorf("Running = %d, true without a pid file", pid)
	}
}

func TestReadStat(t *testing.T) {
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() {
		t.Errorf("ppid %d, want %d", st.ppid, os.Getppid())
	}
	if st.state != 'R' && st.state != 'S' {
		t.Errorf("state %c for a running test", st.state)
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	old := "line from an earlier launch\n"
	var b strings.Builder
	b.WriteString(old)
	for i := range 40 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	tail := logTail(path, int64(len(old)))
	if len(tail) != logTailLines || tail[0] != "line 10" || tail[len(tail)-1] != "line 39" {
		t.Errorf("tail = %q, want lines 10 to 39", tail)
	}
	if got := logTail(path, int64(b.Len())); got != nil {
		t.Errorf("tail of nothing new = %q", got)
	}
	if got := logTail(filepath.Join(t.TempDir(), "missing"), 0); got != nil {
		t.Errorf("tail of a missing log = %q", got)
	}

	// A line longer than what is read is dropped, not shown cut.
	long := strings.Repeat("x", logTailBytes) + "\nlast\n"
	if err := os.WriteFile(path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, 0); len(got) != 1 || got[0] != "last" {
		t.Errorf("tail = %.40q, want [last]", got)
	}
}
