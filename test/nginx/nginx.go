// Package nginx runs nginx in front of a server on loopback, as a sandbox
// platform's reverse proxy, for the tests and the conformance harness: one
// foreground nginx per Start, its configuration and temp paths under one
// prefix directory, on a free 127.0.0.1 port, stopped by Stop.
package nginx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled is returned when no nginx binary is found.
var ErrNotInstalled = errors.New("nginx is not installed (apt-get install nginx-light)")

// Streaming are the location directives a platform sets in front of a
// streaming server: HTTP/1.1 upstream connections kept alive, the client's
// Host passed on (so a DNS-rebinding check sees it), nothing buffered in
// either direction, long reads for long streams.
var Streaming = []string{
	"proxy_http_version 1.1",
	`proxy_set_header Connection ""`,
	"proxy_set_header Host $http_host",
	"proxy_buffering off",
	"proxy_request_buffering off",
	"proxy_read_timeout 1h",
}

// Config says what to put nginx in front of and how.
type Config struct {
	// Upstream is the 127.0.0.1 port nginx proxies every request to.
	Upstream int
	// Location holds the directives, without their ";", that follow
	// proxy_pass in "location /"; nil adds none (see Streaming).
	Location []string
	// AsRoot runs the workers as root ("user root;"). When nginx is started
	// by root its workers otherwise run as nobody, who may not reach Dir.
	AsRoot bool
	// Dir is the prefix directory, holding nginx.conf, nginx.pid and the
	// temp paths; "" makes a temporary one that Stop removes.
	Dir string
	// Bin is the nginx binary; "" finds it with Binary.
	Bin string
	// Log, if set, receives nginx's stdout and stderr as well.
	Log io.Writer
}

// A Proxy is a running nginx.
type Proxy struct {
	// URL is its base URL, http://127.0.0.1:port, with no path.
	URL string

	cmd     *exec.Cmd
	out     *buffer
	exited  chan struct{}
	tempDir string // removed by Stop; "" when Config.Dir was given
}

// Binary returns the path of nginx: on $PATH or /usr/sbin/nginx (Debian's,
// not on a user's $PATH), or ErrNotInstalled.
func Binary() (string, error) {
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", ErrNotInstalled
}

// Version returns what bin -v says, such as "nginx/1.22.1".
func Version(bin string) (string, error) {
	v, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -v: %w: %s", bin, err, v)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(v)), "nginx version: "), nil
}

// conf returns the nginx.conf for c (its Dir set), listening on
// 127.0.0.1:port.
func conf(c Config, port int) string {
	user := ""
	if c.AsRoot {
		user = "user root;\n"
	}
	var location strings.Builder
	for _, d := range c.Location {
		fmt.Fprintf(&location, "\t\t\t%s;\n", d)
	}
	return fmt.Sprintf(`%sdaemon off;
master_process on;
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
`, user, c.Dir, port, c.Upstream, location.String())
}

// Start writes the configuration, starts nginx in the foreground in its own
// process group and returns once it accepts connections. It fails if nginx
// exits first or ctx ends first; the error then holds what nginx said.
func Start(ctx context.Context, c Config) (*Proxy, error) {
	if c.Bin == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		c.Bin = bin
	}
	p := &Proxy{out: &buffer{}, exited: make(chan struct{})}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "nginx-")
		if err != nil {
			return nil, err
		}
		c.Dir, p.tempDir = dir, dir
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		p.removeTemp()
		return nil, err
	}
	confPath := filepath.Join(c.Dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf(c, port)), 0o644); err != nil {
		p.removeTemp()
		return nil, err
	}
	var out io.Writer = p.out
	if c.Log != nil {
		out = io.MultiWriter(p.out, c.Log)
	}
	p.cmd = exec.Command(c.Bin, "-p", c.Dir, "-c", confPath, "-e", "stderr")
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.removeTemp()
		return nil, fmt.Errorf("starting nginx: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p.URL = "http://" + addr
	if err := p.waitListening(ctx, addr); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Proxy) waitListening(ctx context.Context, addr string) error {
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("nginx exited at start (%v):\n%s", p.cmd.ProcessState, p.Output())
		case <-ctx.Done():
			return fmt.Errorf("nginx does not listen on %s: %w:\n%s", addr, ctx.Err(), p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends nginx: SIGTERM to the master, which stops its workers, and
// SIGKILL to the process group if it has not exited within 10 s. It then
// removes the temporary prefix directory. Calling it again does nothing.
func (p *Proxy) Stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
	p.removeTemp()
}

// Output returns what nginx has written to its stdout and stderr so far.
func (p *Proxy) Output() string { return p.out.String() }

func (p *Proxy) removeTemp() {
	if p.tempDir != "" {
		_ = os.RemoveAll(p.tempDir)
		p.tempDir = ""
	}
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before nginx binds it; on a test machine that does not happen.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// buffer is what nginx writes, read while it runs.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
