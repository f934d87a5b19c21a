package upstream

import (
	"net/http"
	"testing"
	"time"
)

// TestDirectTransport: only a client as NewHTTPClient made it has its
// requests sent without http.Client.Do; any change to it that Do would
// act on keeps Do.
func TestDirectTransport(t *testing.T) {
	if directTransport(NewHTTPClient("s", nil)) == nil {
		t.Error("NewHTTPClient's client: not sent directly")
	}
	for name, edit := range map[string]func(*http.Client){
		"a timeout":             func(c *http.Client) { c.Timeout = time.Second },
		"redirects followed":    func(c *http.Client) { c.CheckRedirect = nil },
		"another redirect rule": func(c *http.Client) { c.CheckRedirect = func(*http.Request, []*http.Request) error { return nil } },
		"another transport":     func(c *http.Client) { c.Transport = http.DefaultTransport },
	} {
		c := NewHTTPClient("s", nil)
		edit(c)
		if directTransport(c) != nil {
			t.Errorf("client with %s: sent directly", name)
		}
	}
	if directTransport(&http.Client{}) != nil {
		t.Error("a zero client: sent directly")
	}
}
