// Package template tests what a sandbox platform and a host do with Docker:
// template/Dockerfile built by a real dockerd and the gateway launched in
// the container as the sandbox SDKs launch it (template_test.go), and host
// mode running an MCP server published as an OCI image (oci_test.go).
//
// The tests start their own dockerd (its own data root under the cache
// directory, exec root, socket and bridge) and stop it at the end. There is
// no image registry on these machines, so the base image is made locally by
// make-base.sh (debootstrap) once and kept, as a tarball and in the data
// root, under $MCP_GATEWAY_TEST_CACHE (default ~/.cache/mcp-gateway-test).
// They need root, dockerd, a docker client that builds with BuildKit
// (Debian's docker.io has both) and, for the first run, debootstrap.
// Under CI=true they fail when any of it is missing; otherwise they skip.
package template

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	bridgeName   = "mcpgwtest0"
	bridgeSubnet = "172.31.250.1/24"
)

var (
	repoRoot   string
	gatewayBin string // a static mcp-gateway built from this checkout
	runnerBin  string // and its code-mode runner, beside it
	dockerd    *daemon
	baseImage  string // the locally made base image (node, npm, git)
	unusable   string // why the tests cannot run here, if they cannot
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
	dir, err := os.MkdirTemp("/tmp", "mgt")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if why := prerequisites(); why != "" {
		unusable = why
		return m.Run()
	}
	// One run at a time per cache directory: they would share its data
	// root and the bridge.
	unlock, err := lockCache()
	if err != nil {
		fmt.Fprintln(os.Stderr, "template tests:", err)
		return 1
	}
	defer unlock()
	gatewayBin = filepath.Join(dir, "out", "mcp-gateway")
	if err := goBuild(gatewayBin, "./cmd/mcp-gateway"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	runnerBin = filepath.Join(dir, "out", "mcp-gateway-codemode")
	if err := goBuild(runnerBin, "./cmd/mcp-gateway-codemode"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := startDaemon(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "template tests: starting dockerd:", err)
		return 1
	}
	dockerd = d
	defer d.stop()
	if baseImage, err = ensureBase(d); err != nil {
		fmt.Fprintln(os.Stderr, "template tests: the base image:", err)
		return 1
	}
	return m.Run()
}

// need skips (or, under CI=true, fails) a test that cannot run here.
func need(t *testing.T) {
	t.Helper()
	if unusable == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and the Docker tests cannot run: %s (.ci/run installs docker.io and debootstrap)", unusable)
	}
	t.Skipf("no Docker here: %s", unusable)
}

func prerequisites() string {
	if os.Geteuid() != 0 {
		return "the tests start their own dockerd, which needs root"
	}
	for _, bin := range []string{"dockerd", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed (apt-get install docker.io iproute2)"
		}
	}
	if dockerCLI() == "" {
		return "no docker client that builds with BuildKit (Debian's docker.io has one at /usr/bin/docker; a newer client needs the buildx plugin)"
	}
	return ""
}

// dockerCLI returns a docker client that builds with BuildKit, which the
// Dockerfile's build arguments UV=no and GATEWAY=image need (the classic
// builder builds every stage, and would pull ghcr.io/astral-sh/uv): Docker
// up to 22 builds with BuildKit on its own, later ones with buildx.
func dockerCLI() string {
	candidates := []string{"/usr/bin/docker"}
	if p, err := exec.LookPath("docker"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err != nil {
			continue
		}
		if exec.Command(c, "buildx", "version").Run() == nil {
			return c
		}
		out, err := exec.Command(c, "version", "--format", "{{.Client.Version}}").Output()
		if err != nil && len(out) == 0 {
			continue
		}
		major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
		if n, err := strconv.Atoi(major); err == nil && n < 23 {
			return c
		}
	}
	return ""
}

func cacheDir() string {
	if d := os.Getenv("MCP_GATEWAY_TEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "mcp-gateway-test")
	}
	return filepath.Join(os.TempDir(), "mcp-gateway-test")
}

// lockCache takes the cache directory's lock, waiting for another run of
// these tests to finish.
func lockCache() (unlock func(), err error) {
	if err := os.MkdirAll(cacheDir(), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(cacheDir(), "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		fmt.Fprintf(os.Stderr, "template tests: waiting for another run to release %s\n", f.Name())
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
	}
	return func() { f.Close() }, nil
}

// goBuild builds a static binary of pkg (a path in this module).
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// daemon is the tests' own dockerd.
type daemon struct {
	cmd    *exec.Cmd
	host   string // DOCKER_HOST
	cli    string
	logf   string
	bridge bool // the tests made the bridge
	exited chan struct{}
}

func startDaemon(dir string) (*daemon, error) {
	cache := cacheDir()
	exe := filepath.Join(dir, "exec")
	if err := os.MkdirAll(exe, 0o700); err != nil {
		return nil, err
	}
	d := &daemon{host: "unix://" + filepath.Join(exe, "docker.sock"), cli: dockerCLI(), logf: filepath.Join(cacheDir(), "dockerd.log")}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	// A bridge of the tests' own, so a system dockerd's docker0 is left alone.
	_ = exec.Command("ip", "link", "del", bridgeName).Run() // left by a killed run
	for _, args := range [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", bridgeSubnet, "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	d.bridge = true
	logf, err := os.Create(d.logf)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	d.cmd = exec.Command("dockerd",
		"--data-root", filepath.Join(cache, "docker"),
		"--exec-root", exe,
		"--pidfile", filepath.Join(exe, "docker.pid"),
		"-H", d.host,
		"--bridge", bridgeName,
		"--storage-driver", "overlay2")
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.stop()
		return nil, err
	}
	d.exited = make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := d.run(context.Background(), nil, "version"); err == nil {
			return d, nil
		}
		select {
		case <-d.exited:
			d.stop()
			return nil, fmt.Errorf("dockerd exited; its log (%s):\n%s", d.logf, tail(d.logf))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("dockerd did not answer within 60 s; its log (%s):\n%s", d.logf, tail(d.logf))
		}
	}
}

// stop removes the tests' containers and build cache, stops dockerd (TERM,
// then KILL after 30 s) and removes the bridge. The base image stays in the
// data root for next time.
func (d *daemon) stop() {
	if d.exited != nil {
		select {
		case <-d.exited:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if ids, err := d.run(ctx, nil, "ps", "-aq"); err == nil && strings.TrimSpace(ids) != "" {
				_, _ = d.run(ctx, nil, append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
			}
			// Each run's layers differ (a new gateway binary): keep only
			// the base image, so the data root does not grow run by run.
			_, _ = d.run(ctx, nil, "builder", "prune", "-af")
			_, _ = d.run(ctx, nil, "image", "prune", "-f")
			cancel()
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
				<-d.exited
			}
		}
	}
	if d.bridge {
		_ = exec.Command("ip", "link", "del", bridgeName).Run()
	}
}

// run runs the docker client against the daemon and returns its stdout; an
// error carries its stderr.
func (d *daemon) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.cli, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.host, "DOCKER_BUILDKIT=1")
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, lastLines(errb.String()+out.String(), 40))
	}
	return out.String(), nil
}

// must runs the docker client and fails the test on an error.
func (d *daemon) must(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := d.run(ctx, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ensureBase loads the base image into the daemon: from its data root when
// there, else from the cached tarball, made by make-base.sh when missing.
// Its tag is the hash of make-base.sh, so a changed script makes a new one.
func ensureBase(d *daemon) (string, error) {
	script := filepath.Join(repoRoot, "test", "template", "make-base.sh")
	b, err := os.ReadFile(script)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	tag := hex.EncodeToString(sum[:6])
	image := "mcp-gateway-test-base:" + tag
	ctx := context.Background()
	if _, err := d.run(ctx, nil, "image", "inspect", image); err == nil {
		return image, nil
	}
	tarball := filepath.Join(cacheDir(), "base-"+tag+".tar")
	if _, err := os.Stat(tarball); err != nil {
		if _, err := exec.LookPath("debootstrap"); err != nil {
			return "", fmt.Errorf("%s is missing and debootstrap, which makes it, is not installed (apt-get install debootstrap)", tarball)
		}
		fmt.Fprintf(os.Stderr, "template tests: making the base image %s once (debootstrap; a few minutes)\n", tarball)
		cmd := exec.Command(script, tarball)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("make-base.sh: %w", err)
		}
	}
	f, err := os.Open(tarball)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := d.run(ctx, f, "import", "--change", "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt", "-", image); err != nil {
		return "", err
	}
	return image, nil
}

// importFiles makes an image holding files (path in the image → path on
// this machine, mode 0755).
func (d *daemon) importFiles(t *testing.T, image string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for dst, src := range files {
		for dir := filepath.Dir(dst); dir != "/" && dir != "." && !dirs[dir]; dir = filepath.Dir(dir) {
			dirs[dir] = true
			if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(dir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(dst, "/"), Mode: 0o755, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.run(context.Background(), &buf, "import", "-", image); err != nil {
		t.Fatal(err)
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	return lastLines(string(b), 30)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// publishedPort returns the host address docker published a container's port on.
func (d *daemon) publishedPort(t *testing.T, container, port string) string {
	t.Helper()
	out := d.must(t, "port", container, port)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "127.0.0.1:") {
			return line
		}
	}
	t.Fatalf("docker port %s %s: no port published on 127.0.0.1: %q", container, port, out)
	return ""
}
