package main

// The processes the benchmark starts (echo servers, gateways) and what it reads
// of them in /proc. Every process is registered when started and stopped by
// its pid at the end, on failure and on Ctrl-C.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat
// (100 on every Linux this runs on; Go has no sysconf to ask).
const clockTick = 10 * time.Millisecond

// proc is a process the benchmark started, in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	pid  int

	mu    sync.Mutex
	tail  []string          // last lines of its stdout and stderr
	watch func(line string) // sees every line, under mu
	done  chan struct{}     // closed when it has exited
	state *os.ProcessState  // set before done is closed
	extra func() []int      // more pids to kill if it does not stop (its servers)
}

var (
	procsMu sync.Mutex
	procs   []*proc
)

const tailLines = 40

// startProc starts argv with env; watch (may be nil) sees every output line.
func startProc(name string, argv []string, env []string, watch func(string)) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, watch: watch, done: make(chan struct{})}
	procsMu.Lock()
	defer procsMu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p.pid = cmd.Process.Pid
	procs = append(procs, p)
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() { p.readLines(r) })
	}
	go func() {
		readers.Wait()
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) readLines(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		if len(p.tail) == tailLines {
			p.tail = append(p.tail[:0], p.tail[1:]...)
		}
		p.tail = append(p.tail, line)
		if p.watch != nil {
			p.watch(line)
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// Tail returns its last output lines, for error messages.
func (p *proc) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the exit code once it has exited (-1 for a signal).
func (p *proc) exitCode() int {
	<-p.done
	return p.state.ExitCode()
}

// stop sends SIGTERM, waits up to 5 s, then kills its process group and
// the extra pids.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	var extra []int
	if p.extra != nil {
		extra = p.extra()
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		fmt.Fprintf(os.Stderr, "bench: %s (pid %d) ignored SIGTERM for 5s; killing it\n", p.name, p.pid)
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
	// The gateway stops its servers; one that outlives it is killed here.
	for _, pid := range extra {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// stopAll stops every process started, newest first.
func stopAll() {
	procsMu.Lock()
	list := procs
	procs = nil
	procsMu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Go(p.stop)
	}
	wg.Wait()
}

// procStat is what /proc says about a process.
type procStat struct {
	cpu     time.Duration // of all its threads: their schedstat runtime, or utime+stime
	rss     int64         // VmRSS, bytes
	threads int
}

func readStat(pid int) (procStat, error) {
	var s procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	f, err := statFields(b)
	if err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	s.cpu = time.Duration(utime+stime) * clockTick
	if exact, ok := threadsRuntime(pid); ok {
		s.cpu = exact
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		name, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		switch name {
		case "VmRSS":
			kib, _ := strconv.ParseInt(fields[0], 10, 64)
			s.rss = kib << 10
		case "Threads":
			s.threads, _ = strconv.Atoi(fields[0])
		}
	}
	return s, nil
}

// threadsRuntime is the CPU time of a process's threads to the nanosecond:
// the sum of each one's time on a CPU (/proc/<pid>/task/*/schedstat, its
// first field), where utime and stime count 10 ms ticks, a few dozen of
// them in a run of the benchmark. A thread that has exited is not counted;
// Go programs keep theirs (the measured processes are Go programs).
func threadsRuntime(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	n := 0
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		first, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(first, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
		n++
	}
	return sum, n > 0
}

// statFields returns the fields of /proc/<pid>/stat after the command name:
// [0] is the state, [1] the parent pid, [11] utime, [12] stime.
func statFields(b []byte) ([]string, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("malformed")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return nil, errors.New("too few fields")
	}
	return f, nil
}

// sumStats adds the CPU and RSS of several processes.
func sumStats(pids []int) procStat {
	var sum procStat
	for _, pid := range pids {
		if s, err := readStat(pid); err == nil {
			sum.cpu += s.cpu
			sum.rss += s.rss
			sum.threads += s.threads
		}
	}
	return sum
}

// selfCPU is the benchmark's own user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fdCount is the number of open file descriptors of a process.
func fdCount(pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(entries)
}

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	want := strconv.Itoa(pid)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if f, err := statFields(b); err == nil && f[1] == want {
			kids = append(kids, n)
		}
	}
	return kids
}

// alive reports whether pid is a process that has not exited (a zombie
// nobody reaps counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f, err := statFields(b)
	return err == nil && f[0] != "Z" && f[0] != "X"
}

// echoServer is the echo MCP server in HTTP mode.
type echoServer struct {
	*proc
	ep endpoint
}

var listeningLine = regexp.MustCompile(`^listening on http://(127\.0\.0\.1:\d+)(/\S*)$`)

// startEchoHTTP starts the echo server on streamable HTTP.
func startEchoHTTP(bin string, args ...string) (*echoServer, error) {
	argv := append([]string{bin, "-http", "127.0.0.1:0"}, args...)
	p, ep, err := startListening("echo server (HTTP)", argv)
	if err != nil {
		return nil, err
	}
	return &echoServer{proc: p, ep: ep}, nil
}

// startListening starts argv and waits for its listeningLine.
func startListening(name string, argv []string) (*proc, endpoint, error) {
	addr := make(chan [2]string, 1)
	p, err := startProc(name, argv, os.Environ(), func(line string) {
		if m := listeningLine.FindStringSubmatch(line); m != nil {
			select {
			case addr <- [2]string{m[1], m[2]}:
			default:
			}
		}
	})
	if err != nil {
		return nil, endpoint{}, err
	}
	select {
	case a := <-addr:
		return p, endpoint{addr: a[0], path: a[1]}, nil
	case <-p.done:
		return nil, endpoint{}, fmt.Errorf("the %s exited with code %d before listening:\n%s", name, p.exitCode(), p.Tail())
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, endpoint{}, fmt.Errorf("the %s did not listen within 30s:\n%s", name, p.Tail())
	}
}

// gatewayProc is `mcp-gateway serve` in the foreground.
type gatewayProc struct {
	*proc
	ep      endpoint
	servers []int     // pids of its stdio servers
	pprof   *endpoint // net/http/pprof of a -pprof build; nil otherwise
}

// target returns the target of the gateway's MCP endpoint.
func (g *gatewayProc) target(name, era string) *target {
	return &target{name: name, ep: g.ep, era: era, measured: g.pid, servers: g.servers, pprof: g.pprof, childServers: true}
}

// refusedError says the gateway exited before serving.
type refusedError struct {
	code int
	tail string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("the gateway exited with code %d before it was ready:\n%s", e.code, e.tail)
}

var readyLog = regexp.MustCompile(`msg="MCP gateway is ready" port=(\d+)`)

// startGateway runs `mcp-gateway serve` on 127.0.0.1 with a free port and the
// given mcp object, and waits until /health answers with wantTools tools.
func (b *bench) startGateway(config string, wantTools int) (*gatewayProc, error) {
	return b.startGatewayBin(b.gateway, config, wantTools)
}

// startGatewayBin is startGateway with another binary (the baseline's).
func (b *bench) startGatewayBin(bin, config string, wantTools int) (*gatewayProc, error) {
	return b.startGatewayWith(bin, config, wantTools, nil, nil)
}

// startGatewayWith is startGatewayBin with more arguments and environment.
func (b *bench) startGatewayWith(bin, config string, wantTools int, extraArgs, extraEnv []string) (*gatewayProc, error) {
	port := make(chan int, 1)
	argv := []string{bin, "serve", "--config", config,
		"--host", "127.0.0.1", "--port", "0", "--token-file", "",
		"--catalog-file", filepath.Join(b.dir, "no-catalog.json"), "--github-dir", filepath.Join(b.dir, "github"),
		"--log-level", "info"}
	argv = append(argv, extraArgs...)
	if bin == b.gateway {
		argv = append(argv, b.opts.gatewayArgs...)
	}
	env := append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+b.token)
	env = append(env, extraEnv...)
	var pprofFile string
	if b.opts.pprof && bin == b.gateway {
		b.gateways++
		pprofFile = filepath.Join(b.dir, fmt.Sprintf("pprof-%d.addr", b.gateways))
		env = append(env, pprofEnv+"="+pprofFile)
	}
	p, err := startProc("gateway", argv, env, func(line string) {
		if m := readyLog.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			select {
			case port <- n:
			default:
			}
		}
	})
	if err != nil {
		return nil, err
	}
	g := &gatewayProc{proc: p}
	p.extra = func() []int { return g.servers }
	select {
	case n := <-port:
		g.ep = endpoint{addr: fmt.Sprintf("127.0.0.1:%d", n), path: "/mcp", token: b.token}
	case <-p.done:
		return nil, &refusedError{code: p.exitCode(), tail: p.Tail()}
	case <-time.After(120 * time.Second):
		p.stop()
		return nil, fmt.Errorf("the gateway was not ready within 120s:\n%s", p.Tail())
	}
	if _, err := waitHealthy(g.ep, 10*time.Second); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w\n%s", err, p.Tail())
	}
	// The serving gateway comes up even when a server fails, and retries it
	// in the background: wait (bounded) until every tool is there.
	if err := waitTools(g.ep, wantTools, 10*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	g.servers = childrenOf(p.pid)
	if pprofFile != "" {
		addr, err := os.ReadFile(pprofFile)
		if err != nil {
			p.stop()
			return nil, fmt.Errorf("-pprof: the gateway did not report its pprof address: %w", err)
		}
		g.pprof = &endpoint{addr: string(addr)}
	}
	return g, nil
}

// health is the gateway's /health document.
type health struct {
	Status    string   `json:"status"`
	Servers   []string `json:"servers"`
	Tools     int      `json:"tools"`
	Upstreams map[string]struct {
		State     string `json:"state"`
		LastError string `json:"lastError"`
	} `json:"upstreams"`
	raw []byte
}

// missingToolsError says the gateway serves fewer tools than its servers have.
type missingToolsError struct {
	want   int
	health *health
}

func (e *missingToolsError) Error() string {
	return fmt.Sprintf("the gateway serves %d tools, not %d; /health: %s", e.health.Tools, e.want, e.health.raw)
}

// reason is the first upstream's last error, or the whole /health document.
func (e *missingToolsError) reason() string {
	for name, u := range e.health.Upstreams {
		if u.LastError != "" {
			return fmt.Sprintf("server %q is %s: %s", name, u.State, u.LastError)
		}
	}
	return e.Error()
}

// waitTools polls /health until it counts want tools, for at most limit.
func waitTools(ep endpoint, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		h, err := getHealth(ep)
		if err != nil {
			return err
		}
		if h.Tools >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return &missingToolsError{want: want, health: h}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealthy polls GET /health until it answers 200, for at most limit.
func waitHealthy(ep endpoint, limit time.Duration) (*health, error) {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		h, err := getHealth(ep)
		if err == nil {
			return h, nil
		}
		last = err
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("GET /health did not answer 200 within %s: %w", limit, last)
}

func getHealth(ep endpoint) (*health, error) {
	e := ep
	e.path = "/health"
	c, err := dial(&e, time.Now().Add(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r, err := c.do("GET", "", nil)
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		return nil, fmt.Errorf("GET /health: HTTP %d: %.200q", r.status, r.body)
	}
	h := health{raw: append([]byte(nil), r.body...)}
	if err := json.Unmarshal(r.body, &h); err != nil {
		return nil, fmt.Errorf("GET /health: %w", err)
	}
	return &h, nil
}
