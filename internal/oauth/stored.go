package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Stored is the OAuth client of a server a person authorized (Authorize):
// its token comes from a Store, is refreshed a minute before it expires
// (the new one saved), and when the server refuses it, a refresh is tried
// once. With no token, or when the refresh fails (a revoked grant), every
// request fails with an error wrapping ErrNotAuthorized that tells how to
// authorize the server; OnUnauthorized is called so the gateway can show
// the server's authorize tool instead of its tools. Safe for concurrent use.
type Stored struct {
	server, url string
	store       Store
	client      *http.Client
	// OnUnauthorized, if set, is called (in its own goroutine) when the
	// server's authorization was found missing or lost.
	OnUnauthorized func(server string, err error)
	// StepUp, if set, is asked for a wider grant when the server answers
	// a tools/call with 403 insufficient_scope (the scopes it wants are already remembered
	// with the grant, see Record.StepUp): it starts the person's
	// authorization and returns once it completed (nil) or failed or timed
	// out, within ctx (the call's). On nil the request is sent again, once,
	// with the new token: the call that found the missing scope goes on.
	StepUp func(ctx context.Context, server string, scopes []string) error

	mu  sync.Mutex
	rec *Record
	ts  oauth2.TokenSource
	gen uint64 // the store's record as loaded; reloaded when the store changes
}

// NewStored returns the client of server at url, tokens from store.
func NewStored(server, url string, store Store, client *http.Client) *Stored {
	if client == nil {
		client = http.DefaultClient
	}
	return &Stored{server: server, url: url, store: store, client: client}
}

// notAuthorized is the error of a server without a usable grant; lost says
// the grant was there and is gone (refused or revoked), which is when
// OnUnauthorized is told.
func (s *Stored) notAuthorized(why string, cause error, lost ...bool) error {
	hint := authHint(s.store, s.server)
	err := fmt.Errorf("mcp server %q is not authorized: %s; authorize it with `%s` (or, as an agent, the %s-authorize tool): %w",
		s.server, why, hint, s.server, ErrNotAuthorized)
	if cause != nil {
		err = fmt.Errorf("mcp server %q is not authorized: %s (%v); authorize it again with `%s` (or, as an agent, the %s-authorize tool): %w",
			s.server, why, cause, hint, s.server, ErrNotAuthorized)
	}
	if s.OnUnauthorized != nil && len(lost) > 0 && lost[0] {
		go s.OnUnauthorized(s.server, err)
	}
	return err
}

// TokenSource implements upstream.Authorizer: nil while there is no token.
func (s *Stored) TokenSource(context.Context) (oauth2.TokenSource, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return nil, err
	}
	if s.ts == nil {
		return nil, nil
	}
	return s, nil
}

// Reload forgets the cached record, so the next request reads the store
// (after `auth` stored a new one, or `auth rm` removed it).
func (s *Stored) Reload() {
	s.mu.Lock()
	s.rec, s.ts = nil, nil
	s.mu.Unlock()
}

func (s *Stored) loadLocked() error {
	if v, ok := s.store.(interface{ Version() uint64 }); ok {
		if gen := v.Version(); gen != s.gen {
			s.rec, s.ts, s.gen = nil, nil, gen
		}
	}
	if s.rec != nil {
		return nil
	}
	rec, err := s.store.Load(s.server, s.url)
	if err != nil {
		return err
	}
	if rec == nil || rec.Token == nil {
		return nil
	}
	s.rec = rec
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, rec.refreshClient(s.client))
	s.ts = oauth2.ReuseTokenSourceWithExpiry(rec.Token, rec.config().TokenSource(ctx, rec.Token), time.Minute)
	return nil
}

// Token implements oauth2.TokenSource: the current token, refreshed when
// due; a refreshed token is saved.
func (s *Stored) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		return nil, s.notAuthorized("it has no token", nil)
	}
	tok, err := s.ts.Token()
	if err != nil {
		s.rec, s.ts = nil, nil
		_ = s.store.Remove(s.server)
		return nil, s.notAuthorized("the refresh of its token was refused", tokenError(err), true)
	}
	if tok.AccessToken != s.rec.Token.AccessToken {
		rec := *s.rec
		rec.Token = tok
		s.rec = &rec
		if err := s.store.Save(s.server, s.url, &rec); err != nil {
			return nil, fmt.Errorf("mcp server %q: cannot save its refreshed OAuth token: %w", s.server, err)
		}
		s.syncGen()
	}
	return tok, nil
}

// Authorize implements upstream.Authorizer. The server refused the token
// (or there is none): a refresh is tried once if there is a refresh token;
// otherwise, and for a 403 asking for more scope, a person must authorize
// the server (again).
func (s *Stored) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) //nolint:errcheck // lets the connection be reused
	resp.Body.Close()
	header := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode == http.StatusForbidden {
		if !insufficientScope(header) {
			return nil
		}
		wanted := challengeScope(header)
		if err := s.rememberWanted(wanted); err != nil {
			return err
		}
		// A tool call waits for the person (not a session's start, a
		// listing, which the host makes while it holds its state).
		if s.StepUp != nil && wanted != "unspecified" && req.Header.Get("Mcp-Method") == "tools/call" {
			err := s.StepUp(ctx, s.server, strings.Fields(wanted))
			if err == nil {
				s.Reload()
				return nil
			}
			return s.notAuthorized("it asks for more scope ("+wanted+") and the authorization asking for it did not complete", err)
		}
		return s.notAuthorized("it asks for more scope ("+wanted+"), which a new authorization asks for with the scopes granted", nil)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	if s.rec == nil {
		return s.notAuthorized("it has no token", nil)
	}
	if req.Header.Get("Authorization") == "" {
		return nil // the token was stored since: retry with it
	}
	if s.rec.Token.RefreshToken == "" {
		s.rec, s.ts = nil, nil
		_ = s.store.Remove(s.server)
		return s.notAuthorized("it refused the token, which cannot be refreshed", nil, true)
	}
	// The authorization server must still be the one that granted the
	// token: a refresh token is sent to no other.
	d, err := Discover(ctx, s.server, s.url, header, s.client)
	if err != nil {
		return err
	}
	if granted := s.rec.Issuer; d.ASM.Issuer != granted {
		s.rec, s.ts = nil, nil
		_ = s.store.Remove(s.server)
		return s.notAuthorized(fmt.Sprintf("it now names authorization server %q, not %q, which granted the token", d.ASM.Issuer, granted), nil, true)
	}
	expired := *s.rec.Token
	expired.AccessToken, expired.Expiry = "", time.Unix(1, 0)
	cctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.rec.refreshClient(s.client))
	tok, err := s.rec.config().TokenSource(cctx, &expired).Token()
	if err != nil {
		s.rec, s.ts = nil, nil
		_ = s.store.Remove(s.server)
		return s.notAuthorized("the refresh of its token was refused", tokenError(err), true)
	}
	rec := *s.rec
	rec.Token = tok
	s.rec = &rec
	s.ts = oauth2.ReuseTokenSourceWithExpiry(tok, rec.config().TokenSource(cctx, tok), time.Minute)
	err = s.store.Save(s.server, s.url, &rec)
	s.syncGen()
	return err
}

// rememberWanted keeps the scopes a 403 asked for in the stored record, so
// the next authorization (by the person) asks for them too.
func (s *Stored) rememberWanted(wanted string) error {
	if wanted == "unspecified" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil || s.rec == nil {
		return err
	}
	next := union(s.rec.Wanted, strings.Fields(wanted))
	if len(next) == len(s.rec.Wanted) {
		return nil
	}
	rec := *s.rec
	rec.Wanted = next
	s.rec = &rec
	err := s.store.Save(s.server, s.url, &rec)
	s.syncGen()
	return err
}

// syncGen takes the store's version after a change of its own.
func (s *Stored) syncGen() {
	if v, ok := s.store.(interface{ Version() uint64 }); ok {
		s.gen = v.Version()
	}
}

func challengeScope(header []string) string {
	cs, _ := oauthex.ParseWWWAuthenticate(header)
	if sc := challengeParam(cs, "scope"); sc != "" {
		return sc
	}
	return "unspecified"
}
