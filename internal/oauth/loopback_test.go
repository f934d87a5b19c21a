package oauth

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestLoopbackTakesOnlyItsCallback: the callback endpoint takes one GET
// carrying the awaited authorization's state. A request from anyone else
// (another local process, a web page guessing the port) — before the
// authorization began, with another state, with ?error=, or not a GET — is
// refused and neither ends the authorization nor uses it up.
func TestLoopbackTakesOnlyItsCallback(t *testing.T) {
	lb, err := NewLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	status := func(method, query string) int {
		t.Helper()
		req, _ := http.NewRequest(method, lb.RedirectURL()+"?"+query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("GET", "code=c&state=s1"); got != http.StatusBadRequest {
		t.Errorf("a callback before the authorization began: %d, want 400", got)
	}

	type result struct {
		res *auth.AuthorizationResult
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shown := make(chan struct{})
	go func() {
		res, err := lb.Fetcher(func(string) { close(shown) })(ctx, &auth.AuthorizationArgs{URL: "https://as.example/authorize?client_id=x&state=s1"})
		done <- result{res, err}
	}()
	<-shown
	for _, stranger := range []struct{ method, query string }{
		{"GET", "error=access_denied&state=other"},
		{"GET", "error=access_denied"},
		{"GET", "code=forged&state=other"},
		{"POST", "code=c&state=s1"},
	} {
		if got := status(stranger.method, stranger.query); got < 400 {
			t.Errorf("%s ?%s: %d, want it refused", stranger.method, stranger.query, got)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("a stranger's request ended the authorization: %+v %v", r.res, r.err)
	default:
	}
	if got := status("GET", "code=c&state=s1&iss=https://as.example"); got != http.StatusOK {
		t.Errorf("the awaited callback: %d, want 200", got)
	}
	r := <-done
	if r.err != nil || r.res == nil || r.res.Code != "c" || r.res.State != "s1" {
		t.Fatalf("authorization ended with %+v, %v; want the awaited callback's code", r.res, r.err)
	}
	if got := status("GET", "code=c&state=s1"); got != http.StatusBadRequest {
		t.Errorf("the same callback again: %d, want 400", got)
	}
}
