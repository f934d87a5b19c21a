package upstream

import (
	"os"
	"syscall"
)

// sysPidfdOpen is pidfd_open(2)'s number on every Linux architecture Go
// supports but mips, where the call fails and the wait blocks a thread.
const sysPidfdOpen = 434

// watchExit returns a pidfd of the child pid for the runtime's poller, or
// nil where the kernel has none (before Linux 5.3).
func watchExit(pid int) *os.File {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return nil
	}
	// Non-blocking, so that os.NewFile hands it to the poller.
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil
	}
	return os.NewFile(fd, "pidfd")
}

// awaitExit returns once the child of pidfd has exited, leaving it to be
// reaped: a pidfd turns readable then. Waiting for that in the poller holds
// no thread, where a blocking wait holds one per server (eight servers
// starting would make eight threads). It returns at once when pidfd is nil
// or the poller cannot watch it.
func awaitExit(pidfd *os.File) {
	if pidfd == nil {
		return
	}
	rc, err := pidfd.SyscallConn()
	if err != nil {
		return
	}
	polled := false
	_ = rc.Read(func(uintptr) bool {
		done := polled
		polled = true
		return done
	})
}
