package host

import (
	"context"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mcp-gateway/mcp-gateway/internal/oauth"
)

// sbx's order: a confidential client's secret stored before its server is
// registered is kept, and bound to the endpoint `server add` registers;
// inspect shows it with a status; either name is read; storing it names no
// "not used" warning.
func TestClientSecretBeforeRegistration(t *testing.T) {
	h := openHost(t, t.TempDir())
	ctx := context.Background()
	warnings, err := h.SetSecret(ctx, "mcp:conf:client_secret", "s3cret")
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `mcp server "conf" is not registered yet: mcp:conf:client_secret is kept, and bound to the server's endpoint when`) {
		t.Fatalf("secret before the server: %q %v", warnings, err)
	}
	wantErr(t, "another secret of an unknown server", func() error { _, err := h.SetSecret(ctx, "mcp:conf:api-key", "v"); return err }(),
		`secret mcp:conf:api-key: mcp server "conf" is not registered (registered: none)`)
	mustAdd(t, h, ServerRequest{Name: "conf", URL: "http://127.0.0.1:1/mcp", ClientID: "confidential", AllowPrivateAddress: true})
	info, err := h.InspectServer("conf")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(info.Secrets, SecretStatus{Name: "mcp:conf:client_secret", Status: "set (the OAuth client's secret)"}) {
		t.Errorf("inspect: secrets %+v, want mcp:conf:client_secret set", info.Secrets)
	}
	h.mu.Lock()
	v, ok := h.secretLookup(h.state.Servers["conf"])(ClientSecretKey)
	h.mu.Unlock()
	if !ok || v != "s3cret" {
		t.Errorf("the client secret after registration: %q %v", v, ok)
	}

	// The older name is read, and storing it warns of nothing.
	mustAdd(t, h, ServerRequest{Name: "old", URL: "http://127.0.0.1:1/mcp", ClientID: "c2", AllowPrivateAddress: true})
	if info, _ := h.InspectServer("old"); !slices.Contains(info.Secrets, SecretStatus{Name: "mcp:old:client_secret", Status: "not set (a public client: no secret is sent)"}) {
		t.Errorf("inspect before the secret: %+v", info.Secrets)
	}
	if warnings, err := h.SetSecret(ctx, "mcp:old:client-secret", "legacy"); err != nil || len(warnings) != 0 {
		t.Errorf("mcp:old:client-secret: warnings %q, err %v; want none", warnings, err)
	}
	h.mu.Lock()
	v, ok = h.secretLookup(h.state.Servers["old"])(ClientSecretKey)
	h.mu.Unlock()
	if !ok || v != "legacy" {
		t.Errorf("the client secret under its older name: %q %v", v, ok)
	}
	if info, _ := h.InspectServer("old"); !slices.Contains(info.Secrets, SecretStatus{Name: "mcp:old:client-secret", Status: "set (the OAuth client's secret)"}) {
		t.Errorf("inspect after the secret: %+v", info.Secrets)
	}
}

// server rm removes the server's OAuth tokens (the shared grant and each
// sandbox's own), as sbx does, and leaves its other secrets, named.
func TestRemoveServerRemovesItsOAuthTokens(t *testing.T) {
	h := openHost(t, t.TempDir())
	mustAdd(t, h, ServerRequest{Name: "prot", URL: "http://127.0.0.1:1/mcp", ClientID: "c", AllowPrivateAddress: true})
	mustSandbox(t, h, "a")
	rec := &oauth.Record{URL: "http://127.0.0.1:1/mcp", Issuer: "http://as", TokenURL: "http://as/token", Token: &oauth2.Token{AccessToken: "at"}}
	if err := h.grantStore("").Save("prot", rec.URL, rec); err != nil {
		t.Fatal(err)
	}
	if err := h.grantStore("a").Save("prot", rec.URL, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetSecret(context.Background(), "mcp:prot:client_secret", "s"); err != nil {
		t.Fatal(err)
	}
	res, err := h.RemoveServer("prot")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.OAuthTokens, []string{"prot", "prot@a"}) || !slices.Equal(res.Secrets, []string{"mcp:prot:client_secret"}) {
		t.Errorf("removed tokens %q, secrets left %q; want prot and prot@a removed, the client secret left", res.OAuthTokens, res.Secrets)
	}
	for _, e := range h.Secrets() {
		if strings.Contains(e.Key, oauth.SecretKey) {
			t.Errorf("%s is still stored after server rm", e.Name)
		}
	}
}
