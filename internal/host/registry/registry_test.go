package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Load()
	if err != nil || len(st.Servers) != 0 || len(st.Sandboxes) != 0 {
		t.Fatalf("a new directory: %+v, %v", st, err)
	}
	st.Servers["everything"] = &Server{Name: "everything", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${api-key}"}, Added: time.Unix(1, 0).UTC()}
	st.Sandboxes["dev"] = &Sandbox{Name: "dev", Mode: ModeDynamic, TokenHash: "ab", Servers: []string{"everything"}}
	if err := s.Save(st); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got.Servers["everything"].Headers["Authorization"] != "Bearer ${api-key}" || got.Sandboxes["dev"].Servers[0] != "everything" {
		t.Errorf("loaded %+v", got)
	}
	fi, err := os.Stat(filepath.Join(dir, StateFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %o", fi.Mode().Perm())
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another mcp-gateway host (pid ") {
		t.Errorf("second Open: %v", err)
	}
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Errorf("Open after Close: %v", err)
	} else {
		s2.Close()
	}
}

func TestCorruptStateIsReportedAndKept(t *testing.T) {
	cases := map[string]struct{ data, want string }{
		"truncated":  {`{"version":1,"servers":{`, "not valid JSON"},
		"wrong type": {`{"version":1,"servers":[]}`, "not a valid state"},
		"version":    {`{"version":7}`, "format version 7"},
		"name":       {`{"version":1,"servers":{"a":{"name":"b"}}}`, `server entry "a" does not carry its own name`},
		"mode":       {`{"version":1,"sandboxes":{"a":{"name":"a","mode":"x"}}}`, `mode "x"`},
		"trailing":   {`{"version":1} {}`, "not valid JSON at byte 15"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, StateFile)
			os.WriteFile(path, []byte(c.data), 0o600)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Load()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "left untouched") {
				t.Errorf("Load: %v, want an error with %q", err, c.want)
			}
			if b, _ := os.ReadFile(path); string(b) != c.data {
				t.Errorf("the file was changed to %q", b)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"memory", "a.b-c_d", "X1"} {
		if err := ValidName("server", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                      "server name is empty",
		"a/b":                   `server name "a/b": use only letters, digits, '.', '-' and '_'`,
		"a b":                   "use only",
		"..":                    "reserved",
		strings.Repeat("a", 65): "longer than 64",
	} {
		if err := ValidName("server", name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", name, err, want)
		}
	}
}

// Holder tells a held state directory (with the holder's pid) from a free one.
func TestHolder(t *testing.T) {
	dir := t.TempDir()
	if _, held := Holder(dir); held {
		t.Error("a directory without a lock file is held")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if pid, held := Holder(dir); !held || pid != strconv.Itoa(os.Getpid()) {
		t.Errorf("Holder of an open store = %q %v, want this pid", pid, held)
	}
	s.Close()
	if _, held := Holder(dir); held {
		t.Error("a closed store's directory is still held")
	}
}
