package secrets

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
)

const (
	keySize     = 32 // AES-256
	nonceSize   = 12 // GCM standard nonce
	fileVersion = 1
)

// secretsFile is the layout of secrets.json. []byte fields are base64.
type secretsFile struct {
	Version int      `json:"version"`
	Secrets []record `json:"secrets"`
}

type record struct {
	Name          string `json:"name"`
	BindingSHA256 string `json:"binding_sha256"`
	Nonce         []byte `json:"nonce"`
	Ciphertext    []byte `json:"ciphertext"`
	SetAt         string `json:"set_at"` // RFC 3339, UTC
}

// loadKey reads the key file, or creates it when it is missing and no secret
// depends on it.
func loadKey(keyPath, secretsPath string, stored int) ([]byte, error) {
	f, err := os.Open(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		if stored > 0 {
			return nil, fmt.Errorf("secrets: key %s is missing but %s holds %d secrets sealed with it: restore the key file, or move %s away and set the secrets again",
				keyPath, secretsPath, stored, secretsPath)
		}
		return createKey(keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: open key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secrets: key %s: %w", keyPath, err)
	}
	// Windows has no POSIX modes: os reports 0666 for every writable file.
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets: key %s is accessible to other users (mode %#o): run `chmod 600 %s`",
			keyPath, info.Mode().Perm(), keyPath)
	}
	key, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("secrets: read key: %w", err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("secrets: key %s does not hold %d bytes: restore it from a backup, or move it and %s away and set the secrets again",
			keyPath, keySize, secretsPath)
	}
	return key, nil
}

func createKey(path string) ([]byte, error) {
	key := make([]byte, keySize)
	rand.Read(key) // never fails: crypto/rand panics instead
	if err := atomicfile.Write(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("secrets: create key: %w", err)
	}
	return key, nil
}

// readSecrets parses secrets.json. A missing file holds no secrets.
func readSecrets(path string) (map[string]record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	var file secretsFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("secrets: %s is not valid (%v); it was left untouched: restore it from a backup, or move it away and set the secrets again", path, err)
	}
	if file.Version > fileVersion {
		return nil, fmt.Errorf("secrets: %s has version %d, newer than this mcp-gateway reads (%d): upgrade mcp-gateway", path, file.Version, fileVersion)
	}
	records := make(map[string]record, len(file.Secrets))
	for i, r := range file.Secrets {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("secrets: %s: entry %d: %w; it was left untouched: fix or remove the entry", path, i, err)
		}
		if _, dup := records[r.Name]; dup {
			return nil, fmt.Errorf("secrets: %s: entry %d: %s appears twice; it was left untouched: remove one of them", path, i, r.Name)
		}
		records[r.Name] = r
	}
	return records, nil
}

func (r record) check() error {
	if _, _, err := ParseName(r.Name); err != nil {
		return err
	}
	if b, err := hex.DecodeString(r.BindingSHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("%s: binding_sha256 is not a SHA-256 in hex", r.Name)
	}
	if len(r.Nonce) != nonceSize {
		return fmt.Errorf("%s: the nonce has %d bytes, not %d", r.Name, len(r.Nonce), nonceSize)
	}
	if len(r.Ciphertext) == 0 {
		return fmt.Errorf("%s: the ciphertext is empty", r.Name)
	}
	if _, err := time.Parse(time.RFC3339, r.SetAt); err != nil {
		return fmt.Errorf("%s: set_at: %w", r.Name, err)
	}
	return nil
}

func writeSecrets(path string, records map[string]record) error {
	file := secretsFile{Version: fileVersion, Secrets: []record{}}
	for _, name := range slices.Sorted(maps.Keys(records)) {
		file.Secrets = append(file.Secrets, records[name])
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(file); err != nil {
		return err
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
