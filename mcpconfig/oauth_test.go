package mcpconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseOAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want *OAuth
		err  string
	}{
		{"client secret", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"bot","clientSecret":"${CS}","scopes":["read"]},"envs":{"CS":"x"}}}`,
			&OAuth{Grant: GrantClientCredentials, ClientID: "bot", ClientSecret: "${CS}", Scopes: []string{"read"}}, ""},
		{"private key", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"bot","privateKey":"${KEY}","signingAlg":"ES256"}}}`,
			&OAuth{Grant: GrantClientCredentials, ClientID: "bot", PrivateKey: "${KEY}", SigningAlg: "ES256"}, ""},
		{"authorization code by default", `{"r":{"url":"https://a.example/mcp","oauth":{}}}`,
			&OAuth{Grant: GrantAuthorizationCode}, ""},
		{"pinned issuer and token endpoint", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"bot","clientSecret":"${CS}","issuer":"https://as.example","tokenEndpoint":"https://token.example/t"}}}`,
			&OAuth{Grant: GrantClientCredentials, ClientID: "bot", ClientSecret: "${CS}", Issuer: "https://as.example", TokenEndpoint: "https://token.example/t"}, ""},
		{"loopback http issuer", `{"r":{"url":"https://a.example/mcp","oauth":{"issuer":"http://127.0.0.1:9000"}}}`,
			&OAuth{Grant: GrantAuthorizationCode, Issuer: "http://127.0.0.1:9000"}, ""},
		{"plain http issuer", `{"r":{"url":"https://a.example/mcp","oauth":{"issuer":"http://as.example"}}}`,
			nil, `member "issuer" must be an https:// URL`},
		{"relative token endpoint", `{"r":{"url":"https://a.example/mcp","oauth":{"tokenEndpoint":"/token"}}}`,
			nil, `member "tokenEndpoint" must be an absolute https:// URL`},
		{"literal secret", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"bot","clientSecret":"hunter2"}}}`,
			nil, `"clientSecret" must be one placeholder`},
		{"no client id", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientSecret":"${CS}"}}}`,
			nil, `needs "clientId"`},
		{"secret and key", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"b","clientSecret":"${CS}","privateKey":"${K}"}}}`,
			nil, `exactly one of "clientSecret" and "privateKey"`},
		{"unknown grant", `{"r":{"url":"https://a.example/mcp","oauth":{"grant":"password"}}}`,
			nil, `"grant" must be`},
		{"unknown member", `{"r":{"url":"https://a.example/mcp","oauth":{"client_id":"x"}}}`,
			nil, `unknown member "client_id"`},
		{"not an object", `{"r":{"url":"https://a.example/mcp","oauth":true}}`,
			nil, `"oauth" must be an object`},
		{"with an Authorization header", `{"r":{"url":"https://a.example/mcp","headers":{"Authorization":"Bearer ${T}"},"oauth":{}}}`,
			nil, `cannot be given together`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, _, err := Parse([]byte(tc.in), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), `"r"`) {
					t.Fatalf("err %v, want %q naming the server", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(servers[0].OAuth, tc.want) {
				t.Fatalf("oauth %+v, want %+v", servers[0].OAuth, tc.want)
			}
		})
	}
}

func TestResolveOAuth(t *testing.T) {
	servers, _, err := Parse([]byte(`{"r":{"url":"https://a.example/mcp","oauth":{"grant":"client_credentials","clientId":"bot","clientSecret":"${CS}"},"envs":{"CS":"the-secret"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := servers[0].ResolveOAuth(nil)
	if err != nil || o.ClientSecret != "the-secret" || servers[0].OAuth.ClientSecret != "${CS}" {
		t.Fatalf("resolved %+v, %v; the entry must keep its placeholder", o, err)
	}
	s := servers[0]
	s.Env = nil
	_, err = s.ResolveOAuth(nil)
	if !errors.Is(err, ErrMissingSecret) || !strings.Contains(err.Error(), "${CS}") || !strings.Contains(err.Error(), `"r"`) {
		t.Fatalf("err %v, want ErrMissingSecret naming the server and placeholder", err)
	}
}
