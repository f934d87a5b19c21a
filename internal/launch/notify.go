package launch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ReadyFD is the descriptor number the readiness pipe has in the serving
// process (the first of exec's extra files).
const ReadyFD = 3

// ListenFD is the descriptor number Options.Listener has in the serving
// process (the second of exec's extra files).
const ListenFD = 4

// maxHandoff bounds what AcceptHandoff accepts. The handoff carries a config that
// came in on one command-line argument (at most 128 KiB on Linux) and a token,
// so anything near this size is a mistake, not a config.
const maxHandoff = 16 << 20

// maxReport bounds how much of a readiness report the launcher reads.
const maxReport = 64 << 10

// Notifier is the serving process's end of the readiness pipe. A nil
// *Notifier (serving in the foreground) accepts reports and does nothing.
type Notifier struct {
	mu   sync.Mutex
	f    *os.File
	sent bool
}

// OpenNotifier opens the readiness pipe at fd, as passed by [Launch]. It returns
// nil, nil when fd < 0 (serving in the foreground).
//
// Call it first in the serving process, before starting any server: it marks fd
// close-on-exec so no server inherits the pipe (an inherited copy would keep
// the launcher from seeing the serving process die).
func OpenNotifier(fd int) (*Notifier, error) {
	if fd < 0 {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("readiness pipe: fd %d: %w (it is passed by the launcher; serve in the foreground without --ready-fd)", fd, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil, fmt.Errorf("readiness pipe: fd %d is not a pipe", fd)
	}
	unix.CloseOnExec(fd)
	return &Notifier{f: os.NewFile(uintptr(fd), "readiness pipe")}, nil
}

// Ready reports that the gateway is serving on port (the port actually bound)
// and closes the pipe.
func (n *Notifier) Ready(port int) error {
	return n.send("ready " + strconv.Itoa(port) + "\n")
}

// Fail reports why the gateway could not start and closes the pipe. Write the
// failing server's stderr to the log before calling it: the launcher shows the
// log's tail with the reason.
func (n *Notifier) Fail(err error) error {
	reason := "unknown failure"
	if err != nil && err.Error() != "" {
		reason = err.Error()
	}
	return n.send("error " + reason + "\n")
}

func (n *Notifier) send(report string) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent {
		return errors.New("readiness pipe: already reported")
	}
	n.sent = true
	_, werr := io.WriteString(n.f, report)
	cerr := n.f.Close()
	if werr != nil {
		// EPIPE: the launcher is gone (killed, or gave up waiting).
		return fmt.Errorf("readiness pipe: %w", werr)
	}
	if cerr != nil {
		return fmt.Errorf("readiness pipe: %w", cerr)
	}
	return nil
}

// AcceptHandoff reads the launcher's handoff from stdin (the serving
// process's) to its end and, from then on, appends this process's stdout and
// stderr to the log file the launcher named (they are discarded when it
// named none). Call it before starting anything that should inherit them.
func AcceptHandoff(stdin io.Reader) ([]byte, error) {
	logFile, handoff, err := readHandoff(stdin)
	if err != nil {
		return nil, err
	}
	if err := redirectOutput(logFile); err != nil {
		return nil, err
	}
	return handoff, nil
}

// readHandoff splits what the launcher wrote: the log file's path, a NUL,
// and the handoff.
func readHandoff(r io.Reader) (logFile string, handoff []byte, err error) {
	b, err := io.ReadAll(io.LimitReader(r, maxHandoff+1))
	if err != nil {
		return "", nil, fmt.Errorf("reading the launcher's handoff: %w", err)
	}
	if len(b) > maxHandoff {
		return "", nil, fmt.Errorf("reading the launcher's handoff: more than %d bytes", maxHandoff)
	}
	path, rest, ok := bytes.Cut(b, []byte{0})
	if !ok {
		return "", nil, errors.New("reading the launcher's handoff: it ended before the log file's name (the launcher gave up, or this process was not started by one)")
	}
	return string(path), rest, nil
}

// redirectOutput points fds 1 and 2 at path, opened for appending; "" means
// /dev/null.
func redirectOutput(path string) error {
	if path == "" {
		path = os.DevNull
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	defer f.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(f.Fd()), fd, 0); err != nil {
			return fmt.Errorf("log file %s: %w", path, err)
		}
	}
	return nil
}

// reportKind is what the serving process said on the readiness pipe.
type reportKind int

const (
	reportNone   reportKind = iota // pipe closed without a report
	reportReady                    // "ready <port>"
	reportFailed                   // "error <reason>", or an unreadable report
)

type report struct {
	kind   reportKind
	port   int
	reason string
}

// readReport reads one report from the launcher's end of the readiness pipe.
// It returns as soon as a ready line is complete; an error report is read to
// the end of the stream.
func readReport(r io.Reader) report {
	br := bufio.NewReader(io.LimitReader(r, maxReport))
	line, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return report{kind: reportFailed, reason: "reading the readiness pipe: " + err.Error()}
	}
	if line == "" {
		return report{kind: reportNone}
	}
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "ready":
		port, perr := strconv.Atoi(strings.TrimSpace(rest))
		if perr != nil || port < 0 || port > 65535 {
			return report{kind: reportFailed, reason: fmt.Sprintf("malformed readiness report %q", line)}
		}
		return report{kind: reportReady, port: port}
	case "error":
		more, _ := io.ReadAll(br)
		reason := strings.TrimRight(rest+string(more), "\n")
		if reason == "" {
			reason = "unknown failure"
		}
		return report{kind: reportFailed, reason: reason}
	}
	return report{kind: reportFailed, reason: fmt.Sprintf("malformed readiness report %q", line)}
}
