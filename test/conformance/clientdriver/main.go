// Command clientdriver puts mcp-gateway between a conformance client (the Go
// SDK's conformance/everything-client) and a scenario server of the official
// suite's client scenarios (`conformance client --command clientdriver`).
// The suite runs it as `clientdriver URL` with MCP_CONFORMANCE_SCENARIO and
// MCP_CONFORMANCE_CONTEXT set; it reads the binaries from the environment:
//
//	CLIENTDRIVER_GATEWAY  the mcp-gateway binary
//	CLIENTDRIVER_CLIENT   the everything-client binary
//	CLIENTDRIVER_LOGDIR   where to keep the gateway's log (optional)
//
// The gateway does the OAuth itself, as it does for a real remote server:
//
//   - auth/client-credentials-*: `mcp-gateway serve` with the scenario server
//     as a remote server whose "oauth" entry holds the scenario's client id
//     and its secret or private key (from envs), the headless grant;
//   - every other auth/ scenario: a host (`mcp-gateway host`) where `server
//     add` detects the OAuth server and authorizes it; the driver plays the
//     person's browser, opening the URL the gateway prints and following the
//     authorization server's redirect to the gateway's loopback callback; a
//     sandbox with the server attached is then what the client reaches
//     (through a proxy adding the sandbox's bearer token); when auth status
//     then shows the server unauthorized (its grant was dropped because the
//     server now names another authorization server), the driver
//     authorizes it again, as the person told so would; while the client
//     runs, the driver watches auth status and opens the URL of an
//     authorization shown pending (a step-up a call waits for);
//   - the other scenarios: `mcp-gateway serve` fronting the scenario server
//     as configured by default (server/discover first).
//
// The client then runs against the gateway with the scenario's environment,
// and the driver exits with the client's exit code (1 when the gateway
// could not be set up or authorized).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// cimdURL is the client ID metadata document the SDK's client offers (the
// suite's scenario servers accept it).
const cimdURL = "https://conformance-test.local/client-metadata.json"

func main() {
	os.Exit(run())
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, "clientdriver: "+format+"\n", a...) }

func run() int {
	if len(os.Args) < 2 {
		logf("usage: clientdriver URL")
		return 2
	}
	target := os.Args[len(os.Args)-1]
	gatewayBin, clientBin := os.Getenv("CLIENTDRIVER_GATEWAY"), os.Getenv("CLIENTDRIVER_CLIENT")
	if gatewayBin == "" || clientBin == "" {
		logf("set CLIENTDRIVER_GATEWAY and CLIENTDRIVER_CLIENT")
		return 2
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sctx map[string]any
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		_ = json.Unmarshal([]byte(c), &sctx)
	}
	dir, err := os.MkdirTemp("", "clientdriver-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer os.RemoveAll(dir)
	logDir := os.Getenv("CLIENTDRIVER_LOGDIR")
	if logDir == "" {
		logDir = dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	d := &driver{gateway: gatewayBin, dir: dir, logPath: filepath.Join(logDir, strings.ReplaceAll(scenario, "/", "_")+"-gateway.log")}
	defer d.stop()
	var endpoint, token string
	var hostEnv []string // a host's: the person watches auth status while the client runs
	switch {
	case strings.HasPrefix(scenario, "auth/client-credentials-"):
		endpoint, err = d.serveClientCredentials(ctx, target, sctx)
	case strings.HasPrefix(scenario, "auth/"):
		endpoint, token, err = d.hostAuthorized(ctx, target, sctx)
		hostEnv = []string{"MCP_GATEWAY_STATE_DIR=" + filepath.Join(dir, "state")}
	default:
		// A scenario server of the 2026-07-28 era that also accepts
		// initialize (request-metadata) is spoken to in its era: the
		// gateway asks server/discover first by default.
		endpoint, err = d.serve(ctx, map[string]any{"remote": map[string]any{"url": target}})
	}
	if err != nil {
		b, _ := os.ReadFile(d.logPath)
		logf("setting up the gateway for %s: %v\ngateway log:\n%s", scenario, err, tail(string(b), 30))
		return 1
	}
	if token != "" {
		endpoint, err = bearerProxy(endpoint, token)
		if err != nil {
			logf("%v", err)
			return 1
		}
	}
	logf("%s: the client goes through the gateway at %s", scenario, endpoint)
	cmd := exec.CommandContext(ctx, clientBin, endpoint)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if f, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		defer f.Close()
		fmt.Fprintf(f, "--- the client (%s %s):\n", filepath.Base(clientBin), endpoint)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stderr, f), io.MultiWriter(os.Stderr, f)
	}
	if hostEnv != nil {
		// A step-up: a call waits while the gateway asks the person for a
		// wider grant; auth status shows its URL, which the person opens.
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		go d.watchPending(wctx, hostEnv)
	}
	if err := cmd.Run(); err != nil {
		logf("the client: %v", err)
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}

type driver struct {
	gateway, dir, logPath string
	procs                 []proc
}

type proc struct {
	pid    int
	exited chan struct{}
}

// stop ends the processes it started, by their process group.
func (d *driver) stop() {
	for _, p := range d.procs {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
			<-p.exited
		}
	}
}

// start runs a long-lived gateway process in its own process group and
// waits for the line re matches in its log.
func (d *driver) start(ctx context.Context, re *regexp.Regexp, env []string, args ...string) ([]string, error) {
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(d.gateway, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logFile, pw), io.MultiWriter(logFile, pw)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); pw.Close(); logFile.Close(); close(exited) }()
	d.procs = append(d.procs, proc{pid: cmd.Process.Pid, exited: exited})
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case m := <-found:
		return m, nil
	case <-exited:
		b, _ := os.ReadFile(d.logPath)
		return nil, fmt.Errorf("%s %s exited before it was ready:\n%s", filepath.Base(d.gateway), args[0], tail(string(b), 20))
	case <-ctx.Done():
		return nil, fmt.Errorf("%s %s did not become ready: %w", filepath.Base(d.gateway), args[0], ctx.Err())
	}
}

var serveReady = regexp.MustCompile(`msg="MCP gateway is ready" port=(\d+)`)

// serve runs `mcp-gateway serve` with config, no token (loopback only).
func (d *driver) serve(ctx context.Context, config map[string]any) (string, error) {
	b, _ := json.Marshal(config)
	m, err := d.start(ctx, serveReady, nil, "serve", "--config", string(b), "--host", "127.0.0.1", "--port", "0",
		"--insecure-no-auth", "--allow-any-address", "--log-level", "debug")
	if err != nil {
		return "", err
	}
	return "http://127.0.0.1:" + m[1] + "/mcp", nil
}

// serveClientCredentials fronts the scenario server with the headless
// grant, the scenario's credentials in the server's envs.
func (d *driver) serveClientCredentials(ctx context.Context, target string, sctx map[string]any) (string, error) {
	o := map[string]any{"grant": "client_credentials", "clientId": str(sctx, "client_id")}
	envs := map[string]string{}
	if k := str(sctx, "private_key_pem"); k != "" {
		o["privateKey"], envs["CLIENT_KEY"] = "${CLIENT_KEY}", k
		if alg := str(sctx, "signing_algorithm"); alg != "" {
			o["signingAlg"] = alg
		}
	} else {
		o["clientSecret"], envs["CLIENT_SECRET"] = "${CLIENT_SECRET}", str(sctx, "client_secret")
	}
	return d.serve(ctx, map[string]any{"remote": map[string]any{"url": target, "oauth": o, "envs": envs}})
}

var hostReady = regexp.MustCompile(`msg="mcp-gateway host is ready" url=(\S+)`)

// hostAuthorized registers the scenario server on a host, authorizes it as
// a person would (the driver is the browser) and returns the endpoint and
// token of a sandbox it is attached to.
func (d *driver) hostAuthorized(ctx context.Context, target string, sctx map[string]any) (string, string, error) {
	state := filepath.Join(d.dir, "state")
	m, err := d.start(ctx, hostReady, nil, "host", "--state-dir", state, "--host", "127.0.0.1", "--port", "0", "--log-level", "debug")
	if err != nil {
		return "", "", err
	}
	hostURL := m[1]
	env := []string{"MCP_GATEWAY_STATE_DIR=" + state}
	add := []string{"server", "add", "remote", "--url", target, "--allow-private-address", "--client-metadata-url", cimdURL}
	clientID, secret := str(sctx, "client_id"), str(sctx, "client_secret")
	if clientID != "" {
		// The secret is stored after the registration (it is bound to the
		// server's URL), so authorize in a second step.
		add = append(add, "--client-id", clientID, "--skip-auth")
	}
	if err := d.cliBrowsing(ctx, env, "", add...); err != nil {
		return "", "", err
	}
	if clientID != "" {
		if secret != "" {
			if err := d.cliBrowsing(ctx, env, secret, "secret", "set", "mcp:remote:client-secret"); err != nil {
				return "", "", err
			}
		}
		if err := d.cliBrowsing(ctx, env, "", "auth", "remote"); err != nil {
			return "", "", err
		}
	}
	out, err := d.cli(ctx, env, "", "sandbox", "create", "sb", "--static", "remote", "--json")
	if err != nil {
		return "", "", err
	}
	var sb struct{ Token, URL string }
	if err := json.Unmarshal(out, &sb); err != nil {
		return "", "", fmt.Errorf("sandbox create printed %q", out)
	}
	// A grant lost since (the server now names another authorization
	// server, whose issuer did not grant it: the gateway dropped it rather
	// than send it there) is authorized again as the person would, told so
	// by auth status: the gateway discovers and registers with the new
	// authorization server itself.
	if lost, err := d.unauthorized(ctx, env); err != nil {
		return "", "", err
	} else if lost {
		logf("auth status says the server is no longer authorized: authorizing it again")
		if err := d.cliBrowsing(ctx, env, "", "auth", "remote"); err != nil {
			return "", "", err
		}
	}
	return hostURL, sb.Token, nil
}

// unauthorized reports whether auth status shows the server unauthorized.
func (d *driver) unauthorized(ctx context.Context, env []string) (bool, error) {
	out, err := d.cli(ctx, env, "", "auth", "status", "--json")
	if err != nil {
		return false, err
	}
	var st []struct {
		Server     string
		Authorized bool
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return false, fmt.Errorf("auth status printed %q", out)
	}
	for _, s := range st {
		if s.Server == "remote" {
			return !s.Authorized, nil
		}
	}
	return false, nil
}

// watchPending plays the person while the client runs: it polls auth
// status and opens each authorization URL shown pending (a step-up a call
// waits for) once.
func (d *driver) watchPending(ctx context.Context, env []string) {
	opened := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		out, err := d.cli(ctx, env, "", "auth", "status", "--json")
		if err != nil {
			continue
		}
		var st []struct{ Server, Pending string }
		if json.Unmarshal(out, &st) != nil {
			continue
		}
		for _, s := range st {
			if s.Pending != "" && !opened[s.Pending] {
				opened[s.Pending] = true
				logf("auth status shows an authorization of %s waiting (a step-up): opening its URL", s.Server)
				if err := browse(ctx, s.Pending); err != nil {
					logf("browser: %v", err)
				}
			}
		}
	}
}

// cli runs an administration command and returns its output.
func (d *driver) cli(ctx context.Context, env []string, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.gateway, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("mcp-gateway %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// cliBrowsing runs a command that may print an authorization URL, and opens
// each such URL as the person's browser would.
func (d *driver) cliBrowsing(ctx context.Context, env []string, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, d.gateway, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var printed strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		printed.WriteString(line + "\n")
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			if err := browse(ctx, u); err != nil {
				logf("browser: %v", err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("mcp-gateway %s: %v\n%s%s", strings.Join(args, " "), err, printed.String(), stderr.String())
	}
	return nil
}

// browse opens the authorization URL and follows the authorization
// server's redirects until one leads to a loopback callback, which it
// opens: the scenario servers approve at once.
func browse(ctx context.Context, u string) error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 300 || resp.StatusCode >= 400 {
			return nil // the callback answered (or the server refused)
		}
		next, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil {
			return err
		}
		u = next.String()
	}
	return fmt.Errorf("too many redirects")
}

// bearerProxy serves a local endpoint that forwards to target with the
// sandbox's token, for a client that sends none.
func bearerProxy(target, token string) (string, error) {
	tu, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	rp := httputil.NewSingleHostReverseProxy(tu)
	rp.FlushInterval = -1
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.URL.Path = tu.Path
		r.Header.Set("Authorization", "Bearer "+token)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { //nolint:errcheck // ends with the driver
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
	return "http://" + ln.Addr().String() + tu.Path, nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
