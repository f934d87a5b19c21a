package codemode

import "golang.org/x/sys/unix"

// limitData caps a runner's data segment (RLIMIT_DATA: its heap and
// other private writable memory): past it, the runner's allocations fail
// and it exits, ending only its run.
func limitData(pid int, bytes uint64) error {
	return unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: bytes, Max: bytes}, nil)
}
