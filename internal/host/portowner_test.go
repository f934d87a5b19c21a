package host

import (
	"net"
	"os"
	"testing"
)

// The listener of a port is found: this test's own process.
func TestPortOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pid, cmdline, ok := PortOwner(ln.Addr().(*net.TCPAddr).Port)
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp on this system")
	}
	if !ok || pid != os.Getpid() || cmdline == "" {
		t.Errorf("PortOwner = %d %q %v, want this process (%d)", pid, cmdline, ok, os.Getpid())
	}
}
