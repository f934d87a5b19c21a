package httpc

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection can still be used: the server
// has neither closed it (it does after its own idle timeout) nor sent
// anything unasked. It peeks at the socket without waiting: no data yet
// (EAGAIN) is the only good answer. A connection that is no socket is
// taken as alive.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	ok = false
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet (EAGAIN, which is EWOULDBLOCK on Linux) is
		// the only good answer. Return true either way: never wait.
		ok = err == syscall.EAGAIN
		return true
	})
	return err == nil && ok
}
