package main

// Start-up: the sandbox launcher, `mcp-gateway --config ...`, timed from
// exec to its exit 0 with the ready line, and the serving process's own
// account of it (its debug line "start-up time").

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// launchResult is one launch.
type launchResult struct {
	launch  time.Duration // exec of the launcher to its exit 0
	total   time.Duration // the serving process: start to serving
	slowest time.Duration // the slowest server's start and tools/list
	share   time.Duration // total - slowest: the gateway's own share
}

// startupResult is every launch with one server count.
type startupResult struct {
	servers  int
	launches []launchResult
}

var (
	readyLine   = regexp.MustCompile(`MCP gateway is ready on port (\d+) \(pid (\d+)\)`)
	startupLine = regexp.MustCompile(`msg="start-up time" total=(\S+) slowest_server=(\S+) gateway_share=(\S+)`)
)

func (b *bench) startup() {
	progress("\n== start-up ==")
	for _, n := range b.opts.startupServers {
		res := &startupResult{servers: n}
		for rep := range b.opts.startupReps {
			l, err := b.launchOnce(n, rep)
			if err != nil {
				b.fail("launch with %d server(s): %v", n, err)
				break
			}
			res.launches = append(res.launches, l)
			progress("launch with %2d server(s): ready after %s (gateway: total %s, slowest server %s, own share %s)",
				n, ms(l.launch), ms(l.total), ms(l.slowest), ms(l.share))
		}
		if len(res.launches) > 0 {
			b.report.startup = append(b.report.startup, res)
		}
	}
}

// oneEcho is the mcp object of one stdio echo server named echo.
func (b *bench) oneEcho() string {
	return fmt.Sprintf(`{"echo":{"runCmd":"exec '%s'"}}`, b.echo)
}

// echoConfig is an mcp object of n echo servers named s01, s02, ...
func (b *bench) echoConfig(n int, args string) string {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"s%02d":{"runCmd":"exec '%s'%s"}`, i+1, b.echo, args)
	}
	sb.WriteString("}")
	return sb.String()
}

func (b *bench) launchOnce(n, rep int) (launchResult, error) {
	var l launchResult
	dir := filepath.Join(b.dir, fmt.Sprintf("launch-%d-%d", n, rep))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return l, err
	}
	logFile := filepath.Join(dir, "gateway.log")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.gateway, "--config", b.echoConfig(n, ""),
		"--host", "127.0.0.1", "--port", "0",
		"--pid-file", filepath.Join(dir, "gateway.pid"), "--log-file", logFile,
		"--token-file", filepath.Join(dir, "token"), "--catalog-file", filepath.Join(dir, "no-catalog.json"),
		"--github-dir", filepath.Join(dir, "github"), "--log-level", "debug")
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+b.token)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	began := time.Now()
	out, err := cmd.Output()
	l.launch = time.Since(began)
	m := readyLine.FindStringSubmatch(string(out))
	var port, pid int
	if m != nil {
		fmt.Sscan(m[1], &port)
		fmt.Sscan(m[2], &pid)
		defer stopDaemon(pid)
	}
	if err != nil {
		return l, fmt.Errorf("the launcher failed: %v\n%s%s", err, out, stderr.String())
	}
	if m == nil {
		return l, fmt.Errorf("the launcher exited 0 without the ready line: %q", out)
	}
	h, err := getHealth(endpoint{addr: fmt.Sprintf("127.0.0.1:%d", port), path: "/health"})
	if err != nil {
		return l, err
	}
	if len(h.Servers) != n || h.Tools != n {
		return l, fmt.Errorf("/health says %d servers and %d tools, want %d of each", len(h.Servers), h.Tools, n)
	}
	// The debug line is logged just before readiness is reported.
	log, err := os.ReadFile(logFile)
	if err != nil {
		return l, err
	}
	s := startupLine.FindStringSubmatch(string(log))
	if s == nil {
		return l, fmt.Errorf(`no "start-up time" debug line in %s:\n%s`, logFile, log)
	}
	for i, d := range []*time.Duration{&l.total, &l.slowest, &l.share} {
		if *d, err = time.ParseDuration(s[i+1]); err != nil {
			return l, fmt.Errorf("start-up time line %q: %w", s[0], err)
		}
	}
	return l, nil
}

// stopDaemon stops the detached gateway the launcher left running: SIGTERM by
// its pid, then after 5 s SIGKILL to its process group (it leads its own).
func stopDaemon(pid int) {
	if pid <= 1 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if alive(pid) {
		fmt.Fprintf(os.Stderr, "bench: the daemon (pid %d) ignored SIGTERM for 5s; killing its process group\n", pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// medianOf returns the median of the values f picks.
func medianOf[T any](xs []T, f func(T) time.Duration) time.Duration {
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		ds[i] = f(x)
	}
	return median(ds)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
