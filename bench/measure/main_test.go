package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, src string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMeasure(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go.mod", "module example.com/m\n")
	write(t, root, "a/a.go", "package a\n\ntype T[K any] struct{}\n\nfunc (t *T[K]) Long() {\n\t_ = 1\n\t_ = 2\n}\n")
	write(t, root, "a/a_test.go", "package a\n\nfunc TestX() {\n\t_ = 1\n\t_ = 2\n\t_ = 3\n}\n")
	write(t, root, "b/b.go", "package b\n\nfunc Short() {}\n")
	write(t, root, "a/testdata/skip.go", "package skip\n\nfunc Skipped() {\n\t_ = 1\n\t_ = 2\n\t_ = 3\n\t_ = 4\n}\n")
	write(t, root, ".hidden/h.go", "package h\n")

	m, err := measure(root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 8, "b": 3}
	if len(m.lines) != len(want) {
		t.Errorf("packages %v, want %v", m.lines, want)
	}
	for p, n := range want {
		if m.lines[p] != n {
			t.Errorf("lines of %s: %d, want %d", p, m.lines[p], n)
		}
	}

	var out strings.Builder
	m.print(&out, 1)
	for _, s := range []string{"     11  total, 2 packages", "      4  a T.Long  (" + filepath.Join("a", "a.go") + ":5)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "Short") {
		t.Errorf("-top 1 listed a second function:\n%s", out.String())
	}
}

func TestRunErrors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "bad/bad.go", "package bad\n\nfunc {\n")
	var out strings.Builder
	if err := run([]string{root}, &out); err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Errorf("a file that does not parse: err %v, want one naming the file", err)
	}
	if err := run([]string{filepath.Join(root, "missing")}, &out); err == nil {
		t.Error("a missing directory: no error")
	}
	if err := run([]string{root, root}, &out); err == nil {
		t.Error("two directories: no error")
	}
}
