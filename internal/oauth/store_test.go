package oauth

import (
	"testing"

	"golang.org/x/oauth2"
)

func TestSecretNameOfGrant(t *testing.T) {
	for _, c := range []struct{ server, sandbox, want string }{
		{"issues", "", "mcp:issues:oauth-token"},
		{"issues", "ci", "mcp:issues:oauth-token.ci"},
	} {
		if got := SecretName(c.server, c.sandbox); got != c.want {
			t.Errorf("SecretName(%q, %q) = %q; want %q", c.server, c.sandbox, got, c.want)
		}
	}
}

// A sandbox's store keeps its grants apart from the server's shared one
// and from other sandboxes', and says how to authorize that sandbox.
func TestSandboxStoreKeepsGrantsApart(t *testing.T) {
	base := &Versioned{Store: &MemoryStore{}}
	a, b := SandboxStore{Store: base, Sandbox: "a"}, SandboxStore{Store: base, Sandbox: "b"}
	rec := &Record{URL: "https://mcp.example/mcp", Token: &oauth2.Token{AccessToken: "a-token"}}
	if err := a.Save("issues", rec.URL, rec); err != nil {
		t.Fatal(err)
	}
	if r, _ := a.Load("issues", rec.URL); r == nil || r.Token.AccessToken != "a-token" {
		t.Fatalf("sandbox a's own grant: %+v", r)
	}
	for name, s := range map[string]Store{"sandbox b": b, "the shared grant": base} {
		if r, _ := s.Load("issues", rec.URL); r != nil {
			t.Errorf("%s sees sandbox a's grant", name)
		}
	}
	if a.Version() != base.Version() || a.Version() == 0 {
		t.Errorf("a sandbox store's version %d is not its base's %d", a.Version(), base.Version())
	}
	st := NewStored("issues", rec.URL, b, nil)
	if _, err := st.Token(); err == nil || !containsFold(err.Error(), "mcp-gateway auth issues --sandbox b") {
		t.Errorf("sandbox b's error %v should say how to authorize sandbox b", err)
	}
}
