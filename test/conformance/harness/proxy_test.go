package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/test/nginx"
)

// TestStartNginx starts the -proxy nginx front of a stand-in gateway: /mcp
// through it reaches the gateway, its files are under <out>/nginx, and
// stop ends it.
func TestStartNginx(t *testing.T) {
	if _, err := nginx.Binary(); errors.Is(err, nginx.ErrNotInstalled) {
		t.Skip(err)
	}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.Path+" Host="+r.Host)
	}))
	defer gw.Close()
	u, _ := url.Parse(gw.URL)
	port, _ := strconv.Atoi(u.Port())

	h := &harness{out: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop, mcpURL, err := h.startNginx(ctx, port, "nginx")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if h.meta.Proxy == "" {
		t.Error("the report's Proxy (nginx's version) is empty")
	}
	if _, err := os.Stat(filepath.Join(h.out, "nginx", "nginx.conf")); err != nil {
		t.Errorf("nginx.conf under <out>/nginx: %v", err)
	}
	resp, err := http.Post(mcpURL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "POST /mcp Host=" + mustHost(t, mcpURL); string(body) != want {
		t.Errorf("the gateway saw %q, want %q", body, want)
	}
	stop()
	if _, err := http.Get(mcpURL); err == nil {
		t.Error("nginx still answers after stop")
	}
}

func mustHost(t *testing.T, s string) string {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
