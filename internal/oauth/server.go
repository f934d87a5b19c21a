package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"golang.org/x/oauth2"

	"github.com/mcp-gateway/mcp-gateway/mcpconfig"
)

// ForServer returns the OAuth client of a configured remote server with an
// "oauth" entry, for upstream.HTTPOptions.Auth; one per server, shared by
// all its sessions. Its secrets are resolved with lookup (nil: the
// server's envs) when the server first asks for a token, so a missing one
// fails that server alone, naming the placeholder. store holds the tokens
// of the authorization_code grant (host mode); nil in a sandbox, where
// such a server reports that it cannot be authorized there.
func ForServer(s mcpconfig.Server, lookup func(string) (string, bool), store Store, client *http.Client) *Server {
	return &Server{spec: s, lookup: lookup, store: store, client: client}
}

// Server is a configured server's OAuth client: ClientCredentials or
// Stored, made on first use.
type Server struct {
	spec   mcpconfig.Server
	lookup func(string) (string, bool)
	store  Store
	client *http.Client
	// OnUnauthorized, if set, is told when a person's grant of the server
	// is lost (see Stored.OnUnauthorized). Set it before first use.
	OnUnauthorized func(server string, err error)
	// StepUp, if set, lets a person's grant step up within the call that
	// found it lacking scope (see Stored.StepUp). Set it before first use.
	StepUp func(ctx context.Context, server string, scopes []string) error

	mu    sync.Mutex
	inner interface {
		TokenSource(context.Context) (oauth2.TokenSource, error)
		Authorize(context.Context, *http.Request, *http.Response) error
	}
}

func (s *Server) get() (interface {
	TokenSource(context.Context) (oauth2.TokenSource, error)
	Authorize(context.Context, *http.Request, *http.Response) error
}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inner != nil {
		return s.inner, nil
	}
	o, err := s.spec.ResolveOAuth(s.lookup)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, fmt.Errorf("mcp server %q has no oauth entry", s.spec.Name)
	}
	switch o.Grant {
	case mcpconfig.GrantClientCredentials:
		cc, err := NewClientCredentials(ClientCredentialsConfig{
			Server: s.spec.Name, URL: s.spec.URL, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
			PrivateKey: o.PrivateKey, SigningAlg: o.SigningAlg, Method: o.TokenEndpointAuthMethod,
			Scopes: o.Scopes, Issuer: o.Issuer, TokenEndpoint: o.TokenEndpoint, Client: s.client,
		})
		if err != nil {
			return nil, err
		}
		s.inner = cc
	default:
		if s.store == nil {
			return nil, fmt.Errorf("mcp server %q: its oauth grant %q needs a person to authorize it, which this gateway cannot ask for; "+
				"use grant %q with a client secret or key in its envs, or register the server on a host (mcp-gateway host)",
				s.spec.Name, o.Grant, mcpconfig.GrantClientCredentials)
		}
		st := NewStored(s.spec.Name, s.spec.URL, s.store, s.client)
		st.OnUnauthorized = s.OnUnauthorized
		st.StepUp = s.StepUp
		s.inner = st
	}
	return s.inner, nil
}

// TokenSource implements upstream.Authorizer.
func (s *Server) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	in, err := s.get()
	if err != nil {
		return nil, err
	}
	return in.TokenSource(ctx)
}

// Authorize implements upstream.Authorizer.
func (s *Server) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	in, err := s.get()
	if err != nil {
		resp.Body.Close()
		return err
	}
	return in.Authorize(ctx, req, resp)
}

// ErrNotAuthorized: the server needs a person's authorization (or a new
// one: the grant was refused or revoked).
var ErrNotAuthorized = errors.New("not authorized")
