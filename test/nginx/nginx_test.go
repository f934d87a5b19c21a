package nginx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartProxiesAndStop puts nginx in front of a test server: a request
// through it reaches the server with the Location directives applied, and
// Stop ends nginx and removes its temporary directory.
func TestStartProxiesAndStop(t *testing.T) {
	bin, err := Binary()
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s X-Through=%s", r.Method, r.URL.Path, r.Header.Get("X-Through"))
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	port, _ := strconv.Atoi(u.Port())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{
		Upstream: port,
		Location: slices.Concat(Streaming, []string{"proxy_set_header X-Through nginx"}),
		AsRoot:   os.Geteuid() == 0,
		Bin:      bin,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	dir := p.tempDir

	resp, err := http.Get(p.URL + "/some/path")
	if err != nil {
		t.Fatalf("GET through nginx: %v\n%s", err, p.Output())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "GET /some/path X-Through=nginx"; string(body) != want {
		t.Errorf("through nginx the server saw %q, want %q", body, want)
	}

	p.Stop()
	select {
	case <-p.exited:
	default:
		t.Error("nginx still runs after Stop")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its prefix directory %s after Stop: %v, want it removed", dir, err)
	}
}

// TestStartFailsWithWhatNginxSaid: a configuration nginx rejects makes
// Start fail at once, with nginx's message.
func TestStartFailsWithWhatNginxSaid(t *testing.T) {
	if _, err := Binary(); errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, Config{Upstream: 1, Location: []string{"no_such_directive on"}, AsRoot: os.Geteuid() == 0})
	if err == nil {
		p.Stop()
		t.Fatal("Start succeeded with an unknown directive")
	}
	if !strings.Contains(err.Error(), "no_such_directive") {
		t.Errorf("Start: %v, want nginx's message naming the directive", err)
	}
}
