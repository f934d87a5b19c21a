package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval paces the checks for a process's exit and for a session to
// empty. A blocking wait would outlive a successful launch, whose child must be
// left running unwaited.
const pollInterval = 20 * time.Millisecond

// reaper notices the serving process's exit while the launcher waits, by
// polling wait4 with WNOHANG. It is the only code that reaps the child.
type reaper struct {
	pid     int
	exited  chan struct{} // closed once the child is reaped
	status  unix.WaitStatus
	known   bool // status holds the child's wait status
	stop    chan struct{}
	stopped chan struct{}
}

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
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(r.pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: reaped elsewhere; the status is lost
			close(r.exited)
			return
		case wpid == r.pid:
			r.status, r.known = ws, true
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
	switch ws := r.status; {
	case ws.Exited():
		return fmt.Sprintf("exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return "exited"
}

// terminate ends every process of session sid: SIGTERM, then SIGKILL for
// whatever is left after grace. A session rather than a process group, because
// the serving process puts each server in a process group of its own; all of
// them stay in its session. It returns once the session is empty and the
// leader reaped, or after a bounded wait if some process will not die (stuck in
// the kernel, or a zombie its new parent never reaps).
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
// if r is not nil, for its leader to be reaped.
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
// of session sid.
func signalSession(sid int, sig unix.Signal) {
	if sid <= 1 || sid == os.Getpid() {
		return
	}
	unix.Kill(-sid, sig)
	for _, pid := range sessionMembers(sid) {
		unix.Kill(pid, sig)
	}
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
