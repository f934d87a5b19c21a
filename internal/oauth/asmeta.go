package oauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ParseAuthServerMetadata checks an authorization server's metadata given
// by the person (`server add --oauth-authorization-server FILE|URL`, RFC
// 8414): an issuer and the authorization and token endpoints, each an
// https URL (or http on loopback).
func ParseAuthServerMetadata(server string, doc []byte) (*oauthex.AuthServerMeta, error) {
	var m oauthex.AuthServerMeta
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("mcp server %q: --oauth-authorization-server is not an RFC 8414 metadata document (JSON): %v", server, err)
	}
	for _, f := range []struct{ name, v string }{{"issuer", m.Issuer}, {"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint}} {
		if f.v == "" {
			return nil, fmt.Errorf("mcp server %q: --oauth-authorization-server's metadata has no %s", server, f.name)
		}
		u, err := url.Parse(f.v)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
			return nil, fmt.Errorf("mcp server %q: --oauth-authorization-server's %s %q must be an https URL (http only on loopback)", server, f.name, f.v)
		}
	}
	return &m, nil
}

// withAuthServer is client answering the discovery of a server whose
// authorization server the person named (FlowConfig.AuthServer): requests
// for that issuer's metadata get meta, and a server without protected
// resource metadata (a 404 at its well-known URL) gets one naming that
// issuer, so that the SDK's flow and the gateway's checks use the
// endpoints the person gave instead of guessing them.
func withAuthServer(client *http.Client, serverURL string, meta *oauthex.AuthServerMeta) *http.Client {
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &asTransport{base: base, serverURL: serverURL, meta: meta}
	return &c
}

type asTransport struct {
	base      http.RoundTripper
	serverURL string
	meta      *oauthex.AuthServerMeta
}

func (t *asTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/.well-known/") {
		return t.base.RoundTrip(req)
	}
	issuer, err := url.Parse(t.meta.Issuer)
	if err == nil && req.URL.Host == issuer.Host &&
		(strings.Contains(req.URL.Path, "/.well-known/oauth-authorization-server") || strings.Contains(req.URL.Path, "/.well-known/openid-configuration")) {
		return jsonResponse(req, t.meta)
	}
	if !strings.Contains(req.URL.Path, "/.well-known/oauth-protected-resource") {
		return t.base.RoundTrip(req)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		return resp, err
	}
	resp.Body.Close()
	return jsonResponse(req, &oauthex.ProtectedResourceMetadata{Resource: t.serverURL, AuthorizationServers: []string{t.meta.Issuer}})
}

func jsonResponse(req *http.Request, v any) (*http.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req}, nil
}
