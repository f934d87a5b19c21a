package launch

import (
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
)

// pipeNotifier returns a Notifier on a fresh pipe and the launcher's end.
func pipeNotifier(t *testing.T) (*Notifier, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return &Notifier{f: w}, r
}

func TestReportProtocol(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(*Notifier) error
		want report
	}{
		{"ready", func(n *Notifier) error { return n.Ready(50005) }, report{kind: reportReady, port: 50005}},
		{"ready on port 0", func(n *Notifier) error { return n.Ready(0) }, report{kind: reportReady}},
		{"failure", func(n *Notifier) error { return n.Fail(errors.New(`mcp server "fetch": uvx not found`)) },
			report{kind: reportFailed, reason: `mcp server "fetch": uvx not found`}},
		{"failure over lines", func(n *Notifier) error { return n.Fail(errors.New("first\nsecond")) },
			report{kind: reportFailed, reason: "first\nsecond"}},
		{"failure without an error", func(n *Notifier) error { return n.Fail(nil) },
			report{kind: reportFailed, reason: "unknown failure"}},
		{"closed without a report", func(n *Notifier) error { return n.f.Close() }, report{kind: reportNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, r := pipeNotifier(t)
			if err := tc.send(n); err != nil {
				t.Fatal(err)
			}
			if got := readReport(r); got != tc.want {
				t.Errorf("read %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReadReportMalformed(t *testing.T) {
	for _, in := range []string{"hello\n", "ready\n", "ready port\n", "ready 70000\n", "ready -1\n"} {
		got := readReport(strings.NewReader(in))
		if got.kind != reportFailed || !strings.Contains(got.reason, "malformed readiness report") {
			t.Errorf("readReport(%q) = %+v, want a malformed report", in, got)
		}
	}
}

func TestNotifierReportsOnce(t *testing.T) {
	n, _ := pipeNotifier(t)
	if err := n.Ready(1); err != nil {
		t.Fatal(err)
	}
	if err := n.Fail(errors.New("late")); err == nil {
		t.Error("a second report was accepted")
	}
}

func TestNotifierLauncherGone(t *testing.T) {
	n, r := pipeNotifier(t)
	r.Close()
	if err := n.Ready(1); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Ready with the launcher gone: %v, want EPIPE", err)
	}
}

func TestForegroundNotifier(t *testing.T) {
	n, err := OpenNotifier(-1)
	if n != nil || err != nil {
		t.Fatalf("OpenNotifier(-1) = %v, %v; want nil, nil", n, err)
	}
	if err := n.Ready(50005); err != nil {
		t.Errorf("nil Notifier Ready: %v", err)
	}
	if err := n.Fail(errors.New("x")); err != nil {
		t.Errorf("nil Notifier Fail: %v", err)
	}
}

func TestOpenNotifier(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A descriptor as the serving process inherits it: not close-on-exec.
	fd, err := syscall.Dup(int(w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	n, err := OpenNotifier(fd)
	if err != nil {
		t.Fatal(err)
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("fd %d is not close-on-exec after OpenNotifier (flags %#x, %v)", fd, flags, errno)
	}
	if err := n.Ready(8080); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := readReport(r); got.kind != reportReady || got.port != 8080 {
		t.Errorf("read %+v, want ready 8080", got)
	}
}

func TestOpenNotifierRejects(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := OpenNotifier(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "not a pipe") {
		t.Errorf("OpenNotifier on a regular file: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd := int(w.Fd())
	r.Close()
	w.Close()
	if _, err := OpenNotifier(fd); err == nil {
		t.Errorf("OpenNotifier on closed fd %d succeeded", fd)
	}
}

func TestReadHandoff(t *testing.T) {
	logFile, got, err := readHandoff(strings.NewReader("/var/log/gw.log\x00{\"token\":\"t\"}"))
	if err != nil || logFile != "/var/log/gw.log" || string(got) != `{"token":"t"}` {
		t.Errorf("readHandoff = %q, %q, %v", logFile, got, err)
	}
	if logFile, got, err := readHandoff(strings.NewReader("\x00h")); err != nil || logFile != "" || string(got) != "h" {
		t.Errorf("readHandoff without a log file = %q, %q, %v", logFile, got, err)
	}
	if _, _, err := readHandoff(strings.NewReader("")); err == nil {
		t.Error("readHandoff accepted an empty stdin (a launcher that gave up)")
	}
	if _, _, err := readHandoff(io.LimitReader(zeros{}, maxHandoff+1)); err == nil {
		t.Error("readHandoff accepted more than its limit")
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
