package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// A chain whose head is cut fails (it does not start at its genesis)
// unless given the hash it should start from.
func TestVerifyCutHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 5)
	l.Close()
	ls := lines(t, path)
	_, _, cutHash, _ := parseLine(bytes.TrimRight(ls[1], "\n"))
	if err := os.WriteFile(path, bytes.Join(ls[2:], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := VerifyLog(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0].String(), path+":1: the chain does not start at its genesis") ||
		!strings.Contains(res.Problems[0].String(), cutHash) {
		t.Fatalf("problems %v, want one: not starting at the genesis, naming prev %s", res.Problems, cutHash)
	}
	if res, _ = VerifyLog(path, cutHash); len(res.Problems) != 0 || res.First != cutHash || res.Records != 3 {
		t.Fatalf("--from the cut record's hash: %+v", res)
	}
	if res, _ = VerifyLog(path, strings.Repeat("ab", 32)); len(res.Problems) != 1 || !strings.Contains(res.Problems[0].What, "(--from)") {
		t.Fatalf("--from another hash: %v", res.Problems)
	}
}

// A rotated file removed between others is reported by name, and the
// files after it are still read.
func TestVerifyMissingRotatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{MaxBytes: 600, Keep: 50})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 20)
	l.Close()
	files := Files(path)
	if len(files) < 4 {
		t.Fatalf("want at least 3 rotated files, got %v", files)
	}
	if err := os.Remove(path + ".2"); err != nil {
		t.Fatal(err)
	}
	if got := Files(path); len(got) != len(files)-1 || got[0] != files[0] {
		t.Fatalf("Files after removing FILE.2: %v, want every other file (from %v)", got, files)
	}
	res, err := VerifyLog(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) == 0 || res.Problems[0].String() != path+".2: missing: a rotated file was removed (rotated files after it exist), so the records it held are gone" {
		t.Fatalf("problems %v, want the first naming %s.2 missing", res.Problems, path)
	}
}

// The audit file, its lock and its newest rotated file are never opened
// through a symbolic link, and must be regular files.
func TestOpenRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "audit file "+path+" is a symbolic link") {
		t.Fatalf("err %v, want a refusal of the link", err)
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Fatal("the link's target was written")
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fifo, Options{}); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Fatalf("a fifo: err %v", err)
	}
}

// One writer: a second Open of the same file (another gateway) is
// refused, naming the file and the holder's pid, until the first closes.
func TestOpenLocksOneWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	want := fmt.Sprintf("audit file %s is locked by another gateway (pid %d", path, os.Getpid())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("second open: err %v, want %q", err, want)
	}
	writeN(t, l, 2)
	l.Close()
	l2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	writeN(t, l2, 1)
	l2.Close()
	if res, _ := VerifyLog(path, ""); len(res.Problems) != 0 || res.Records != 3 {
		t.Fatalf("chain %+v", res)
	}
}

// When rotation drops the oldest file the gateway logs the hash the kept
// files start from; verify --from that hash passes, without it fails.
func TestRotationDropLogsTheHashToStartFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var log bytes.Buffer
	l, err := Open(path, Options{MaxBytes: 200, Keep: 2, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, l, 8)
	l.Close()
	var from string
	for line := range strings.Lines(log.String()) {
		var m struct{ Msg, From string }
		if json.Unmarshal([]byte(line), &m) == nil && strings.Contains(m.Msg, "oldest rotated file is dropped") {
			from = m.From // the last one logged
		}
	}
	if len(from) != 64 {
		t.Fatalf("no hash logged when the oldest file was dropped:\n%s", log.String())
	}
	if res, _ := VerifyLog(path, ""); len(res.Problems) != 1 || !strings.Contains(res.Problems[0].What, "does not start at its genesis") {
		t.Fatalf("without --from: %v", res.Problems)
	}
	if res, _ := VerifyLog(path, from); len(res.Problems) != 0 {
		t.Fatalf("--from the logged hash: %v", res.Problems)
	}
}
