package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/atomicfile"
)

// gatewayName is the binary's name, recognised in /proc when the pid file's
// process runs a different build of mcp-gateway than the launcher.
const gatewayName = "mcp-gateway"

// AlreadyRunningError is returned by [Launch] when the pid file names a live
// mcp-gateway.
type AlreadyRunningError struct{ PID int }

func (e *AlreadyRunningError) Error() string {
	return fmt.Sprintf("mcp-gateway is already running (pid %d)", e.PID)
}

// WriteTokenFile writes token to path atomically (a temporary file in the same
// directory, renamed into place): exactly the token's bytes with no trailing
// newline (E2B's SDK reads the file without trimming), mode 0600. A missing
// directory is created with mode 0700; an existing one keeps its mode.
func WriteTokenFile(path, token string) error {
	if token == "" {
		return fmt.Errorf("token file %s: the token is empty", path)
	}
	if err := ensureDir(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("token file %s: %w", path, err)
	}
	if err := atomicfile.Write(path, []byte(token), 0o600); err != nil {
		return fmt.Errorf("token file %s: %w", path, err)
	}
	return nil
}

// WritePIDFile writes pid (one decimal line) to path atomically, mode 0644,
// creating missing directories with mode 0755.
func WritePIDFile(path string, pid int) error {
	if err := ensureDir(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	if err := atomicfile.Write(path, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return nil
}

// RemovePIDFile removes path if it still holds pid, so a process that lost its
// pid file to a newer one does not remove the newer one. A missing file is not
// an error.
func RemovePIDFile(path string, pid int) error {
	got, err := readPIDFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || got != pid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return nil
}

// Running reports the pid in pidFile if that process is alive and is an
// mcp-gateway. A pid file left behind by a gateway that died, whose pid now
// belongs to another program, does not count.
func Running(pidFile string) (pid int, ok bool) {
	pid, err := readPIDFile(pidFile)
	if err != nil || pid == os.Getpid() {
		return 0, false
	}
	st, err := readStat(pid)
	if err != nil || st.state == 'Z' {
		return 0, false
	}
	if !isGateway(pid) {
		return 0, false
	}
	return pid, true
}

func readPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: no pid in %q", path, b)
	}
	return pid, nil
}

// isGateway reports whether pid runs this program or another mcp-gateway. The
// executable is the best evidence; when /proc/<pid>/exe is unreadable (another
// user's process, for a launcher that is not root) argv[0] decides.
func isGateway(pid int) bool {
	self, _ := os.Executable()
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		// A binary replaced on disk while running shows as "<path> (deleted)".
		exe = strings.TrimSuffix(exe, " (deleted)")
		return exe == self || filepath.Base(exe) == gatewayName
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	base := filepath.Base(string(argv0))
	return base == gatewayName || (self != "" && base == filepath.Base(self))
}

// ensureDir creates dir with perm if it is missing (parents 0755) and leaves an
// existing directory as it is. perm is applied exactly, whatever the umask.
func ensureDir(dir string, perm fs.FileMode) error {
	err := os.Mkdir(dir, perm)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		err = os.Mkdir(dir, perm)
	}
	switch {
	case err == nil:
		return os.Chmod(dir, perm)
	case errors.Is(err, fs.ErrExist):
		fi, serr := os.Stat(dir)
		if serr != nil {
			return serr
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	default:
		return err
	}
}

// lockPollInterval is how often a launch waiting for another one retries the
// lock; flock cannot wait on a context.
const lockPollInterval = 50 * time.Millisecond

// lockLaunch takes the exclusive launch lock at path, waiting while another
// launch holds it until ctx is done or timeout fires. Closing the returned
// file releases the lock.
func lockLaunch(ctx context.Context, path string, timeout <-chan time.Time) (*os.File, error) {
	if err := ensureDir(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("launch lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch lock %s: %w", path, err)
	}
	tick := time.NewTicker(lockPollInterval)
	defer tick.Stop()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("launch lock %s: %w", path, err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another launch to finish (lock %s): %w", path, ctx.Err())
		case <-timeout:
			f.Close()
			return nil, fmt.Errorf("%w: another launch still holds the lock %s", ErrTimeout, path)
		}
	}
}
