package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// proxyNginx is the -proxy value that puts nginx between the suite and the
// gateway, configured as a sandbox platform configures it for streaming.
const proxyNginx = "nginx"

// nginxDirectives are the proxy settings that matter, shown in the report.
var nginxDirectives = []string{
	"proxy_http_version 1.1",
	`proxy_set_header Connection ""`,
	"proxy_set_header Host $http_host",
	"proxy_buffering off",
	"proxy_request_buffering off",
	"proxy_read_timeout 1h",
}

// nginxConfig serves 127.0.0.1:port, proxying everything to the gateway on
// upstreamPort. Every path nginx writes is under dir. The Host header passes
// unchanged, so the gateway's DNS-rebinding check sees the suite's.
func nginxConfig(dir string, port, upstreamPort int, asRoot bool) string {
	user := ""
	if asRoot { // its workers must reach dir, which only root may
		user = "user root;\n"
	}
	var location strings.Builder
	for _, d := range nginxDirectives {
		fmt.Fprintf(&location, "\t\t\t%s;\n", d)
	}
	return fmt.Sprintf(`%sdaemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	upstream gateway {
		server 127.0.0.1:%[4]d;
		keepalive 16;
	}
	server {
		listen 127.0.0.1:%[3]d;
		client_max_body_size 16m;
		location / {
			proxy_pass http://gateway;
%[5]s		}
	}
}
`, user, dir, port, upstreamPort, location.String())
}

// startNginx starts nginx in the foreground in front of the gateway and
// returns it and the URL of /mcp through it.
func (h *harness) startNginx(ctx context.Context, gatewayPort int) (*proc, string, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			return nil, "", setupErr("-proxy nginx: nginx is not installed (apt-get install nginx-light)")
		}
		bin = "/usr/sbin/nginx"
	}
	if v, err := exec.Command(bin, "-v").CombinedOutput(); err == nil {
		h.meta.Proxy = strings.TrimPrefix(strings.TrimSpace(string(v)), "nginx version: ")
	}
	dir := filepath.Join(h.out, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", setupErr("%v", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, "", setupErr("%v", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, port, gatewayPort, os.Geteuid() == 0)), 0o644); err != nil {
		return nil, "", setupErr("%v", err)
	}
	p, err := startProc("nginx", h.root, filepath.Join(h.out, "nginx.log"), h.env, bin, "-p", dir, "-c", conf, "-e", "stderr")
	if err != nil {
		return nil, "", setupErr("starting nginx: %v", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(ctx, p, base+"/health", func(r *http.Response) bool { return r.StatusCode == http.StatusOK }); err != nil {
		p.stop()
		return nil, "", setupErr("%v", err)
	}
	return p, base + "/mcp", nil
}
