package httpc

import (
	"io"
	"net"
	"syscall"
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
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch err {
		case syscall.EAGAIN: // EWOULDBLOCK on Linux
			state = nothingYet
		case nil: // data, or 0 bytes: the peer closed
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
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EINTR {
				return true // never wait
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr == syscall.EAGAIN:
		return 0, errWouldBlock
	case rerr != nil:
		return 0, rerr
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}
