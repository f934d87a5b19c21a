package oauth

import (
	"net/http"
	"net/url"
	"testing"
)

func TestCheckRedirect(t *testing.T) {
	req := func(u string) *http.Request {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: p}
	}
	for _, tc := range []struct {
		to   string
		hops int
		ok   bool
	}{
		{"https://as.example/token", 1, true},
		{"http://as.example/token", 1, false}, // a downgrade: the secret and the code would go in clear
		{"http://127.0.0.1:8080/token", 1, true},
		{"http://localhost/token", 1, true},
		{"ftp://as.example/token", 1, false},
		{"https://as.example/token", 5, false},
	} {
		via := make([]*http.Request, tc.hops)
		if err := CheckRedirect(req(tc.to), via); (err == nil) != tc.ok {
			t.Errorf("redirect to %s after %d: %v, want ok=%v", tc.to, tc.hops, err, tc.ok)
		}
	}
}
