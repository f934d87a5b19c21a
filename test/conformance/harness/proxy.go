package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-gateway/mcp-gateway/test/nginx"
)

// proxyNginx is the -proxy value that puts nginx between the suite and the
// gateway, configured as a sandbox platform configures it for streaming.
const proxyNginx = "nginx"

// nginxDirectives are the proxy settings that matter, shown in the report.
var nginxDirectives = nginx.Streaming

// startNginx starts nginx in the foreground in front of the gateway, its
// configuration and temp paths under <out>/<name> and what it says in
// <out>/<name>.log, and returns the URL of /mcp through it and what stops it.
func (h *harness) startNginx(ctx context.Context, gatewayPort int, name string) (stop func(), _ string, _ error) {
	bin, err := nginx.Binary()
	if errors.Is(err, nginx.ErrNotInstalled) {
		return nil, "", setupErr("-proxy nginx: %v", err)
	}
	if v, err := nginx.Version(bin); err == nil {
		h.meta.Proxy = v
	}
	logPath := filepath.Join(h.out, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, "", setupErr("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := nginx.Start(ctx, nginx.Config{
		Upstream: gatewayPort,
		Location: nginxDirectives,
		AsRoot:   os.Geteuid() == 0,
		Dir:      filepath.Join(h.out, name),
		Bin:      bin,
		Log:      log,
	})
	if err != nil {
		log.Close()
		return nil, "", setupErr("starting nginx (its log: %s): %v", logPath, err)
	}
	stop = func() {
		p.Stop()
		log.Close() // only now: nginx's output is copied to it until it exits
	}
	if err := checkHealth(ctx, p.URL+"/health"); err != nil {
		stop()
		return nil, "", setupErr("through nginx: %v; its log: %s", err, logPath)
	}
	return stop, p.URL + "/mcp", nil
}

// checkHealth wants 200 from a GET of url.
func checkHealth(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d, want 200", url, resp.StatusCode)
	}
	return nil
}
