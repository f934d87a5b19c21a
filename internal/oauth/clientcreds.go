package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Token endpoint authentication methods of a client_credentials client.
const (
	MethodSecretBasic   = "client_secret_basic"
	MethodSecretPost    = "client_secret_post"
	MethodPrivateKeyJWT = "private_key_jwt"
)

// ClientCredentialsConfig configures a headless client (the
// client_credentials grant of SEP-1046).
type ClientCredentialsConfig struct {
	// Server is the MCP server's name (for errors) and URL its endpoint.
	Server, URL string
	// ClientID is the pre-registered client's id.
	ClientID string
	// ClientSecret authenticates it with client_secret_basic or _post;
	// PrivateKey (PEM: PKCS #8, or PKCS #1 / SEC 1) with a signed JWT
	// assertion (RFC 7523, private_key_jwt). Exactly one is set.
	ClientSecret string
	PrivateKey   string
	// SigningAlg is the JWT's algorithm: ES256 (default for an EC key),
	// ES384, ES512, RS256 (default for an RSA key), RS384, RS512, PS256.
	SigningAlg string
	// Method forces the authentication method; "" chooses from the
	// authorization server's token_endpoint_auth_methods_supported
	// (client_secret_basic first, the RFC 6749 default).
	Method string
	// Scopes are asked for when the server's challenge names none.
	Scopes []string
	// Issuer and TokenEndpoint pin the authorization server the secret
	// (or assertion) may go to. Unset, they are pinned at the first token
	// request to what the server's metadata names then; either way a later
	// metadata naming another is refused before anything is sent to it,
	// and a token endpoint off the issuer's origin must be configured.
	Issuer, TokenEndpoint string
	// Client makes the requests to the authorization server.
	Client *http.Client
}

// ClientCredentials is the OAuth client of a server reached headless. Its
// first token is asked for when the server first answers 401; it is
// renewed before it expires (a new grant: client_credentials issues no
// refresh token), and anew when the server refuses it or asks for more
// scope. It satisfies upstream.Authorizer; safe for concurrent use.
type ClientCredentials struct {
	cfg    ClientCredentialsConfig
	signer any // *ecdsa.PrivateKey, *rsa.PrivateKey or ed25519.PrivateKey
	alg    jwt.SigningMethod

	mu      sync.Mutex
	ts      oauth2.TokenSource
	granted []string
	issuer  string
	pin     Pin
}

// NewClientCredentials checks cfg (a bad key or a missing secret is an
// error naming the server) and returns the client.
func NewClientCredentials(cfg ClientCredentialsConfig) (*ClientCredentials, error) {
	fail := func(format string, args ...any) (*ClientCredentials, error) {
		return nil, fmt.Errorf("mcp server %q: oauth: %s", cfg.Server, fmt.Sprintf(format, args...))
	}
	if cfg.ClientID == "" {
		return fail("clientId is required for the client_credentials grant")
	}
	if (cfg.ClientSecret == "") == (cfg.PrivateKey == "") {
		return fail("give exactly one of clientSecret (client_secret_basic/post) and privateKey (private_key_jwt)")
	}
	if cfg.Client == nil {
		cfg.Client = http.DefaultClient
	}
	c := &ClientCredentials{cfg: cfg, pin: Pin{Issuer: cfg.Issuer, TokenEndpoint: cfg.TokenEndpoint, Configured: cfg.Issuer != "" || cfg.TokenEndpoint != ""}}
	switch cfg.Method {
	case "", MethodSecretBasic, MethodSecretPost, MethodPrivateKeyJWT:
	default:
		return fail("tokenEndpointAuthMethod %q is not one of %s, %s, %s", cfg.Method, MethodSecretBasic, MethodSecretPost, MethodPrivateKeyJWT)
	}
	if cfg.PrivateKey != "" {
		if cfg.Method != "" && cfg.Method != MethodPrivateKeyJWT {
			return fail("privateKey is given, so the method is %s, not %s", MethodPrivateKeyJWT, cfg.Method)
		}
		key, alg, err := parseSigningKey([]byte(cfg.PrivateKey), cfg.SigningAlg)
		if err != nil {
			return fail("privateKey: %v", err)
		}
		c.signer, c.alg = key, alg
	} else if cfg.Method == MethodPrivateKeyJWT {
		return fail("tokenEndpointAuthMethod %s needs privateKey", MethodPrivateKeyJWT)
	}
	return c, nil
}

// TokenSource returns the current token's source, nil before the first
// 401.
func (c *ClientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ts == nil {
		return nil, nil
	}
	return c.ts, nil
}

// Authorize answers the server's 401 (or 403 insufficient_scope) with a
// new grant: discovery from the challenge, then a token request for the
// challenged scopes (joined to those granted before, so a step-up loses
// nothing) and the server's resource.
func (c *ClientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16)) //nolint:errcheck // lets the connection be reused
	resp.Body.Close()
	header := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode == http.StatusForbidden && !insufficientScope(header) {
		return nil // not about scope: the retry shows the 403 as it is
	}
	c.mu.Lock()
	pin := c.pin
	c.mu.Unlock()
	hint := c.pinHint(pin)
	d, err := DiscoverPinned(ctx, c.cfg.Server, c.cfg.URL, header, c.cfg.Client, pin, hint)
	if err != nil {
		return err
	}
	if err := pin.checkTokenEndpoint(c.cfg.Server, d.ASM.Issuer, d.ASM.TokenEndpoint, hint); err != nil {
		return err
	}
	c.mu.Lock()
	if c.issuer != "" && c.issuer != d.ASM.Issuer {
		c.granted = nil // scopes of another authorization server mean nothing here
	}
	scopes := union(c.granted, d.Scopes(c.cfg.Scopes))
	c.mu.Unlock()

	method := c.cfg.Method
	if method == "" {
		method = chooseMethod(c.signer != nil, d.ASM.TokenEndpointAuthMethodsSupported)
	}
	src := &ccSource{c: c, tokenURL: d.ASM.TokenEndpoint, audience: d.ASM.Issuer, resource: d.Resource, scopes: scopes, method: method}
	// The token source outlives this request: its context is the
	// background's, carrying the client.
	tok, err := src.fetch(ctx)
	if err != nil {
		return err
	}
	ts := oauth2.ReuseTokenSourceWithExpiry(tok, src, time.Minute)
	c.mu.Lock()
	c.ts, c.issuer = ts, d.ASM.Issuer
	if c.pin.Issuer == "" {
		slog.Info(fmt.Sprintf("mcp server %q: OAuth authorization server pinned at first use", c.cfg.Server),
			"issuer", d.ASM.Issuer, "token_endpoint", d.ASM.TokenEndpoint)
		c.pin.Issuer = d.ASM.Issuer
	}
	if c.pin.TokenEndpoint == "" {
		c.pin.TokenEndpoint = d.ASM.TokenEndpoint
	}
	if s := tokenScopes(tok); s != nil {
		c.granted = s
	} else {
		c.granted = scopes
	}
	c.mu.Unlock()
	return nil
}

// Pinned is the authorization server the client's credentials may go
// to: configured, or recorded at its first token request; zero before.
func (c *ClientCredentials) Pinned() Pin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pin
}

// pinHint is what to do when the server names another authorization
// server than pin's.
func (c *ClientCredentials) pinHint(pin Pin) string {
	if pin.Configured {
		return `If the server really moved to it, change "issuer" (and "tokenEndpoint") in its oauth entry and restart the gateway.`
	}
	return `It was pinned at this gateway's first token request for the server; if the server really moved to it, set "issuer" (and "tokenEndpoint") in its oauth entry to the new one and restart the gateway.`
}

// ccSource asks the token endpoint for a new token each time: with a new
// assertion (its own jti and expiry) for private_key_jwt.
type ccSource struct {
	c                  *ClientCredentials
	tokenURL, audience string
	resource           string
	scopes             []string
	method             string
}

func (s *ccSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.fetch(ctx)
}

func (s *ccSource) fetch(ctx context.Context) (*oauth2.Token, error) {
	c := s.c
	cfg := &clientcredentials.Config{
		ClientID:       c.cfg.ClientID,
		TokenURL:       s.tokenURL,
		Scopes:         s.scopes,
		EndpointParams: url.Values{"resource": {s.resource}},
	}
	switch s.method {
	case MethodPrivateKeyJWT:
		assertion, err := c.assertion(s.audience)
		if err != nil {
			return nil, stepError(c.cfg.Server, "client assertion", err)
		}
		cfg.AuthStyle = oauth2.AuthStyleInParams
		cfg.EndpointParams.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		cfg.EndpointParams.Set("client_assertion", assertion)
	case MethodSecretPost:
		cfg.ClientSecret, cfg.AuthStyle = c.cfg.ClientSecret, oauth2.AuthStyleInParams
	default:
		cfg.ClientSecret, cfg.AuthStyle = c.cfg.ClientSecret, oauth2.AuthStyleInHeader
	}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, c.cfg.Client))
	if err != nil {
		return nil, stepError(c.cfg.Server, "token request (client_credentials)", tokenError(err))
	}
	return tok, nil
}

// assertion is the signed JWT of private_key_jwt (RFC 7523 section 2.2):
// the client as issuer and subject, the authorization server as audience.
func (c *ClientCredentials) assertion(audience string) (string, error) {
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer:    c.cfg.ClientID,
		Subject:   c.cfg.ClientID,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		ID:        rand.Text(),
	}
	return jwt.NewWithClaims(c.alg, claims).SignedString(c.signer)
}

// chooseMethod picks the token endpoint authentication method from those
// the authorization server lists: private_key_jwt when a key is configured,
// else client_secret_basic (the RFC 6749 default), then _post.
func chooseMethod(haveKey bool, supported []string) string {
	if haveKey {
		return MethodPrivateKeyJWT
	}
	if len(supported) == 0 || slices.Contains(supported, MethodSecretBasic) {
		return MethodSecretBasic
	}
	if slices.Contains(supported, MethodSecretPost) {
		return MethodSecretPost
	}
	return MethodSecretBasic
}

func insufficientScope(header []string) bool {
	for _, h := range header {
		if containsFold(h, "insufficient_scope") {
			return true
		}
	}
	return false
}

// tokenError keeps what the authorization server said, never a token.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			msg := fmt.Sprintf("the authorization server answered HTTP %d, %s", re.Response.StatusCode, re.ErrorCode)
			if re.ErrorDescription != "" {
				msg += ": " + re.ErrorDescription
			}
			return errors.New(msg)
		}
		return fmt.Errorf("the authorization server answered HTTP %d", re.Response.StatusCode)
	}
	return err
}

// tokenScopes is the scope the token response granted, nil when it said none.
func tokenScopes(tok *oauth2.Token) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return splitFields(s)
	}
	return nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
