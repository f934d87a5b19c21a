package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// A proc is a long-running process the harness started (the fixtures, the
// gateway). It runs in its own process group, which stop signals by its id.
type proc struct {
	name    string
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	waitErr error
}

func startProc(name, dir, logPath string, env []string, argv ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, and SIGKILL if it has not exited
// within 10 s. The gateway stops its own servers' groups on SIGTERM.
func (p *proc) stop() {
	if !p.running() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		fmt.Printf("%s did not stop on SIGTERM; killing it\n", p.name)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// waitHTTP polls url until ready accepts a response, the process exits, or a
// minute passes.
func waitHTTP(ctx context.Context, p *proc, url string, ready func(*http.Response) bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if ready(resp) {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); the end of %s:\n%s", p.name, p.waitErr, p.log, tail(p.log, 2000))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %v; the end of %s:\n%s", p.name, url, ctx.Err(), p.log, tail(p.log, 2000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before ours binds; on this test machine that does not happen.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimRight(string(b), "\n")
}
