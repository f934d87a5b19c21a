package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// busyPort returns a port some other listener holds for the test's length.
func busyPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// A launch whose port is taken fails with a message naming the port, and
// leaves no token file behind.
func TestLaunchOnABusyPortRemovesTheTokenFile(t *testing.T) {
	port := busyPort(t)
	g := newGW(t)
	g.launch(fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()), "--port", fmt.Sprint(port))
	if g.exit == 0 {
		t.Fatalf("launch on busy port %d succeeded: %s", port, g.stdout)
	}
	if want := fmt.Sprintf("port %d", port); !strings.Contains(g.stderr, want) {
		t.Errorf("the launcher's message does not name %s:\n%s", want, g.stderr)
	}
	if _, err := os.Stat(g.tokenFile()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file after the failed launch: %v; want it removed", err)
	}
}

// So does serve, which writes its token file itself.
func TestServeOnABusyPortRemovesTheTokenFile(t *testing.T) {
	port := busyPort(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	cmd := exec.Command(gatewayBin, "serve", "--config", fmt.Sprintf(`{"one": {"runCmd": %q}}`, testServerCmd()),
		"--host", "127.0.0.1", "--port", fmt.Sprint(port), "--token-file", tokenFile, "--catalog-file", filepath.Join(dir, "none.json"))
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("serve on busy port %d: %v, want a failure exit\n%s", port, err, out)
	}
	if want := fmt.Sprintf("listening on port %d", port); !strings.Contains(string(out), want) {
		t.Errorf("serve's message does not say %q:\n%s", want, out)
	}
	if strings.Contains(string(out), "bearer token written") {
		t.Errorf("serve wrote its token file before binding its port:\n%s", out)
	}
	if _, err := os.Stat(tokenFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("token file after the failed serve: %v; want it removed", err)
	}
}
