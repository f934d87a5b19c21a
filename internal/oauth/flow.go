package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// FlowConfig configures one authorization of a server by a person (the
// authorization code grant with PKCE).
type FlowConfig struct {
	// Server is the server's name, URL its MCP endpoint.
	Server, URL string
	// Client makes every request (to the server, its metadata, the
	// authorization server); nil means http.DefaultClient.
	Client *http.Client
	// The client identity, tried in the specification's order: a client ID
	// metadata document (when the authorization server supports them), a
	// pre-registered client (ClientID, with ClientSecret for a confidential
	// one), then dynamic client registration.
	ClientMetadataURL      string
	ClientID, ClientSecret string
	// Scopes are the person's (`server add --scope`, `auth --scope`):
	// asked for first, in place of those the server's challenge or
	// metadata names, as sbx does. When the authorization server lists the
	// scopes it supports, each must be one of them. Unset, the discovered
	// scopes are asked for (the challenge's, else the resource metadata's
	// scopes_supported).
	Scopes []string
	// ExactScopes asks for Scopes alone (`auth --scope`, `auth
	// --no-scope`): without the step-up scopes and without the
	// offline_access the SDK adds for a refresh token. NoScope asks for no
	// scope at all (`auth --no-scope`).
	ExactScopes, NoScope bool
	// StepUp are asked for besides the scopes discovered: those of the
	// grant this authorization replaces and those the server asked for
	// since (Record.StepUp; SEP-2350).
	StepUp []string
	// Issuer and TokenEndpoint, when set, pin the authorization server
	// (`server add --oauth-issuer`): discovery naming another is refused
	// before the person is sent to it or a client secret to its token
	// endpoint. Unset, the issuer that grants the token is recorded with
	// it, and a refresh goes to no other (Stored).
	Issuer, TokenEndpoint string
	// AuthServer, when set, is the authorization server's metadata the
	// person gave (`server add --oauth-authorization-server`), for a server
	// whose own metadata does not lead to it: it is used in place of what
	// discovery would fetch.
	AuthServer *oauthex.AuthServerMeta
	// RedirectURL is where the authorization server sends the person back
	// (a loopback URL: see Loopback).
	RedirectURL string
	// Fetch shows the authorization URL to the person and returns the
	// callback's code, state and iss (Loopback.Fetcher).
	Fetch auth.AuthorizationCodeFetcher
}

// ErrNoAuthorization: the server answered without asking for a token.
var ErrNoAuthorization = errors.New("the server does not ask for authorization")

// Probe finds whether the server wants OAuth, and its challenge: it sends
// initialize without a token and, when that is answered (some servers
// protect only their tools), notifications/initialized and tools/list in
// the new session. It returns the request and response of the first 401
// (or 403); otherwise an error wrapping ErrNoAuthorization (or the
// failure).
func Probe(ctx context.Context, server, url string, client *http.Client) (*http.Request, *http.Response, error) {
	if client == nil {
		client = http.DefaultClient
	}
	const version = "2025-11-25"
	session := ""
	steps := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"mcp-gateway","version":"auth-probe"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}
	last := 0
	for i := 0; i < len(steps); i++ {
		body := steps[i]
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, nil, fmt.Errorf("mcp server %q: %w", server, err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", version)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp server %q: cannot reach %s: %w", server, url, err)
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return req, resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) //nolint:errcheck // lets the connection be reused
		resp.Body.Close()
		last = resp.StatusCode
		if resp.StatusCode >= 300 {
			if i > 0 {
				break
			}
			// A server of the 2026-07-28 era (no initialize) may still
			// protect its tools: ask for them.
			i = len(steps) - 2
			continue
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
	}
	if session != "" {
		if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil); err == nil {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", version)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	return nil, nil, fmt.Errorf("mcp server %q answered HTTP %d without a token: %w", server, last, ErrNoAuthorization)
}

// Authorize runs the authorization code flow for a server and returns the
// record to store: discovery from the server's 401, the client identity,
// PKCE (S256), the resource parameter, the state and issuer (RFC 9207)
// checks of the callback and the code exchange, all by the SDK's
// AuthorizationCodeHandler. The gateway checks besides that the token is
// for this server (a JWT's aud, a response's resource) and from the
// authorization server discovered. Each failure is a *StepError naming the
// server and the step; nothing is returned then (so nothing is stored).
func Authorize(ctx context.Context, cfg FlowConfig) (*Record, error) {
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	if cfg.AuthServer != nil {
		cfg.Client = withAuthServer(cfg.Client, cfg.URL, cfg.AuthServer)
	}
	req, resp, err := Probe(ctx, cfg.Server, cfg.URL, cfg.Client)
	if err != nil {
		return nil, err
	}
	header := resp.Header.Values("WWW-Authenticate")
	pin := Pin{Issuer: cfg.Issuer, TokenEndpoint: cfg.TokenEndpoint, Configured: true}
	hint := fmt.Sprintf("If the server really moved to it, register it again with the new --oauth-issuer (mcp-gateway server add %s --replace ...) and authorize it with `mcp-gateway auth %s`.", cfg.Server, cfg.Server)
	d, err := DiscoverPinned(ctx, cfg.Server, cfg.URL, header, cfg.Client, pin, hint)
	if err == nil && cfg.ClientSecret != "" && (pin.Issuer != "" || pin.TokenEndpoint != "") {
		// A confidential client's secret goes to the issuer's origin or
		// to the token endpoint configured.
		err = pin.checkTokenEndpoint(cfg.Server, d.ASM.Issuer, d.ASM.TokenEndpoint, hint)
	}
	if err != nil {
		resp.Body.Close()
		return nil, err
	}

	var captured *oauth2.Config
	var token *oauth2.Token
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cfg.RedirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			res, err := cfg.Fetch(ctx, args)
			if errors.Is(err, ErrStateMismatch) {
				return nil, stepError(cfg.Server, "callback (state check)", err)
			}
			if err != nil {
				return nil, stepError(cfg.Server, "authorization (the person's consent)", err)
			}
			return res, nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{cfg.RedirectURL},
			ClientName:              "mcp-gateway",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		Client:              cfg.Client,
		RequestRefreshToken: true,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			captured, token = c, t
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if cfg.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.ClientMetadataURL}
	}
	if cfg.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: cfg.ClientID, Issuer: d.ASM.Issuer}
		if cfg.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}
		}
	}
	supported := supportedScopes(d)
	if err := checkScopes(cfg.Server, cfg.Scopes, supported); err != nil {
		resp.Body.Close()
		return nil, err
	}
	explicit := cfg.NoScope || len(cfg.Scopes) > 0
	if explicit {
		// The person's scopes are what is asked for: the SDK adds no
		// offline_access to them (name it in --scope to get a refresh
		// token where the authorization server wants it asked for).
		hc.RequestRefreshToken = false
	}
	hc.ScopeFilter = func(discovered []string) []string {
		switch {
		case cfg.NoScope:
			return nil
		case len(cfg.Scopes) > 0 && cfg.ExactScopes:
			return slices.Clone(cfg.Scopes)
		case len(cfg.Scopes) > 0:
			return union(cfg.Scopes, cfg.StepUp)
		}
		return union(discovered, cfg.StepUp)
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		resp.Body.Close()
		return nil, stepError(cfg.Server, "configuration", err)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, classify(cfg.Server, err)
	}
	if captured == nil || token == nil || token.AccessToken == "" {
		return nil, stepError(cfg.Server, "token request", errors.New("the authorization server returned no access token"))
	}
	if captured.Endpoint.TokenURL != d.ASM.TokenEndpoint {
		return nil, stepError(cfg.Server, "issuer check", fmt.Errorf("the token came from %s, not the token endpoint of %s", captured.Endpoint.TokenURL, d.ASM.Issuer))
	}
	if err := checkAudience(token, d.Resource); err != nil {
		return nil, stepError(cfg.Server, "token check", err)
	}
	return &Record{
		URL: cfg.URL, Issuer: d.ASM.Issuer, Resource: d.Resource,
		ClientID: captured.ClientID, ClientSecret: captured.ClientSecret,
		AuthURL: captured.Endpoint.AuthURL, TokenURL: captured.Endpoint.TokenURL, AuthStyle: captured.Endpoint.AuthStyle,
		Scopes: grantedScopes(token, captured.Scopes), Token: token, AuthorizedAt: time.Now().UTC().Truncate(time.Second),
		Requested: slices.Clone(captured.Scopes), Supported: supported,
	}, nil
}

// supportedScopes are the scopes the authorization server says it supports
// (RFC 8414 scopes_supported), else those the resource metadata lists.
func supportedScopes(d *Discovery) []string {
	if len(d.ASM.ScopesSupported) > 0 {
		return slices.Clone(d.ASM.ScopesSupported)
	}
	return slices.Clone(d.PRM.ScopesSupported)
}

// checkScopes refuses, before the person is sent anywhere, a scope the
// server does not support, when it lists those it does; a server that
// lists none takes the scopes as given.
func checkScopes(server string, asked, supported []string) error {
	if len(supported) == 0 {
		return nil
	}
	for _, s := range asked {
		if !slices.Contains(supported, s) {
			return stepError(server, "scope check", fmt.Errorf("scope %q is not one the server supports (%s): ask for scopes it lists (auth --scope, or server add --scope --replace), or for none (auth --no-scope)",
				s, strings.Join(supported, " ")))
		}
	}
	return nil
}

// checkAudience refuses a token meant for another resource: the token
// response's resource, or a JWT access token's aud, when present, must
// name the server.
func checkAudience(tok *oauth2.Token, resource string) error {
	if r, ok := tok.Extra("resource").(string); ok && r != "" && !oauthex.MatchesResource([]string{r}, resource) {
		return fmt.Errorf("the token is for resource %q, not %q", r, resource)
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(tok.AccessToken, &claims); err == nil && len(claims.Audience) > 0 {
		if !oauthex.MatchesResource(claims.Audience, resource) {
			return fmt.Errorf("the token's audience %q does not include %q", []string(claims.Audience), resource)
		}
	}
	return nil
}

func grantedScopes(tok *oauth2.Token, asked []string) []string {
	if s := tokenScopes(tok); s != nil {
		return s
	}
	return asked
}

// classify names the step of an error of the SDK's handler.
func classify(server string, err error) error {
	var se *StepError
	if errors.As(err, &se) {
		return err
	}
	msg := err.Error()
	step := "authorization"
	switch {
	case strings.Contains(msg, "state mismatch"):
		step = "callback (state check)"
		err = errors.New("the callback's state is not the one sent: refusing a callback this authorization did not start")
	case strings.Contains(msg, "issuer"), strings.Contains(msg, "iss "), strings.Contains(msg, "iss parameter"):
		step = "issuer check"
	case strings.Contains(msg, "register"):
		step = "client registration"
	case strings.Contains(msg, "token exchange"):
		step = "token request (authorization code)"
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			err = tokenError(re)
		}
	case strings.Contains(msg, "metadata"):
		step = "discovery"
	}
	return stepError(server, step, err)
}
