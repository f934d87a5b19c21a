package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Files of the host state directory that this package owns.
const (
	KeyFile     = "secret.key"
	SecretsFile = "secrets.json"
)

var (
	// ErrNotSet is returned, wrapped, for a secret that was never set or was
	// removed.
	ErrNotSet = errors.New("not set")
	// ErrBindingChanged is returned, wrapped, by [Store.Get] when the secret
	// was set for another URL or command line of its server.
	ErrBindingChanged = errors.New("set for a different endpoint")
)

// Entry describes a stored secret, never its value.
type Entry struct {
	Name   string // mcp:<server>:<key>
	Server string
	Key    string
	SetAt  time.Time // UTC, to the second
}

// Store holds the secrets of one host state directory. Each change is
// written to disk before the call returns. Create it with [Open].
type Store struct {
	keyPath     string
	secretsPath string
	aead        cipher.AEAD

	mu      sync.Mutex
	records map[string]record // by name
}

// Open opens the secret store of the host state directory dir, creating the
// directory (mode 0700) and its key on first use. It fails, and leaves every
// file as it is, when secrets.json cannot be read or parsed, when the key is
// missing while secrets.json holds secrets, or when the key file is readable
// by group or others.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("secrets: the host state directory is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets: create the host state directory: %w", err)
	}
	s := &Store{
		keyPath:     filepath.Join(dir, KeyFile),
		secretsPath: filepath.Join(dir, SecretsFile),
	}
	records, err := readSecrets(s.secretsPath)
	if err != nil {
		return nil, err
	}
	key, err := loadKey(s.keyPath, s.secretsPath, len(records))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: key %s: %w", s.keyPath, err)
	}
	s.aead, err = cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: key %s: %w", s.keyPath, err)
	}
	s.records = records
	return s, nil
}

// Set stores value as the secret name, bound to binding: the identity of the
// server the secret belongs to (its URL for a remote server, its command line
// for a local one). It replaces any earlier value. The CLI strips one trailing
// newline of what the user typed before calling Set; Set itself stores the
// value byte for byte and refuses an empty one.
func (s *Store) Set(name, binding, value string) error {
	if _, _, err := ParseName(name); err != nil {
		return err
	}
	if value == "" {
		return fmt.Errorf("secret %s: the value is empty", name)
	}
	if binding == "" {
		return fmt.Errorf("secret %s: the binding (the server's URL or command line) is empty", name)
	}
	// The AEAD draws a random nonce for each seal and puts it first; the
	// entry keeps it in its own member.
	sealed := s.aead.Seal(nil, nil, []byte(value), additionalData(name, binding))
	r := record{
		Name:          name,
		BindingSHA256: bindingHash(binding),
		Nonce:         sealed[:nonceSize],
		Ciphertext:    sealed[nonceSize:],
		SetAt:         time.Now().UTC().Truncate(time.Second).Format(time.RFC3339),
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.records)
	next[name] = r
	if err := writeSecrets(s.secretsPath, next); err != nil {
		return fmt.Errorf("secret %s: %w", name, err)
	}
	s.records = next
	return nil
}

// Get returns the value of the secret name for a server whose identity is
// binding (see [Store.Set]). It fails with [ErrNotSet] when the secret is
// absent and with [ErrBindingChanged] when it was set for another binding.
func (s *Store) Get(name, binding string) (string, error) {
	server, _, err := ParseName(name)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	r, ok := s.records[name]
	s.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("secret %s: %w; set it with `mcp-gateway secret set %s`", name, ErrNotSet, name)
	}
	if r.BindingSHA256 != bindingHash(binding) {
		return "", fmt.Errorf("secret %s: %w of server %q (its URL or command changed since the secret was set); set it again with `mcp-gateway secret set %s`",
			name, ErrBindingChanged, server, name)
	}
	sealed := append(append(make([]byte, 0, len(r.Nonce)+len(r.Ciphertext)), r.Nonce...), r.Ciphertext...)
	value, err := s.aead.Open(nil, nil, sealed, additionalData(name, binding))
	if err != nil {
		return "", fmt.Errorf("secret %s: cannot decrypt it: %s is not the key it was set with, or %s was altered; set it again with `mcp-gateway secret set %s`",
			name, s.keyPath, s.secretsPath, name)
	}
	return string(value), nil
}

// Has reports whether the secret name is set, whatever its binding.
func (s *Store) Has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.records[name]
	return ok
}

// Remove deletes the secret name. It fails with [ErrNotSet] when there is
// none.
func (s *Store) Remove(name string) error {
	if _, _, err := ParseName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[name]; !ok {
		return fmt.Errorf("secret %s: %w", name, ErrNotSet)
	}
	next := maps.Clone(s.records)
	delete(next, name)
	if err := writeSecrets(s.secretsPath, next); err != nil {
		return fmt.Errorf("secret %s: %w", name, err)
	}
	s.records = next
	return nil
}

// List describes every stored secret, sorted by name.
func (s *Store) List() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := make([]Entry, 0, len(s.records))
	for _, name := range slices.Sorted(maps.Keys(s.records)) {
		server, key, _ := ParseName(name) // checked when read or set
		setAt, _ := time.Parse(time.RFC3339, s.records[name].SetAt)
		entries = append(entries, Entry{Name: name, Server: server, Key: key, SetAt: setAt})
	}
	return entries
}

// ForServer returns the names of the secrets of server, sorted.
func (s *Store) ForServer(server string) []string {
	var names []string
	for _, e := range s.List() {
		if e.Server == server {
			names = append(names, e.Name)
		}
	}
	return names
}

// additionalData authenticates the name and binding with the ciphertext, so
// that an entry copied under another name, or a value read for another
// server identity, fails to decrypt.
func additionalData(name, binding string) []byte {
	return []byte(name + "\x00" + binding)
}

func bindingHash(binding string) string {
	sum := sha256.Sum256([]byte(binding))
	return hex.EncodeToString(sum[:])
}
