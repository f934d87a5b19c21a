package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeN(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := l.Write(&Record{Type: "call", Server: "memory", Name: "read_graph", Decision: "allow", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
}

func TestVerifyDetectsTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(ls [][]byte) [][]byte
		want   string
	}{
		{"intact", func(ls [][]byte) [][]byte { return ls }, ""},
		{"edited", func(ls [][]byte) [][]byte {
			ls[2] = bytes.Replace(ls[2], []byte(`"allow"`), []byte(`"deny"`), 1)
			return ls
		}, "edited"},
		{"edited last", func(ls [][]byte) [][]byte {
			ls[4] = bytes.Replace(ls[4], []byte(`"read_graph"`), []byte(`"delete_all"`), 1)
			return ls
		}, "edited"},
		{"deleted", func(ls [][]byte) [][]byte { return append(ls[:2:2], ls[3:]...) }, "removed"},
		{"swapped", func(ls [][]byte) [][]byte { ls[1], ls[2] = ls[2], ls[1]; return ls }, "moved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			writeN(t, l, 5)
			l.Close()
			ls := c.tamper(lines(t, path))
			if err := os.WriteFile(path, bytes.Join(ls, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := Verify(Files(path)...)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, p := range res.Problems {
				msgs = append(msgs, p.String())
			}
			got := strings.Join(msgs, "\n")
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("problems %q, want one mentioning %q", got, c.want)
			}
		})
	}
}

func TestRotationKeepsTheChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{MaxBytes: 600, Keep: 50})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 20)
	l.Close()
	// Reopening continues the chain.
	l, err = Open(path, Options{MaxBytes: 600, Keep: 50})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 3)
	l.Close()
	files := Files(path)
	if len(files) < 3 {
		t.Fatalf("expected rotation into several files, got %v", files)
	}
	res, err := Verify(files...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 || res.Records != 23 || res.First != Genesis {
		t.Fatalf("records %d first %s problems %v", res.Records, res.First, res.Problems)
	}
	// Removing a rotated file in the middle breaks the chain.
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	res, err = Verify(append(files[:1:1], files[2:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) == 0 {
		t.Fatal("a missing rotated file went unnoticed")
	}
}

func TestArgumentsNeverInFullByDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"query":"secret-ish"}`)
	if err := l.Write(&Record{Type: "call", ArgsSHA256: HashArguments(args)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := os.ReadFile(path)
	if bytes.Contains(b, []byte("secret-ish")) || !bytes.Contains(b, []byte(HashArguments(args))) {
		t.Fatalf("record %s", b)
	}
}

// A record longer than the tail Open reads first (a call's arguments in
// full) must still be found: otherwise the chain restarts at Genesis after
// a restart and Verify reports it broken.
func TestOpenContinuesAfterALongRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{Arguments: true})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 2)
	big := []byte(`{"text":"` + strings.Repeat("x", 200<<10) + `"}`)
	if err := l.Write(&Record{Type: "call", Server: "everything", Name: "echo", Args: big}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = Open(path, Options{Arguments: true})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 1)
	l.Close()
	res, err := Verify(Files(path)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 || res.Records != 4 {
		t.Fatalf("after a restart following a long record: %d records, problems %v", res.Records, res.Problems)
	}
}
