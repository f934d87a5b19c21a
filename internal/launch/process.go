package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollInterval paces the checks for a process's exit and for a session to
// empty. A blocking wait would outlive a successful launch, whose child must be
// left running unwaited.
const pollInterval = 20 * time.Millisecond

// reaper notices the serving process's exit while the launcher waits, by
// polling waitid with WNOHANG|WNOWAIT. It leaves the exited child a zombie
// until [reaper.reap]: while it is one, its pid, which is also the id of its
// session and of its process group, cannot be given to another process, so
// terminate cannot signal a process that took the number meanwhile. It is the
// only code that reaps the child.
type reaper struct {
	pid      int
	exited   chan struct{} // closed once the child has exited (a zombie until reap)
	code     int32         // how it exited, as waitid reports it (cldExited...)
	status   int32         // its exit status or the signal that killed it
	known    bool          // code and status hold the child's exit
	stop     chan struct{}
	stopped  chan struct{}
	reapOnce sync.Once
}

// The si_code values of a child's exit (CLD_* in <signal.h>).
const (
	cldExited = 1 // exited; status is its exit status
	cldKilled = 2 // killed by the signal in status
	cldDumped = 3 // killed by the signal in status, and dumped core
)

func startReaper(pid int) *reaper {
	r := &reaper{
		pid:     pid,
		exited:  make(chan struct{}),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go r.run()
	return r
}

func (r *reaper) run() {
	defer close(r.stopped)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: reaped elsewhere; the status is lost
			close(r.exited)
			return
		case info.Signo == int32(unix.SIGCHLD):
			r.code, r.status = info.Code, childStatus(&info)
			r.known = true
			close(r.exited)
			return
		}
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// childStatus returns si_status of a siginfo_t that waitid filled for a child:
// the third int of the union after the signo, errno and code ints, which is
// aligned to a pointer (si_pid, si_uid, si_status).
func childStatus(info *unix.Siginfo) int32 {
	ptr := unsafe.Sizeof(uintptr(0))
	union := (3*4 + ptr - 1) / ptr * ptr // 16 on 64-bit Linux, 12 on 32-bit
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), union+8))
}

// halt stops the polling and reports whether the child had exited by then.
func (r *reaper) halt() (exited bool) {
	select {
	case <-r.stopped:
	default:
		close(r.stop)
		<-r.stopped
	}
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// reap collects the exited child once the launcher is done with its session,
// freeing its pid. It does nothing if the child has not exited: a serving
// process that is ready is left running, unwaited. Call it after halt.
func (r *reaper) reap() {
	select {
	case <-r.exited:
	default:
		return
	}
	r.reapOnce.Do(func() {
		for {
			// ECHILD if it was reaped elsewhere.
			if _, err := unix.Wait4(r.pid, nil, 0, nil); !errors.Is(err, unix.EINTR) {
				return
			}
		}
	})
}

// describe says how the child ended, for an error message.
func (r *reaper) describe() string {
	select {
	case <-r.exited:
	default:
		return "is still running"
	}
	if !r.known {
		return "exited"
	}
	switch r.code {
	case cldExited:
		return fmt.Sprintf("exited with status %d", r.status)
	case cldKilled, cldDumped:
		sig := unix.Signal(r.status)
		return fmt.Sprintf("was killed by signal %d (%s)", int(sig), sig)
	}
	return "exited"
}

// terminate ends every process of session sid: SIGTERM, then SIGKILL for
// whatever is left after grace. A session rather than a process group, because
// the serving process puts each server in a process group of its own; all of
// them stay in its session. It returns once the session is empty and the
// leader has exited, or after a bounded wait if some process will not die
// (stuck in the kernel, or a zombie its new parent never reaps). The leader is
// left to r.reap: until then its pid is the session's id, not a stranger's.
func terminate(sid int, grace time.Duration, r *reaper) {
	signalSession(sid, unix.SIGTERM)
	if waitSessionEmpty(sid, r, grace) {
		return
	}
	// Something forked between a scan and its kill may escape one round.
	for range 4 {
		signalSession(sid, unix.SIGKILL)
		if waitSessionEmpty(sid, r, killWait/4) {
			return
		}
	}
}

// killWait bounds how long terminate waits after SIGKILL, which normally takes
// effect at once; the launch must still end within the SDK's 60 s.
const killWait = time.Second

// waitSessionEmpty waits up to d for session sid to have no live process and,
// if r is not nil, for its leader to have exited.
func waitSessionEmpty(sid int, r *reaper, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		reaped := true
		if r != nil {
			select {
			case <-r.exited:
			default:
				reaped = false
			}
		}
		if reaped && len(sessionMembers(sid)) == 0 {
			return true
		}
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// signalSession sends sig to the process group sid and to every live process
// of session sid. The caller holds the leader (sid) unreaped, so that number
// is still the session's; a member's pid may be freed and taken by another
// process between the scan and the signal, which signalMember rules out.
func signalSession(sid int, sig unix.Signal) {
	if sid <= 1 || sid == os.Getpid() {
		return
	}
	unix.Kill(-sid, sig)
	for _, pid := range sessionMembers(sid) {
		signalMember(pid, sid, sig)
	}
}

// signalMember sends sig to pid if it is still a process of session sid. A
// pidfd holds the process while that is checked, so a process that took a
// freed pid is not signalled. Without pidfds (Linux before 5.3, or a seccomp
// filter refusing pidfd_open) it signals by pid, after the same check.
func signalMember(pid, sid int, sig unix.Signal) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone
	}
	if err == nil {
		defer unix.Close(fd)
	}
	if st, serr := readStat(pid); serr != nil || st.session != sid {
		return
	}
	if err != nil {
		unix.Kill(pid, sig)
		return
	}
	unix.PidfdSendSignal(fd, sig, nil, 0)
}

// sessionMembers lists the processes of session sid that are not zombies.
func sessionMembers(sid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.session != sid || st.state == 'Z' || st.state == 'X' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procStat holds the fields of /proc/<pid>/stat the launcher needs.
type procStat struct {
	state   byte
	ppid    int
	pgrp    int
	session int
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid pgrp session ...": comm may hold spaces and
	// parentheses, so fields are counted from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	var st procStat
	st.state = f[0][0]
	nums := []*int{&st.ppid, &st.pgrp, &st.session}
	for k, p := range nums {
		if *p, err = strconv.Atoi(f[k+1]); err != nil {
			return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
		}
	}
	return st, nil
}
