package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-gateway/mcp-gateway/internal/host/secrets"
)

// Record is what the gateway keeps of a server's authorization: the token
// (access and refresh) and what is needed to refresh it, bound to the
// server's URL (by the store) and to the issuer that granted it.
type Record struct {
	URL      string `json:"url"`
	Issuer   string `json:"issuer"`
	Resource string `json:"resource"`
	// The client the authorization server knows the gateway as, and its
	// endpoints.
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	// Wanted are scopes the server asked for since (a 403
	// insufficient_scope): the next authorization asks for them with
	// Scopes (a step-up, SEP-2350).
	Wanted []string `json:"wanted_scopes,omitempty"`
	// Requested are the scopes the authorization asked for, Supported
	// those the server said it supports then (auth status shows both).
	Requested    []string      `json:"requested_scopes,omitempty"`
	Supported    []string      `json:"supported_scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	AuthorizedAt time.Time     `json:"authorized_at"`
}

// Status describes a record without a secret in it.
type Status struct {
	Server string `json:"server"`
	// Sandbox is the sandbox whose own grant this is (a server registered
	// --per-sandbox); "" for a grant shared by the server's sandboxes.
	Sandbox    string   `json:"sandbox,omitempty"`
	Authorized bool     `json:"authorized"`
	Issuer     string   `json:"issuer,omitempty"`
	Scopes     []string `json:"scopes,omitempty"`
	// Requested are the scopes the authorization asked for (or, before
	// one, those the registration will ask for); Supported those the
	// server said it supports.
	Requested []string  `json:"requested_scopes,omitempty"`
	Supported []string  `json:"supported_scopes,omitempty"`
	Expiry    time.Time `json:"expiry,omitzero"`
	Refresh   bool      `json:"refreshable"`
	Since     time.Time `json:"authorized_at,omitzero"`
	// Error says why the stored token cannot be used (set for another URL).
	Error string `json:"error,omitempty"`
	// Pending is the URL of an authorization in progress, for the person
	// to open (a step-up a call waits for, or an `auth` not yet completed).
	Pending string `json:"pending,omitempty"`
}

// Status returns what may be shown of r.
func (r *Record) Status(server string) Status {
	if r == nil || r.Token == nil {
		return Status{Server: server}
	}
	return Status{Server: server, Authorized: true, Issuer: r.Issuer, Scopes: r.Scopes, Expiry: r.Token.Expiry,
		Refresh: r.Token.RefreshToken != "", Since: r.AuthorizedAt, Requested: r.Requested, Supported: r.Supported}
}

// StepUp is the scopes a new authorization replacing r asks for besides
// those discovered: r's granted ones with those the server asked for
// since; none when the server asked for no more.
func (r *Record) StepUp() []string {
	if r == nil || len(r.Wanted) == 0 {
		return nil
	}
	return union(r.Scopes, r.Wanted)
}

// refreshClient is client with the resource parameter (RFC 8707) added
// to r's refresh requests, which x/oauth2 sends without it.
func (r *Record) refreshClient(client *http.Client) *http.Client {
	if r.Resource == "" {
		return client
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &resourceTransport{base: base, tokenURL: r.TokenURL, resource: r.Resource}
	return &c
}

type resourceTransport struct {
	base               http.RoundTripper
	tokenURL, resource string
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.String() != t.tokenURL || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("grant_type") == "refresh_token" && form.Get("resource") == "" {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}

// config is the oauth2 configuration that refreshes r's token.
func (r *Record) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: r.AuthStyle}}
}

// Store keeps the records of servers. Load answers nil, nil when the
// server has none.
type Store interface {
	Load(server, url string) (*Record, error)
	Save(server, url string, r *Record) error
	Remove(server string) error
}

// Versioned is a Store that counts its changes, so the clients reading it
// (Stored) notice a token stored or removed by `auth` and `auth rm`.
type Versioned struct {
	Store
	v atomic.Uint64
}

// Version counts the changes so far.
func (s *Versioned) Version() uint64 { return s.v.Load() }

func (s *Versioned) Save(server, url string, r *Record) error {
	defer s.v.Add(1)
	return s.Store.Save(server, url, r)
}

func (s *Versioned) Remove(server string) error {
	defer s.v.Add(1)
	return s.Store.Remove(server)
}

// SecretStore keeps the records encrypted in the host's secret store, as
// the secret mcp:<server>:oauth-token bound to the server's URL: a server
// registered again with another URL finds no token (it must be authorized
// again) rather than sending its token to the new endpoint.
type SecretStore struct{ S *secrets.Store }

// SecretKey is the key of a server's record in the secret store.
const SecretKey = "oauth-token"

// secretName is the secret of a grant: mcp:<server>:oauth-token for a
// server's grant, mcp:<server>:oauth-token.<sandbox> for a sandbox's own
// (GrantKey).
func secretName(key string) string {
	server, sandbox, ok := strings.Cut(key, "@")
	if ok {
		return "mcp:" + server + ":" + SecretKey + "." + sandbox
	}
	return "mcp:" + server + ":" + SecretKey
}

// SecretName is the secret-store name of a grant: a server's, or with
// sandbox a sandbox's own.
func SecretName(server, sandbox string) string { return secretName(GrantKey(server, sandbox)) }

// GrantKey is the key under which a Store keeps a grant: the server's name
// for a grant shared by the sandboxes it is attached to, server@sandbox
// for a sandbox's own grant (a server registered --per-sandbox).
func GrantKey(server, sandbox string) string {
	if sandbox == "" {
		return server
	}
	return server + "@" + sandbox
}

// authCommand is the command that authorizes a grant.
func authCommand(key string) string {
	if server, sandbox, ok := strings.Cut(key, "@"); ok {
		return "mcp-gateway auth " + server + " --sandbox " + sandbox
	}
	return "mcp-gateway auth " + key
}

// SandboxStore is the store of one sandbox's own grants (servers
// registered --per-sandbox): each server's record is kept under
// GrantKey(server, Sandbox), so a sandbox never uses another's token.
type SandboxStore struct {
	Store
	Sandbox string
}

func (s SandboxStore) Load(server, url string) (*Record, error) {
	return s.Store.Load(GrantKey(server, s.Sandbox), url)
}

func (s SandboxStore) Save(server, url string, r *Record) error {
	return s.Store.Save(GrantKey(server, s.Sandbox), url, r)
}

func (s SandboxStore) Remove(server string) error { return s.Store.Remove(GrantKey(server, s.Sandbox)) }

// Version is the underlying store's (see Versioned), 0 when it counts none.
func (s SandboxStore) Version() uint64 {
	if v, ok := s.Store.(interface{ Version() uint64 }); ok {
		return v.Version()
	}
	return 0
}

// authHint is how to authorize server's grant in store.
func authHint(store Store, server string) string {
	if s, ok := store.(SandboxStore); ok {
		return authCommand(GrantKey(server, s.Sandbox))
	}
	return authCommand(server)
}

func (s SecretStore) Load(server, url string) (*Record, error) {
	v, err := s.S.Get(secretName(server), url)
	switch {
	case errors.Is(err, secrets.ErrNotSet):
		return nil, nil
	case errors.Is(err, secrets.ErrBindingChanged):
		return nil, fmt.Errorf("mcp server %q: its OAuth token was granted for another URL; authorize it again with `%s`", grantServer(server), authCommand(server))
	case err != nil:
		return nil, err
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("mcp server %q: its stored OAuth token is unreadable; authorize it again with `%s`", grantServer(server), authCommand(server))
	}
	return &r, nil
}

func (s SecretStore) Save(server, url string, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.S.Set(secretName(server), url, string(b))
}

func (s SecretStore) Remove(server string) error {
	err := s.S.Remove(secretName(server))
	if errors.Is(err, secrets.ErrNotSet) {
		return nil
	}
	return err
}

// grantServer is the server of a grant key.
func grantServer(key string) string {
	server, _, _ := strings.Cut(key, "@")
	return server
}

// MemoryStore keeps records in memory (a gateway that forgets them when it
// stops, and tests).
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]memRecord
}

type memRecord struct {
	url string
	r   Record
}

func (s *MemoryStore) Load(server, url string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.m[server]
	if !ok || m.url != url {
		return nil, nil
	}
	r := m.r
	return &r, nil
}

func (s *MemoryStore) Save(server, url string, r *Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memRecord{}
	}
	s.m[server] = memRecord{url: url, r: *r}
	return nil
}

func (s *MemoryStore) Remove(server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, server)
	return nil
}
