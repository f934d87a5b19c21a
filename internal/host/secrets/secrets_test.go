package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	githubToken   = "mcp:github:token"
	githubBinding = "https://api.githubcopilot.com/mcp/"
	// A value unlikely to appear in any file by chance.
	secretValue = "ghp_Zq8vT3xWm2LpR7nK4cY9bJ6dF1sH5gA0eU"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

func TestRoundTripAcrossOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := openStore(t, dir)
	if err := s.Set(githubToken, githubBinding, secretValue); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(githubToken, githubBinding)
	if err != nil || got != secretValue {
		t.Fatalf("Get = %q, %v; want %q", got, err, secretValue)
	}

	// A second Open (the daemon restarted) reads the same key and file.
	got, err = openStore(t, dir).Get(githubToken, githubBinding)
	if err != nil || got != secretValue {
		t.Fatalf("after reopen: Get = %q, %v; want %q", got, err, secretValue)
	}
}

func TestSetReplacesValue(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, v := range []string{"first", "second\n"} {
		if err := s.Set(githubToken, githubBinding, v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(githubToken, githubBinding); err != nil || got != v {
			t.Fatalf("Get = %q, %v; want %q", got, err, v)
		}
	}
	if n := len(s.List()); n != 1 {
		t.Fatalf("List has %d entries, want 1", n)
	}
}

func TestNothingInClear(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	binding := "npx -y @modelcontextprotocol/server-github@2025.4.8"
	if err := s.Set(githubToken, binding, secretValue); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("mcp:github:other", binding, secretValue+"-2"); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, clear := range []string{secretValue, binding, "server-github"} {
			if bytes.Contains(data, []byte(clear)) {
				t.Errorf("%s holds %q in clear", path, clear)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGetErrors(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Set(githubToken, githubBinding, secretValue); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, secret, binding string
		want                  error
		wantText              []string
	}{
		{"not set", "mcp:github:other", githubBinding, ErrNotSet,
			[]string{"mcp:github:other", "mcp-gateway secret set mcp:github:other"}},
		{"binding changed", githubToken, "https://evil.example/mcp", ErrBindingChanged,
			[]string{`server "github"`, "set it again with `mcp-gateway secret set mcp:github:token`"}},
		{"bad name", "github:token", githubBinding, nil,
			[]string{"mcp:<server>:<key>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Get(tt.secret, tt.binding)
			if err == nil {
				t.Fatalf("Get = %q, want an error", got)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %q is not %v", err, tt.want)
			}
			for _, text := range tt.wantText {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("error %q does not contain %q", err, text)
				}
			}
		})
	}
}

func TestWrongKey(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Set(githubToken, githubBinding, secretValue); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, KeyFile)
	if err := os.WriteFile(keyPath, bytes.Repeat([]byte{7}, keySize), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openStore(t, dir).Get(githubToken, githubBinding)
	if err == nil {
		t.Fatal("Get with a replaced key succeeded")
	}
	for _, text := range []string{"cannot decrypt", keyPath, "mcp-gateway secret set " + githubToken} {
		if !strings.Contains(err.Error(), text) {
			t.Errorf("error %q does not contain %q", err, text)
		}
	}
	if errors.Is(err, ErrNotSet) || errors.Is(err, ErrBindingChanged) {
		t.Errorf("error %q claims a missing or rebound secret", err)
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name     string
		secrets  string // content of secrets.json, "" for none
		key      []byte // content of secret.key, nil for none
		keyMode  os.FileMode
		wantText []string
	}{
		{name: "not JSON", secrets: "{not json", key: validKey(), keyMode: 0o600,
			wantText: []string{SecretsFile, "invalid character", "left untouched"}},
		{name: "truncated", secrets: `{"version":1,"secrets":[{"name":"mcp:a:b"`, key: validKey(), keyMode: 0o600,
			wantText: []string{SecretsFile, "unexpected end of JSON input"}},
		{name: "bad entry", secrets: `{"version":1,"secrets":[{"name":"github-token"}]}`, key: validKey(), keyMode: 0o600,
			wantText: []string{SecretsFile, "entry 0", "mcp:<server>:<key>"}},
		{name: "newer version", secrets: `{"version":9,"secrets":[]}`, key: validKey(), keyMode: 0o600,
			wantText: []string{"upgrade mcp-gateway"}},
		{name: "key readable by others", key: validKey(), keyMode: 0o644,
			wantText: []string{KeyFile, "chmod 600 "}},
		{name: "key readable by group", key: validKey(), keyMode: 0o640,
			wantText: []string{"chmod 600 "}},
		{name: "short key", key: []byte("short"), keyMode: 0o600,
			wantText: []string{KeyFile, "32 bytes"}},
		{name: "key missing but secrets stored", secrets: validSecretsFile(t),
			wantText: []string{KeyFile, "is missing", "restore the key file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.keyMode&0o077 != 0 && runtime.GOOS == "windows" {
				t.Skip("no POSIX modes on Windows")
			}
			dir := t.TempDir()
			secretsPath := filepath.Join(dir, SecretsFile)
			keyPath := filepath.Join(dir, KeyFile)
			if tt.secrets != "" {
				if err := os.WriteFile(secretsPath, []byte(tt.secrets), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.key != nil {
				if err := os.WriteFile(keyPath, tt.key, tt.keyMode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(keyPath, tt.keyMode); err != nil { // umask
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)

			_, err := Open(dir)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			for _, text := range tt.wantText {
				if !strings.Contains(err.Error(), text) {
					t.Errorf("error %q does not contain %q", err, text)
				}
			}
			if after := snapshot(t, dir); !maps.Equal(before, after) {
				t.Errorf("Open changed the directory:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

func TestFileModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes on Windows")
	}
	dir := filepath.Join(t.TempDir(), "host", "state")
	s := openStore(t, dir)
	if err := s.Set(githubToken, githubBinding, secretValue); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir:                             0o700 | fs.ModeDir,
		filepath.Join(dir, KeyFile):     0o600,
		filepath.Join(dir, SecretsFile): 0o600,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode() & (fs.ModeDir | fs.ModePerm); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("directory holds %d files, want 2 (no temporary file left): %v", len(entries), entries)
	}
}

func TestRemoveListForServer(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	before := time.Now().UTC().Truncate(time.Second)
	for _, name := range []string{"mcp:github:token", "mcp:brave:api_key", "mcp:github:app-id", "mcp:github.enterprise:token"} {
		if err := s.Set(name, "binding of "+name, "v"); err != nil {
			t.Fatal(err)
		}
	}

	list := s.List()
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
		if e.SetAt.Before(before) || e.SetAt.Location() != time.UTC {
			t.Errorf("%s: SetAt %v, want UTC at or after %v", e.Name, e.SetAt, before)
		}
	}
	want := []string{"mcp:brave:api_key", "mcp:github.enterprise:token", "mcp:github:app-id", "mcp:github:token"}
	if !slices.Equal(names, want) {
		t.Errorf("List names = %q, want %q", names, want)
	}
	if e := list[0]; e.Server != "brave" || e.Key != "api_key" {
		t.Errorf("List[0] = %+v, want server brave, key api_key", e)
	}
	if got := s.ForServer("github"); !slices.Equal(got, []string{"mcp:github:app-id", "mcp:github:token"}) {
		t.Errorf("ForServer(github) = %q", got)
	}
	if got := s.ForServer("nobody"); len(got) != 0 {
		t.Errorf("ForServer(nobody) = %q, want none", got)
	}

	if err := s.Remove("mcp:github:token"); err != nil {
		t.Fatal(err)
	}
	if s.Has("mcp:github:token") || !s.Has("mcp:github:app-id") {
		t.Error("Has after Remove: wrong answer")
	}
	if err := s.Remove("mcp:github:token"); !errors.Is(err, ErrNotSet) {
		t.Errorf("second Remove: %v, want ErrNotSet", err)
	}
	// The removal is on disk.
	if openStore(t, dir).Has("mcp:github:token") {
		t.Error("removed secret is back after reopen")
	}
}

func TestSetRejects(t *testing.T) {
	s := openStore(t, t.TempDir())
	tests := []struct {
		name, secret, binding, value, want string
	}{
		{"empty value", githubToken, githubBinding, "", "secret mcp:github:token: the value is empty"},
		{"empty binding", githubToken, "", "v", "binding"},
		{"bad name", "mcp:github", githubBinding, "v", "expected mcp:<server>:<key>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Set(tt.secret, tt.binding, tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Set: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if len(s.List()) != 0 {
		t.Error("a rejected Set stored something")
	}
}

func TestConcurrentUse(t *testing.T) {
	s := openStore(t, t.TempDir())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := "mcp:srv:k" + string(rune('a'+i))
			if err := s.Set(name, "b", "v"); err != nil {
				t.Error(err)
			}
			if _, err := s.Get(name, "b"); err != nil {
				t.Error(err)
			}
			s.List()
		})
	}
	wg.Wait()
	if n := len(s.ForServer("srv")); n != 8 {
		t.Errorf("ForServer has %d names, want 8", n)
	}
}

func TestParseName(t *testing.T) {
	tests := []struct {
		name, server, key string
		wantErr           string
	}{
		{name: "mcp:github:token", server: "github", key: "token"},
		{name: "mcp:io.github.user_x-1:API_KEY", server: "io.github.user_x-1", key: "API_KEY"},
		{name: "github:token", wantErr: `does not start with "mcp:"`},
		{name: "MCP:github:token", wantErr: `does not start with "mcp:"`},
		{name: "mcp:github", wantErr: "no key"},
		{name: "mcp::token", wantErr: "the server is empty"},
		{name: "mcp:github:", wantErr: "the key is empty"},
		{name: "mcp:github:a:b", wantErr: `the key "a:b" has the character ':'`},
		{name: "mcp:git hub:token", wantErr: `the server "git hub" has the character ' '`},
		{name: "mcp:github:tok/en", wantErr: "'/'"},
		{name: "mcp:gïthub:token", wantErr: "'ï'"},
		{name: "", wantErr: "expected mcp:<server>:<key>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, key, err := ParseName(tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "expected mcp:<server>:<key>") {
					t.Fatalf("ParseName(%q) = %q, %q, %v; want an error containing %q and the expected form", tt.name, server, key, err, tt.wantErr)
				}
				return
			}
			if err != nil || server != tt.server || key != tt.key {
				t.Fatalf("ParseName(%q) = %q, %q, %v; want %q, %q", tt.name, server, key, err, tt.server, tt.key)
			}
		})
	}
}

func validKey() []byte { return bytes.Repeat([]byte{1}, keySize) }

// validSecretsFile returns the secrets.json of a store holding one secret.
func validSecretsFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := openStore(t, dir).Set(githubToken, githubBinding, secretValue); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, SecretsFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// snapshot maps each file of dir to its mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = info.Mode().String() + " " + string(data)
	}
	return files
}

// TestEarlierEntriesStillOpen: an entry sealed the way earlier releases did
// (AES-GCM with a nonce drawn by the store and kept in its own member)
// opens with today's store, and each Set draws a fresh nonce.
func TestEarlierEntriesStillOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := openStore(t, dir)
	key, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := bytes.Repeat([]byte{3}, nonceSize)
	old := map[string]record{githubToken: {
		Name:          githubToken,
		BindingSHA256: bindingHash(githubBinding),
		Nonce:         nonce,
		Ciphertext:    gcm.Seal(nil, nonce, []byte(secretValue), additionalData(githubToken, githubBinding)),
		SetAt:         "2026-01-02T03:04:05Z",
	}}
	if err := writeSecrets(filepath.Join(dir, SecretsFile), old); err != nil {
		t.Fatal(err)
	}
	if got, err := openStore(t, dir).Get(githubToken, githubBinding); err != nil || got != secretValue {
		t.Fatalf("an earlier entry: Get = %q, %v", got, err)
	}

	nonces := map[string]bool{}
	for range 3 {
		if err := s.Set(githubToken, githubBinding, secretValue); err != nil {
			t.Fatal(err)
		}
		nonces[string(s.records[githubToken].Nonce)] = true
	}
	if len(nonces) != 3 {
		t.Errorf("three Sets of one value drew %d distinct nonces", len(nonces))
	}
}
