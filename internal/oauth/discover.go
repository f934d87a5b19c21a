package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Discovery is what a server's 401 leads to: its protected resource
// metadata (RFC 9728) and its authorization server's metadata (RFC 8414 or
// OpenID Connect discovery).
type Discovery struct {
	// Resource is the resource to ask tokens for (RFC 8707): the protected
	// resource metadata's, or the server's URL.
	Resource string
	// Resource metadata and authorization server metadata, never nil.
	PRM *oauthex.ProtectedResourceMetadata
	ASM *oauthex.AuthServerMeta
	// Challenge is the 401's (or 403's) Bearer challenge.
	Challenge []oauthex.Challenge
}

// StepError is a failure of one step of an OAuth exchange with a server's
// authorization server; its text names the server and the step.
type StepError struct {
	Server string
	Step   string // "discovery", "authorization server metadata", "token request", ...
	Err    error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("mcp server %q: OAuth %s failed: %v", e.Server, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

func stepError(server, step string, err error) error {
	var se *StepError
	if errors.As(err, &se) {
		return err
	}
	return &StepError{Server: server, Step: step, Err: err}
}

// Discover finds the authorization server of the MCP server at serverURL,
// as the specification orders it: the resource_metadata of the challenge
// in header (the WWW-Authenticate values of a 401, may be nil), then the
// well-known URLs at the endpoint's path and at the root; then that
// authorization server's metadata at its well-known URLs. A server without
// resource metadata falls back to the 2025-03-26 rule (its origin is the
// authorization server, with /authorize, /token, /register by default).
// The SDK's oauthex does the fetching and its checks (https or loopback,
// the resource matching, the metadata issuer matching).
func Discover(ctx context.Context, server, serverURL string, header []string, client *http.Client) (*Discovery, error) {
	return DiscoverPinned(ctx, server, serverURL, header, client, Pin{}, "")
}

// DiscoverPinned is Discover held to a pinned issuer: when the resource
// metadata does not list pin.Issuer among its authorization servers, it
// returns a *PinError (hint its advice) before asking the new one for
// anything; a pinned token endpoint must be the metadata's.
func DiscoverPinned(ctx context.Context, server, serverURL string, header []string, client *http.Client, pin Pin, hint string) (*Discovery, error) {
	challenges, err := oauthex.ParseWWWAuthenticate(header)
	if err != nil {
		return nil, stepError(server, "discovery", fmt.Errorf("the server's WWW-Authenticate header is malformed: %v", err))
	}
	d := &Discovery{Challenge: challenges}
	var lastErr error
	for _, u := range prmURLs(challengeParam(challenges, "resource_metadata"), serverURL) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u.url, u.resource, client)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			if lastErr == nil { // the first: the challenge's, when it named one
				lastErr = err
			}
			continue
		}
		if prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, stepError(server, "discovery", fmt.Errorf("its protected resource metadata at %s names no authorization server", u.url))
		}
		d.PRM = prm
		break
	}
	if d.PRM == nil {
		if lastErr != nil && challengeParam(challenges, "resource_metadata") != "" {
			// The server pointed at its metadata and the metadata is bad:
			// do not fall back to guessing.
			return nil, stepError(server, "discovery", fmt.Errorf("its protected resource metadata is unusable: %v", lastErr))
		}
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, stepError(server, "discovery", err)
		}
		u.Path, u.RawQuery = "", ""
		d.PRM = &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{u.String()}, Resource: serverURL}
	}
	d.Resource = d.PRM.Resource
	if d.Resource == "" {
		d.Resource = serverURL
	}
	issuer := d.PRM.AuthorizationServers[0]
	if pin.Issuer != "" {
		found := false
		for _, as := range d.PRM.AuthorizationServers {
			if issuersEqual(as, pin.Issuer) {
				issuer, found = as, true
				break
			}
		}
		if !found {
			return nil, &PinError{Server: server, What: "authorization server", Pinned: pin.Issuer, Named: issuer, Hint: hint}
		}
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
	if err != nil {
		return nil, stepError(server, "authorization server metadata", fmt.Errorf("from %s: %v", issuer, err))
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{
			Issuer:                issuer,
			AuthorizationEndpoint: issuer + "/authorize",
			TokenEndpoint:         issuer + "/token",
			RegistrationEndpoint:  issuer + "/register",
		}
	}
	if asm.TokenEndpoint == "" {
		return nil, stepError(server, "authorization server metadata", fmt.Errorf("%s names no token_endpoint", issuer))
	}
	if pin.TokenEndpoint != "" && asm.TokenEndpoint != pin.TokenEndpoint {
		return nil, &PinError{Server: server, What: "token endpoint", Pinned: pin.TokenEndpoint, Named: asm.TokenEndpoint, Hint: hint}
	}
	d.ASM = asm
	return d, nil
}

// Scopes returns the scopes to ask for, in the specification's order: the
// challenge's scope, else configured, else the resource metadata's
// scopes_supported; none when none of them has any.
func (d *Discovery) Scopes(configured []string) []string {
	if s := challengeParam(d.Challenge, "scope"); s != "" {
		return strings.Fields(s)
	}
	if len(configured) > 0 {
		return configured
	}
	return d.PRM.ScopesSupported
}

// challengeParam returns a parameter of the Bearer challenge.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	for _, c := range cs { // resource_metadata may come in another scheme's challenge
		if name == "resource_metadata" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

type prmURL struct{ url, resource string }

// prmURLs are the places of a server's protected resource metadata: the
// challenge's, then the well-known URL at the endpoint's path, then at the
// root.
func prmURLs(fromChallenge, serverURL string) []prmURL {
	var urls []prmURL
	if fromChallenge != "" {
		urls = append(urls, prmURL{fromChallenge, serverURL})
	}
	ru, err := url.Parse(serverURL)
	if err != nil {
		return urls
	}
	mu := *ru
	mu.RawQuery = ""
	if p := strings.Trim(ru.Path, "/"); p != "" {
		mu.Path = "/.well-known/oauth-protected-resource/" + p
		urls = append(urls, prmURL{mu.String(), serverURL})
	}
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery = "", ""
	urls = append(urls, prmURL{mu.String(), root.String()})
	return urls
}
