package mcpconfig

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// OAuth grants of a remote server's "oauth" entry.
const (
	// GrantClientCredentials: headless, the client_credentials grant with
	// a client secret or a private-key JWT (SEP-1046); for sandboxes.
	GrantClientCredentials = "client_credentials"
	// GrantAuthorizationCode: a person authorizes once (mcp-gateway auth,
	// or the <server>-authorize tool); the default.
	GrantAuthorizationCode = "authorization_code"
)

// OAuth is a remote server's "oauth" entry: how the gateway gets its
// tokens.
//
//	"oauth": {"grant": "client_credentials", "clientId": "ci-bot",
//	          "clientSecret": "${CLIENT_SECRET}", "scopes": ["read"]}
//
// ClientSecret and PrivateKey are written as ${NAME} placeholders resolved
// like header values (the server's envs in a sandbox); ResolveOAuth gives
// their values.
type OAuth struct {
	Grant    string   `json:"grant,omitempty"`
	ClientID string   `json:"clientId,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	// ClientSecret (client_secret_basic / _post) or PrivateKey (a PEM key
	// signing a JWT assertion, private_key_jwt): placeholders.
	ClientSecret string `json:"clientSecret,omitempty"`
	PrivateKey   string `json:"privateKey,omitempty"`
	// SigningAlg is the assertion's algorithm (ES256, RS256, ...); "" from the key.
	SigningAlg string `json:"signingAlg,omitempty"`
	// TokenEndpointAuthMethod forces client_secret_basic, client_secret_post
	// or private_key_jwt; "" chooses from the authorization server's list.
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// ClientMetadataURL is a client ID metadata document (an https URL the
	// operator publishes) for the authorization_code grant.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Issuer and TokenEndpoint pin the authorization server: credentials
	// go to no other, whatever the server's metadata names later. Unset,
	// they are pinned at first use.
	Issuer        string `json:"issuer,omitempty"`
	TokenEndpoint string `json:"tokenEndpoint,omitempty"`
}

var oauthProps = []string{"grant", "clientId", "scopes", "clientSecret", "privateKey", "signingAlg", "tokenEndpointAuthMethod", "clientMetadataUrl", "issuer", "tokenEndpoint"}

// parseOAuth validates the "oauth" property of a remote entry.
func parseOAuth(server string, raw []byte) (*OAuth, []error) {
	fail := func(format string, args ...any) []error {
		return []error{&Error{Server: server, Property: "oauth", Message: `property "oauth" ` + fmt.Sprintf(format, args...)}}
	}
	if kind(raw) != "object" {
		return nil, fail("must be an object such as {\"grant\": \"client_credentials\", \"clientId\": ..., \"clientSecret\": \"${SECRET}\"}, not %s", describe(raw))
	}
	ms, err := members(raw)
	if err != nil {
		return nil, []error{&Error{Server: server, Property: "oauth", Message: syntaxMessage(err), Err: err}}
	}
	var o OAuth
	var errs []error
	for _, m := range ms {
		if !slices.Contains(oauthProps, m.key) {
			errs = append(errs, fail("has unknown member %q; known: %s", m.key, strings.Join(oauthProps, ", "))...)
			continue
		}
		if m.key == "scopes" {
			list, _, ok := stringList(m.value)
			if !ok {
				errs = append(errs, fail(`member "scopes" must be an array of strings`)...)
			}
			o.Scopes = list
			continue
		}
		v, ok := jsonString(m.value)
		if !ok {
			errs = append(errs, fail("member %q must be a string, not %s", m.key, describe(m.value))...)
			continue
		}
		switch m.key {
		case "grant":
			o.Grant = v
		case "clientId":
			o.ClientID = v
		case "clientSecret", "privateKey":
			names, err := PlaceholderNames(v)
			if err != nil || len(names) != 1 || strings.TrimSpace(v) != "${"+names[0]+"}" && strings.TrimSpace(v) != "${env:"+names[0]+"}" {
				errs = append(errs, fail(`member %q must be one placeholder such as "${CLIENT_SECRET}" naming the secret (in "envs" or the secret store), never the value`, m.key)...)
				continue
			}
			if m.key == "clientSecret" {
				o.ClientSecret = v
			} else {
				o.PrivateKey = v
			}
		case "signingAlg":
			o.SigningAlg = v
		case "tokenEndpointAuthMethod":
			o.TokenEndpointAuthMethod = v
		case "clientMetadataUrl":
			if !strings.HasPrefix(v, "https://") {
				errs = append(errs, fail(`member "clientMetadataUrl" must be an https:// URL`)...)
			}
			o.ClientMetadataURL = v
		case "issuer", "tokenEndpoint":
			if err := CheckOAuthURL(v); err != nil {
				errs = append(errs, fail("member %q %v", m.key, err)...)
			}
			if m.key == "issuer" {
				o.Issuer = v
			} else {
				o.TokenEndpoint = v
			}
		}
	}
	if o.Grant == "" {
		o.Grant = GrantAuthorizationCode
	}
	switch o.Grant {
	case GrantClientCredentials:
		if o.ClientID == "" {
			errs = append(errs, fail(`with grant "client_credentials" needs "clientId"`)...)
		}
		if (o.ClientSecret == "") == (o.PrivateKey == "") {
			errs = append(errs, fail(`with grant "client_credentials" needs exactly one of "clientSecret" and "privateKey"`)...)
		}
	case GrantAuthorizationCode:
		if o.PrivateKey != "" {
			errs = append(errs, fail(`member "privateKey" is for grant "client_credentials" only`)...)
		}
	default:
		errs = append(errs, fail(`member "grant" must be %q or %q, not %q`, GrantClientCredentials, GrantAuthorizationCode, o.Grant)...)
	}
	switch o.TokenEndpointAuthMethod {
	case "", "client_secret_basic", "client_secret_post", "private_key_jwt":
	default:
		errs = append(errs, fail(`member "tokenEndpointAuthMethod" must be client_secret_basic, client_secret_post or private_key_jwt, not %q`, o.TokenEndpointAuthMethod)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &o, nil
}

// CheckOAuthURL checks an authorization server URL given by the operator
// (an oauth entry's "issuer" or "tokenEndpoint"): an absolute https URL,
// or http for a loopback host.
func CheckOAuthURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("must be an absolute https:// URL, not %q", v)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("must be an https:// URL (http:// only for a loopback address), not %q", v)
}

// ResolveOAuth returns the server's OAuth entry with ClientSecret and
// PrivateKey replaced by their values; lookup as for ResolveHeaders (nil:
// the server's envs). An unset placeholder is an *Error naming the server,
// the member and the placeholder, wrapping ErrMissingSecret. Nil for a
// server without "oauth".
func (s *Server) ResolveOAuth(lookup func(name string) (string, bool)) (*OAuth, error) {
	if s.OAuth == nil {
		return nil, nil
	}
	hint := ""
	if lookup == nil {
		lookup = func(name string) (string, bool) { v, ok := s.Env[name]; return v, ok }
		hint = `; add it to the server's "envs"`
	}
	o := *s.OAuth
	for _, f := range []struct {
		member string
		v      *string
	}{{"clientSecret", &o.ClientSecret}, {"privateKey", &o.PrivateKey}} {
		if *f.v == "" {
			continue
		}
		v, err := expandPlaceholders(*f.v, lookup)
		if pe, ok := err.(*placeholderError); ok && pe.missing {
			return nil, &Error{Server: s.Name, Property: "oauth", Env: pe.name, Err: ErrMissingSecret,
				Message: fmt.Sprintf(`oauth %q needs ${%s}, which is not set%s`, f.member, pe.name, hint)}
		}
		if err != nil {
			return nil, &Error{Server: s.Name, Property: "oauth", Message: fmt.Sprintf("oauth %q: %v", f.member, err)}
		}
		*f.v = v
	}
	return &o, nil
}

// String is the entry as written (placeholders, never values).
func (o *OAuth) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}
