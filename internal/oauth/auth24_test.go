package oauth

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The scopes an authorization asks for, in sbx's order: the person's
// (Scopes) first, in place of those discovered, with no offline_access
// added to them; ExactScopes drops the step-up union; NoScope asks for
// none; a scope the server does not list is refused before the person is
// sent anywhere. Without any, the discovered scopes (with offline_access).
func TestAuthorizeScopesPersonFirst(t *testing.T) {
	as := newTestAS(t)
	as.scopes = []string{"read", "write", "offline_access"}
	rs := newTestRSPRM(t, as, func(m *oauthex.ProtectedResourceMetadata) { m.ScopesSupported = []string{"read", "write"} })
	for _, tc := range []struct {
		name string
		cfg  FlowConfig
		want []string // asked at the authorization endpoint
	}{
		{"discovered", FlowConfig{}, []string{"read", "write", "offline_access"}},
		{"the person's scopes first", FlowConfig{Scopes: []string{"read"}}, []string{"read"}},
		{"with step-up", FlowConfig{Scopes: []string{"read"}, StepUp: []string{"write"}}, []string{"read", "write"}},
		{"exact", FlowConfig{Scopes: []string{"read"}, StepUp: []string{"write"}, ExactScopes: true}, []string{"read"}},
		{"no scope", FlowConfig{NoScope: true, ExactScopes: true, StepUp: []string{"write"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, _, err := runFlow(t, rs.url, tc.cfg, nil)
			if err != nil {
				t.Fatalf("authorize: %v", err)
			}
			as.mu.Lock()
			var asked []string
			for _, c := range as.codes {
				asked = c.scopes
			}
			as.codes = map[string]codeGrant{}
			as.mu.Unlock()
			slices.Sort(asked)
			slices.Sort(rec.Requested)
			slices.Sort(tc.want)
			if !slices.Equal(asked, tc.want) || !slices.Equal(rec.Requested, tc.want) {
				t.Errorf("asked %q (recorded %q), want %q", asked, rec.Requested, tc.want)
			}
			if !slices.Equal(rec.Supported, as.scopes) {
				t.Errorf("supported %q, want the authorization server's %q", rec.Supported, as.scopes)
			}
		})
	}
	_, _, _, err := runFlow(t, rs.url, FlowConfig{Scopes: []string{"read", "admin"}}, nil)
	var se *StepError
	if !errors.As(err, &se) || se.Step != "scope check" || !strings.Contains(err.Error(), `scope "admin" is not one the server supports (read write offline_access)`) {
		t.Fatalf("an unsupported scope: %v", err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, c := range as.codes {
		t.Errorf("the person was sent to authorize %q despite the unsupported scope", c.scopes)
	}
}
