package github

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// makeRepo creates a git repository at base/owner/name.git with one file.
func makeRepo(t *testing.T, base, owner, name string) {
	t.Helper()
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "server.sh"), []byte("echo hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(base, owner, name+".git")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "add", "."},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
		{"clone", "-q", "--bare", work, bare},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func TestPrepare(t *testing.T) {
	base := t.TempDir()
	makeRepo(t, base, "acme", "tool")
	dir := t.TempDir()
	var log bytes.Buffer
	opts := Options{Dir: dir, BaseURL: "file://" + base, Env: os.Environ(), Output: &log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	got, err := Prepare(ctx, Repo{Server: "github/acme/tool", Owner: "acme", Name: "tool", InstallCmd: "echo installed > installed.txt; echo done-install"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "acme", "tool"); got != want {
		t.Errorf("dir = %s, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(got, "installed.txt")); err != nil || string(b) != "installed\n" {
		t.Errorf("installCmd did not run in the clone: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(got, "server.sh")); err != nil {
		t.Errorf("clone lacks the repository's file: %v", err)
	}
	if !strings.Contains(log.String(), "[github/acme/tool] done-install") {
		t.Errorf("install output not prefixed in the log:\n%s", log.String())
	}

	// A second prepare reuses the clone without installing again.
	os.Remove(filepath.Join(got, "installed.txt"))
	if _, err := Prepare(ctx, Repo{Server: "github/acme/tool", Owner: "acme", Name: "tool", InstallCmd: "touch installed.txt"}, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(got, "installed.txt")); err == nil {
		t.Error("installCmd ran again for a prepared repository")
	}
}

func TestPrepareFailureLeavesNothing(t *testing.T) {
	base := t.TempDir()
	makeRepo(t, base, "acme", "tool")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := Options{Dir: dir, BaseURL: "file://" + base, Env: os.Environ()}

	_, err := Prepare(ctx, Repo{Server: "github/acme/tool", Owner: "acme", Name: "tool", InstallCmd: "echo cannot build >&2; exit 3"}, opts)
	if err == nil {
		t.Fatal("want an error from a failing installCmd")
	}
	for _, want := range []string{`mcp server "github/acme/tool": installCmd failed`, "exit status 3", "cannot build"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "acme"))
	if len(entries) != 0 {
		t.Errorf("a failed install left %v behind", entries)
	}

	_, err = Prepare(ctx, Repo{Server: "github/acme/missing", Owner: "acme", Name: "missing"}, opts)
	if err == nil || !strings.Contains(err.Error(), `mcp server "github/acme/missing": cloning`) {
		t.Errorf("missing repository: error = %v", err)
	}
	entries, _ = os.ReadDir(filepath.Join(dir, "acme"))
	if len(entries) != 0 {
		t.Errorf("a failed clone left %v behind", entries)
	}
}
