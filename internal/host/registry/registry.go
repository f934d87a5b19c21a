// Package registry is the host daemon's state: the registered servers, the
// sandboxes with their modes, token hashes and attached servers. It is one
// JSON file in the state directory, written atomically (a temporary file
// renamed over it), read once at start-up; the daemon is its only writer,
// which a lock file held for the daemon's life guarantees. Secrets are not
// here (see internal/host/secrets); tokens are kept only as SHA-256 hashes.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// File names in the state directory.
const (
	StateFile = "state.json"
	LockFile  = "host.lock"
)

// Modes of a sandbox, fixed at its creation.
const (
	ModeStatic  = "static"  // named servers pre-loaded; no discovery tools
	ModeDynamic = "dynamic" // none pre-loaded; mcp-find, mcp-add, mcp-config-set
)

// Server is one registered server: remote (URL) or local (Command).
type Server struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`

	// A remote server: its endpoint, transport ("" detects it) and header
	// templates, whose ${name} placeholders name secrets mcp:<server>:<name>.
	URL       string            `json:"url,omitempty"`
	Transport string            `json:"transport,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// InitializeFirst starts the server's sessions with initialize instead
	// of server/discover (--initialize-first), for a server that speaks
	// both eras but should be used in its session era, or one that
	// mishandles a server/discover.
	InitializeFirst bool `json:"initializeFirst,omitempty"`
	// AllowPrivateAddress lets this server's connections (and its
	// metadata URL's) reach private, loopback and link-local addresses
	// without a warning; cloud-metadata ones stay refused.
	AllowPrivateAddress bool `json:"allowPrivateAddress,omitempty"`
	// OAuth is set for a remote server that wants OAuth (detected at
	// registration from its 401): how the gateway authorizes (the client
	// identity); its tokens are in the secret store (internal/oauth).
	OAuth *mcpconfig.OAuth `json:"oauth,omitempty"`
	// OAuthAuthorizationServer is the authorization server's metadata
	// (RFC 8414) given at registration (--oauth-authorization-server), used
	// in place of discovering it.
	OAuthAuthorizationServer json.RawMessage `json:"oauthAuthorizationServer,omitempty"`
	// PerSandbox keeps the server's OAuth grant per sandbox (each sandbox
	// authorizes it on its own: --per-sandbox) instead of one grant shared
	// by every sandbox it is attached to.
	PerSandbox bool `json:"perSandbox,omitempty"`

	// A local server: the command run once per sandbox, its arguments,
	// working directory and environment (values may hold ${name}
	// placeholders naming secrets too).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// Share is mcpconfig.SharePerClient for a server run as a process per
	// client session (--per-client), else "" (one process per sandbox).
	Share string `json:"share,omitempty"`

	// Metadata is the registry entry or server.json it was registered
	// from, and Package what that chose to run ("npm @scope/pkg@1.0").
	Metadata string `json:"metadata,omitempty"`
	Package  string `json:"package,omitempty"`

	// Config declares the properties a sandbox may set with
	// mcp-config-set; each reaches the server as an environment variable.
	Config []Property `json:"config,omitempty"`

	// Tools are the server's tools when it was last listed, for mcp-find.
	Tools []Tool `json:"tools,omitempty"`

	Added time.Time `json:"added"`
}

// Remote reports a remote server.
func (s *Server) Remote() bool { return s.URL != "" }

// Binding is the identity a secret of the server is bound to: its URL, or
// its command line. A secret set for another binding is not used.
func (s *Server) Binding() string {
	if s.Remote() {
		return s.URL
	}
	return strings.Join(append([]string{s.Command}, s.Args...), "\x00")
}

// Property is one declared configuration property of a server.
type Property struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Env         string `json:"env"` // the environment variable it sets
	Default     string `json:"default,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Tool is what mcp-find knows of one of a server's tools.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Sandbox is one client of the host: its token (as a hash), its mode and
// the servers attached to it.
type Sandbox struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode"`
	TokenHash string   `json:"tokenHash"` // hex SHA-256 of its bearer token
	Servers   []string `json:"servers,omitempty"`
	// Config is what mcp-config-set set, by server then property.
	Config  map[string]map[string]string `json:"config,omitempty"`
	Created time.Time                    `json:"created"`
}

// State is everything the daemon keeps.
type State struct {
	Version   int                 `json:"version"`
	Servers   map[string]*Server  `json:"servers"`
	Sandboxes map[string]*Sandbox `json:"sandboxes"`
}

// stateVersion is the format this code writes and reads.
const stateVersion = 1

// ValidName checks a server's or sandbox's name by the rule `serve` also
// applies to its servers (mcpconfig.IsPlainName): letters, digits, ".",
// "-" and "_", at most 64 characters. what is "server" or "sandbox".
func ValidName(what, name string) error {
	switch {
	case mcpconfig.IsPlainName(name):
		return nil
	case name == "":
		return fmt.Errorf("%s name is empty", what)
	case len(name) > mcpconfig.MaxPlainNameLen:
		return fmt.Errorf("%s name %q is longer than %d characters", what, name, mcpconfig.MaxPlainNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("%s name %q is reserved", what, name)
	}
	return fmt.Errorf("%s name %q: use only letters, digits, '.', '-' and '_'", what, name)
}

// Store is the state file of one state directory, locked for this process.
type Store struct {
	dir  string
	lock *os.File
}

// ErrLocked: another daemon holds the state directory.
var ErrLocked = errors.New("state directory in use")

// Open creates the state directory (owner-only) if needed and locks it for
// this process; a second daemon on the same directory gets ErrLocked.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("state directory %s has mode %o and cannot be made owner-only: %w", dir, fi.Mode().Perm(), err)
		}
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		f.Close()
		return nil, fmt.Errorf("%w: another mcp-gateway host (pid %s) uses %s; stop it or pass another --state-dir", ErrLocked, strings.TrimSpace(string(pid)), dir)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return &Store{dir: dir, lock: f}, nil
}

// Holder reports whether a daemon holds dir's lock, and its pid as it
// wrote it: a daemon that holds it is running or starting.
func Holder(dir string) (pid string, held bool) {
	path := filepath.Join(dir, LockFile)
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return "", false
	}
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b)), true
}

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the lock.
func (s *Store) Close() error { return s.lock.Close() }

// Load reads the state; a missing file is an empty state. A file that is
// unreadable or not a valid state is an error naming it and the problem;
// the file is left as it is.
func (s *Store) Load() (*State, error) {
	path := filepath.Join(s.dir, StateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Version: stateVersion, Servers: map[string]*Server{}, Sandboxes: map[string]*Sandbox{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state file: %w", err)
	}
	st, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("state file %s: %w; it was left untouched: repair it, or move it away to start with an empty registry", path, err)
	}
	return st, nil
}

func decode(data []byte) (*State, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("not valid JSON at byte %d: %v", syn.Offset, err)
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var st State
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("not a valid state: %v", err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("format version %d, this mcp-gateway reads version %d", st.Version, stateVersion)
	}
	if st.Servers == nil {
		st.Servers = map[string]*Server{}
	}
	if st.Sandboxes == nil {
		st.Sandboxes = map[string]*Sandbox{}
	}
	for name, srv := range st.Servers {
		if srv == nil || srv.Name != name {
			return nil, fmt.Errorf("server entry %q does not carry its own name", name)
		}
	}
	for name, sb := range st.Sandboxes {
		if sb == nil || sb.Name != name {
			return nil, fmt.Errorf("sandbox entry %q does not carry its own name", name)
		}
		if sb.Mode != ModeStatic && sb.Mode != ModeDynamic {
			return nil, fmt.Errorf("sandbox %q: mode %q is neither static nor dynamic", name, sb.Mode)
		}
	}
	return &st, nil
}

// Save writes the state atomically: a reader (or a crash) sees the old
// file or the new one, never a part.
func (s *Store) Save(st *State) error {
	st.Version = stateVersion
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, StateFile)
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
