package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
)

// The test binary doubles as the serving process: Launch re-executes it with
// modeEnv naming a behaviour.
const (
	modeEnv        = "LAUNCH_TEST_MODE"
	handoffSumEnv  = "LAUNCH_TEST_HANDOFF_SHA256" // handoff mode: expected sha256 of stdin
	secretLenEnv   = "LAUNCH_TEST_SECRET_LEN"     // handoff mode: the handoff starts with a secret this long
	pidsFileEnv    = "LAUNCH_TEST_PIDS"           // hang modes: where to write the grandchildren's pids
	launchPathsEnv = "LAUNCH_TEST_DIR"            // launcher mode: where its files go
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(serveForTest(mode))
	}
	syscall.Umask(0o022) // the modes the tests expect of created files
	os.Exit(m.Run())
}

// serveForTest is the serving process's side, one behaviour per mode.
func serveForTest(mode string) int {
	if mode == "launcher" {
		return launcherForTest()
	}
	if mode == "hang-ignore-term" {
		// Inherited across exec: the grandchildren ignore SIGTERM too.
		signal.Ignore(syscall.SIGTERM)
	}
	n, err := OpenNotifier(ReadyFD)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 2
	}
	handoff, err := AcceptHandoff(os.Stdin)
	if err != nil {
		n.Fail(err)
		return 2
	}
	switch mode {
	case "ready":
		return readyForever(n, "serving")
	case "listener":
		return readyOnInherited(n)
	case "handoff":
		if err := checkHandoff(handoff); err != nil {
			n.Fail(err)
			return 1
		}
		return readyForever(n, "handoff checked")
	case "fail":
		for i := range 40 {
			fmt.Fprintf(os.Stderr, "[broken] stderr line %d\n", i)
		}
		n.Fail(errors.New(`mcp server "broken": exited with status 1 before listing its tools`))
		return 1
	case "exit":
		fmt.Fprintln(os.Stderr, "about to exit without a report")
		return 3
	case "hang", "hang-ignore-term":
		fmt.Fprintln(os.Stderr, "hanging")
		if err := startGrandchildren(os.Getenv(pidsFileEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 2
		}
		sleepForever()
	}
	fmt.Fprintln(os.Stderr, "test server: unknown mode", mode)
	return 2
}

func readyForever(n *Notifier, msg string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.Fail(err)
		return 1
	}
	defer ln.Close()
	fmt.Fprintln(os.Stderr, msg)
	if err := n.Ready(ln.Addr().(*net.TCPAddr).Port); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	sleepForever()
	return 0
}

// readyOnInherited reports ready on the port of the listener inherited at
// ListenFD (Options.Listener).
func readyOnInherited(n *Notifier) int {
	f := os.NewFile(ListenFD, "listener")
	ln, err := net.FileListener(f)
	if err != nil {
		n.Fail(fmt.Errorf("fd %d: %w", ListenFD, err))
		return 1
	}
	f.Close()
	defer ln.Close()
	if err := n.Ready(ln.Addr().(*net.TCPAddr).Port); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	sleepForever()
	return 0
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// checkHandoff verifies the handoff arrived whole on stdin and nowhere else.
func checkHandoff(handoff []byte) error {
	sum := sha256.Sum256(handoff)
	if got, want := hex.EncodeToString(sum[:]), os.Getenv(handoffSumEnv); got != want {
		return fmt.Errorf("handoff of %d bytes has sha256 %s, want %s", len(handoff), got, want)
	}
	n, _ := strconv.Atoi(os.Getenv(secretLenEnv))
	if n <= 0 || n > len(handoff) {
		return fmt.Errorf("bad %s", secretLenEnv)
	}
	secret := handoff[:n]
	for _, f := range []string{"/proc/self/cmdline", "/proc/self/environ"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if bytes.Contains(b, secret) {
			return fmt.Errorf("%s holds the handoff's secret", f)
		}
		if bytes.Contains(b, []byte(tokenEnv+"=")) {
			return fmt.Errorf("%s holds %s", f, tokenEnv)
		}
	}
	return nil
}

// startGrandchildren starts two sleeps, one in this process's group and one in
// a group of its own (as servers are), and writes their pids to path.
func startGrandchildren(path string) error {
	var pids []byte
	for _, ownGroup := range []bool{false, true} {
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
		if err := cmd.Start(); err != nil {
			return err
		}
		pids = fmt.Appendf(pids, "%d\n", cmd.Process.Pid)
	}
	return atomicfile.Write(path, pids, 0o644)
}

// launcherForTest plays `mcp-gateway --config`: it launches a "ready" serving
// process, prints its pid and exits.
func launcherForTest() int {
	dir := os.Getenv(launchPathsEnv)
	res, err := Launch(context.Background(), Options{
		Args:      []string{"serve", "--ready-fd=3"},
		Env:       append(os.Environ(), modeEnv+"=ready"),
		LogFile:   filepath.Join(dir, "log"),
		PIDFile:   filepath.Join(dir, "pid"),
		TokenFile: filepath.Join(dir, "token"),
		Token:     "nested-token",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("MCP gateway is ready on port %d (pid %d)\n", res.Port, res.PID)
	return 0
}
