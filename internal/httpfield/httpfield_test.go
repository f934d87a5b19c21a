package httpfield

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
)

// Every name and value is judged as net/http's Transport judges them before
// it sends a request: it refuses the field, or goes on to dial.
func TestAsNetHTTP(t *testing.T) {
	errDial := errors.New("dialled: the fields passed")
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return nil, errDial }}
	names := []string{"Content-Type", "X-A_b.c~1", "", "Bad Name", "Bad:Name", "Bad\r\nName", "Ünïcode", "a(b)"}
	values := []string{"text/plain; q=0.5", "\ttabbed\t", "", "line\r\nX-Injected: 1", "nul\x00", "del\x7f", "ünicode"}
	for _, n := range names {
		for _, v := range values {
			req, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
			req.Header[n] = []string{v}
			_, err := tr.RoundTrip(req)
			netOK := errors.Is(err, errDial)
			if ours := ValidName(n) && ValidValue(v); ours != netOK {
				t.Errorf("%q: %q: ours %v, net/http's Transport %v (%v)", n, v, ours, netOK, err)
			}
		}
	}
	for _, m := range []string{"GET", "M-SEARCH", "BAD METHOD", "BAD\nMETHOD"} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:1/", nil)
		req.Method = m
		_, err := tr.RoundTrip(req)
		netOK := errors.Is(err, errDial)
		if ours := ValidName(m); ours != netOK {
			t.Errorf("method %q: ours %v, net/http's Transport %v (%v)", m, ours, netOK, err)
		}
	}
}

func TestHasToken(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   bool
	}{
		{[]string{"close"}, true},
		{[]string{"Keep-Alive, CLOSE"}, true},
		{[]string{"keep-alive", " close "}, true},
		{[]string{"closed", "x-close"}, false},
		{nil, false},
	} {
		if got := HasToken(c.values, "close"); got != c.want {
			t.Errorf("HasToken(%q, close) = %v, want %v", c.values, got, c.want)
		}
	}
}
