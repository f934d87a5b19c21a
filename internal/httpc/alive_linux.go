package httpc

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/mcp-gateway/mcp-gateway/internal/rawio"
)

// alive reports whether an idle connection can still be used: the server
// has neither closed it (it does after its own idle timeout) nor sent
// anything unasked. No data yet is the only good answer. A connection that
// is no socket is taken as alive.
func alive(nc net.Conn) bool { return peek(nc) == nothingYet }

// Answers of peek.
const (
	nothingYet = iota // no data, the connection open
	hasData           // data (or the peer's close) waiting to be read
	broken            // the socket failed
)

// peek looks at the socket without waiting and without consuming anything.
func peek(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nothingYet
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return broken
	}
	var buf [1]byte
	state := broken
	err = rc.Read(func(fd uintptr) bool {
		// recvfrom(2) as a raw call, as internal/rawio reads: it does not wait.
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case syscall.EAGAIN: // EWOULDBLOCK on Linux
			state = nothingYet
		case 0: // data, or 0 bytes: the peer closed
			state = hasData
		}
		return true // never wait
	})
	if err != nil {
		return broken
	}
	return state
}

// readNow reads what has arrived on nc without waiting: errWouldBlock when
// nothing has, io.EOF when the peer closed.
func readNow(nc net.Conn, p []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, errWouldBlock
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var errno syscall.Errno
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, errno = rawio.ReadFD(fd, p)
			if errno != syscall.EINTR {
				return true // never wait
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno == syscall.EAGAIN:
		return 0, errWouldBlock
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}
