package upstream

import (
	"os/exec"
	"testing"
	"time"
)

// awaitExit returns when the child exits, and leaves it to be reaped.
func TestAwaitExit(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidfd := watchExit(cmd.Process.Pid)
	if pidfd == nil {
		cmd.Wait()
		t.Skip("no pidfd on this kernel")
	}
	defer pidfd.Close()
	began := time.Now()
	awaitExit(pidfd)
	if took := time.Since(began); took < 150*time.Millisecond {
		t.Errorf("awaitExit returned after %v, before the child exited", took)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("reaping after awaitExit: %v (awaitExit must not reap)", err)
	}
}
