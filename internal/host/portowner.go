package host

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PortOwner names the process listening on a TCP port, from /proc: its
// pid and command line. ok is false when it cannot be told (not Linux, or
// the process belongs to another user).
func PortOwner(port int) (pid int, cmdline string, ok bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		listeningInodes(f, port, inodes)
	}
	if len(inodes) == 0 {
		return 0, "", false
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
				b, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
				return n, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), true
			}
		}
	}
	return 0, "", false
}

// listeningInodes adds the socket inodes of a /proc/net/tcp file's
// listening sockets on port.
func listeningInodes(path string, port int, into map[string]bool) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "0A" || !strings.HasSuffix(fields[1], want) {
			continue
		}
		into[fields[9]] = true
	}
}
