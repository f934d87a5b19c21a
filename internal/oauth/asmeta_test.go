package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

func TestParseAuthServerMetadata(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t"}`, ""},
		{`{"issuer":"http://127.0.0.1:9","authorization_endpoint":"http://127.0.0.1:9/a","token_endpoint":"http://127.0.0.1:9/t"}`, ""},
		{`not json`, `mcp server "s": --oauth-authorization-server is not an RFC 8414 metadata document (JSON)`},
		{`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a"}`, `mcp server "s": --oauth-authorization-server's metadata has no token_endpoint`},
		{`{"issuer":"http://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t"}`, `must be an https URL (http only on loopback)`},
	} {
		_, err := ParseAuthServerMetadata("s", []byte(tc.doc))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// The transport answers the named issuer's metadata, and stands in for a
// server's missing resource metadata, and passes everything else through.
func TestAuthServerTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/has" {
			w.Write([]byte(`{"resource":"real"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	meta := &oauthex.AuthServerMeta{Issuer: srv.URL + "/as", AuthorizationEndpoint: srv.URL + "/a", TokenEndpoint: srv.URL + "/t"}
	c := withAuthServer(srv.Client(), srv.URL+"/mcp", meta)
	get := func(path string) string {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.Status + " " + b.String()
	}
	if got := get("/.well-known/oauth-authorization-server/as"); !strings.Contains(got, `"token_endpoint":"`+srv.URL+`/t"`) {
		t.Errorf("issuer metadata: %s", got)
	}
	if got := get("/.well-known/oauth-protected-resource/mcp"); !strings.Contains(got, `"authorization_servers":["`+srv.URL+`/as"]`) || !strings.Contains(got, `"resource":"`+srv.URL+`/mcp"`) {
		t.Errorf("missing resource metadata: %s", got)
	}
	if got := get("/.well-known/oauth-protected-resource/has"); got != `200 OK {"resource":"real"}` {
		t.Errorf("existing resource metadata: %s", got)
	}
	if got := get("/other"); !strings.HasPrefix(got, "404") {
		t.Errorf("other path: %s", got)
	}
}
