package httpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/httpc"
)

// TestSend: requests sent with a prepared head reach the server as
// RoundTrip's do — the same method, path, headers and body — and share the
// Transport's connections with them.
func TestSend(t *testing.T) {
	ch := make(chan seen, 1)
	srv := newServer(t, recorder(ch))
	tr, d, _ := newTransport(t)
	u, _ := url.Parse(srv.URL + "/mcp?x=1")
	header := http.Header{
		"Content-Type":   {"application/json"},
		"Accept":         {"application/json, text/event-stream"},
		"Mcp-Session-Id": {"s1"},
		"User-Agent":     {"mcp-gateway"},
		"X-Two":          {"a", "b"},
	}
	p := httpc.Prepare(http.MethodPost, u, header)
	if p == nil {
		t.Fatal("Prepare: nil for a plain POST")
	}
	for i, body := range []string{`{"jsonrpc":"2.0","id":1}`, "", strings.Repeat("x", 2<<20)} {
		resp, err := tr.Send(t.Context(), p, []byte(body))
		if err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := <-ch
		if err != nil || string(data) != "POST "+body || resp.Header.Get("X-Answer") != "yes" {
			t.Errorf("Send %d: answer %.40q, %v", i, data, err)
		}
		if resp.Request == nil || resp.Request.Method != http.MethodPost || resp.Request.URL != u {
			t.Errorf("Send %d: the response's Request is %+v", i, resp.Request)
		}
		if got.method != "POST" || got.uri != "/mcp?x=1" || got.body != body || got.contentLength != int64(len(body)) {
			t.Errorf("Send %d: the server saw %s %s, %d bytes (length %d)", i, got.method, got.uri, len(got.body), got.contentLength)
		}
		for k, v := range header {
			if strings.Join(got.header[k], "|") != strings.Join(v, "|") {
				t.Errorf("Send %d: the server saw %s: %q, want %q", i, k, got.header[k], v)
			}
		}
	}
	roundTrip(t, tr, request(t, t.Context(), "POST", srv.URL+"/mcp", "x"))
	<-ch
	if srv.opened.Load() != 1 || d.n.Load() != 1 {
		t.Errorf("4 requests took %d connections (%d dialled), want 1", srv.opened.Load(), d.n.Load())
	}
}

// TestPrepareLeaves: a head RoundTrip would leave to Fallback is not
// prepared.
func TestPrepareLeaves(t *testing.T) {
	plain, _ := url.Parse("http://example.test/mcp")
	secure, _ := url.Parse("https://example.test/mcp")
	for name, tt := range map[string]struct {
		u      *url.URL
		header http.Header
	}{
		"https":             {secure, nil},
		"an invalid value":  {plain, http.Header{"X-Bad": {"a\nb"}}},
		"an invalid name":   {plain, http.Header{"X Bad": {"a"}}},
		"Expect":            {plain, http.Header{"Expect": {"100-continue"}}},
		"an upgrade":        {plain, http.Header{"Connection": {"upgrade"}, "Upgrade": {"websocket"}}},
		"a hop-by-hop name": {plain, http.Header{"Connection": {"X-Private"}}},
	} {
		if httpc.Prepare(http.MethodPost, tt.u, tt.header) != nil {
			t.Errorf("%s: prepared", name)
		}
	}
}

// TestSendCancelled: a request whose context ends while it waits for its
// answer fails with the context's error.
func TestSendCancelled(t *testing.T) {
	h, arrived, _ := blocking(t)
	srv := newServer(t, h)
	tr, _, _ := newTransport(t)
	u, _ := url.Parse(srv.URL + "/block")
	p := httpc.Prepare(http.MethodPost, u, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Send(ctx, p, []byte("x"))
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
