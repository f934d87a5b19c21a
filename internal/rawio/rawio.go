// Package rawio reads and writes the gateway's sockets and pipes with raw
// system calls: the goroutine keeps its P through the call, and the Go
// scheduler is not told it entered a system call.
//
// Why: the calls are on non-blocking descriptors (the runtime's netpoller
// waits for them to be ready, through syscall.RawConn), so they never
// block, but syscall.Read and syscall.Write still go through the
// runtime's entersyscall and exitsyscall. On an idle-then-busy gateway
// that wakes the runtime's monitor thread (sysmon) from its deep sleep at
// nearly every call — it sleeps whenever every P is idle, which between
// two calls of a proxy is most of the time — and sysmon then runs a
// 20 µs sleep-and-check loop until it sleeps again. Profiled under 16
// concurrent calls to an HTTP upstream (perf, kernel included), sysmon's
// wake-ups and sleeps were 24 % of the gateway's CPU and the wake-ups from
// entersyscall 5 % more: on a virtual machine each is a context switch.
//
// A raw call on a socket or pipe copies at most its buffer's worth and
// returns; the price is that the runtime cannot hand the P to another
// thread meanwhile, which for a call of microseconds it would not do anyway.
package rawio

import (
	"io"
	"os"
	"syscall"
)

// Reader reads a descriptor through its RawConn, waiting for data in the
// netpoller and reading it with a raw system call. One goroutine at a time
// may call Read. Deadlines set on the descriptor's owner apply.
type Reader struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // r.read, made once: no closure per Read
	p   []byte
	n   int
	err syscall.Errno
}

// NewReader returns a Reader of c, or nil when c has no RawConn (it is not
// a socket or a pipe of this process: read it as usual).
func NewReader(c any) *Reader {
	rc := RawConn(c)
	if rc == nil {
		return nil
	}
	r := &Reader{rc: rc}
	r.fn = r.read
	return r
}

func (r *Reader) read(fd uintptr) bool {
	for {
		r.n, r.err = read(fd, r.p)
		switch r.err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller, then again
		}
		return true
	}
}

// Read reads what has arrived, waiting for something if nothing has: as
// net.Conn's Read, with io.EOF when the other end closed.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.rc.Read(r.fn)
	n, errno := r.n, r.err
	r.p, r.n, r.err = nil, 0, 0
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Writer writes a descriptor through its RawConn with raw system calls,
// waiting in the netpoller while the descriptor cannot take more. One
// goroutine at a time may call Write.
type Writer struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool
	p    []byte
	done int
	err  syscall.Errno
}

// NewWriter returns a Writer of c, or nil when c has no RawConn.
func NewWriter(c any) *Writer {
	rc := RawConn(c)
	if rc == nil {
		return nil
	}
	w := &Writer{rc: rc}
	w.fn = w.write
	return w
}

func (w *Writer) write(fd uintptr) bool {
	for w.done < len(w.p) {
		n, errno := write(fd, w.p[w.done:])
		switch errno {
		case 0:
			w.done += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait until it can take more, then go on
		default:
			w.err = errno
			return true
		}
	}
	return true
}

// Write writes all of p, as net.Conn's Write: n < len(p) only with an error.
func (w *Writer) Write(p []byte) (int, error) {
	w.p, w.done = p, 0
	err := w.rc.Write(w.fn)
	n, errno := w.done, w.err
	w.p, w.done, w.err = nil, 0, 0
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, os.NewSyscallError("write", errno)
	}
	return n, nil
}

// RawConn returns c's RawConn when c is a socket or pipe in non-blocking
// mode, for raw calls (WriteFD) in its callbacks; nil otherwise. A descriptor in blocking mode (one
// the runtime could not give its poller) has none: a raw call on it could
// wait, holding its P, where the runtime would have handed the P on.
func RawConn(c any) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) { nonblocking = isNonblocking(fd) }); err != nil || !nonblocking {
		return nil
	}
	return rc
}

// WriteFD writes p to fd once, without waiting, with a raw system call: for
// a callback of the caller's own given to a RawConn from RawConn. n can be less than len(p); EAGAIN
// says the descriptor takes nothing more now.
func WriteFD(fd uintptr, p []byte) (n int, err syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	return write(fd, p)
}

// ReadFD reads from fd once, without waiting, with a raw system call: for a
// callback of the caller's own given to a RawConn from RawConn. EAGAIN
// says nothing has arrived; n == 0 without an error, that the other end
// closed.
func ReadFD(fd uintptr, p []byte) (n int, err syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	return read(fd, p)
}
