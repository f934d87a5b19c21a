package launch

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startSessionLeader starts sh -c script in a session of its own: its pid is
// the session's id, as the serving process's is.
func startSessionLeader(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid
}

func waitExited(t *testing.T, r *reaper) {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the reaper did not notice pid %d exit", r.pid)
	}
}

// The reaper notices the exit and says how it happened, but leaves the leader
// a zombie until reap: while terminate signals the session, the session's id
// is still the leader's pid and cannot have been given to another process.
func TestReaperHoldsTheExitedLeaderUntilReap(t *testing.T) {
	for _, tc := range []struct {
		script, want string
	}{
		{"exit 7", "exited with status 7"},
		{"kill -KILL $$", "was killed by signal 9 (killed)"},
		{"kill -TERM $$", "was killed by signal 15 (terminated)"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			pid := startSessionLeader(t, tc.script)
			r := startReaper(pid)
			waitExited(t, r)
			if got := r.describe(); got != tc.want {
				t.Errorf("describe() = %q, want %q", got, tc.want)
			}
			terminate(pid, time.Second, r)
			if st, err := readStat(pid); err != nil || st.state != 'Z' {
				t.Errorf("pid %d after terminate: state %q, %v; want the leader still a zombie", pid, st.state, err)
			}
			if !r.halt() {
				t.Error("halt() = false for an exited child")
			}
			r.reap()
			if st, err := readStat(pid); err == nil {
				t.Errorf("pid %d is still there after reap (state %c)", pid, st.state)
			}
		})
	}
}

// An aborted launch whose serving process had already exited (and been
// noticed) reaps it without signalling its pid, which was never freed.
func TestStartAbortAfterExit(t *testing.T) {
	opts := testOptions(t, "ready")
	var err error
	if opts.Executable, err = exec.LookPath("true"); err != nil {
		t.Skip(err)
	}
	p, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.c.pid
	waitExited(t, p.c.reaper)
	if st, err := readStat(pid); err != nil || st.state != 'Z' {
		t.Errorf("exited serving process %d: state %q, %v; want a zombie until Abort", pid, st.state, err)
	}
	p.Abort()
	if st, err := readStat(pid); err == nil {
		t.Errorf("serving process %d is still there after Abort (state %c)", pid, st.state)
	}
}

// spawnNear asks the kernel for pid as the next one (ns_last_pid, which needs
// CAP_SYS_ADMIN) and starts a short-lived process; it returns the pid that
// process got, or an error if ns_last_pid cannot be written. Other processes
// forking meanwhile may take the pid first.
func spawnNear(pid int) (int, error) {
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
		return 0, err
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	got := cmd.Process.Pid
	cmd.Wait()
	return got, nil
}

// Proof by the kernel that the held leader's pid is not reused: a process
// asked to get that pid gets another one until the leader is reaped, and gets
// it afterwards (which shows the request works on this machine).
func TestExitedLeaderPIDIsNotReusedBeforeReap(t *testing.T) {
	pid := startSessionLeader(t, "exit 0")
	r := startReaper(pid)
	waitExited(t, r)
	const tries = 20
	for range tries {
		got, err := spawnNear(pid)
		if err != nil {
			t.Skipf("cannot choose the next pid here: %v", err)
		}
		if got == pid {
			t.Fatalf("a new process got pid %d while the exited leader was held", pid)
		}
	}
	r.halt()
	r.reap()
	for range tries {
		if got, _ := spawnNear(pid); got == pid {
			return
		}
	}
	t.Skipf("no new process got the freed pid %d in %d tries (other processes fork meanwhile): the check above proves nothing here", pid, tries)
}

// signalMember signals a listed pid only while it is still a process of the
// session: one that took a freed pid is left alone.
func TestSignalMemberChecksTheSession(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sameSID bool
		want    syscall.Signal // the signal the process dies of
	}{
		{"member", true, unix.SIGKILL},
		{"stranger", false, unix.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "1000")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			sid := pid
			if !tc.sameSID {
				sid = os.Getpid() + 1_000_000 // no session has this id
			}
			signalMember(pid, sid, unix.SIGKILL)
			// A SIGKILL sent first is the one it dies of.
			cmd.Process.Signal(unix.SIGTERM)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("sleep: %v, want killed by a signal", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != tc.want {
				t.Errorf("sleep ended with %v, want it to die of %v", ee.ProcessState, tc.want)
			}
		})
	}
}
