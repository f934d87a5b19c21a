package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server that exits at once (/bin/true, exit 3) is seen as exited every
// time: serve comes up with the good server, reports the others failed with
// a message naming them, and SIGTERM stops it. Before the exit watcher was
// fixed, /bin/true hung the gateway for good.
func TestServeWithServersThatExitAtOnce(t *testing.T) {
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			s := startServe(t, fmt.Sprintf(`{"good": {"runCmd": %q}, "quits": {"runCmd": "/bin/true"}, "three": {"runCmd": "exit 3"}}`, testServerCmd()))
			h := s.health(t)
			if st := h.Upstreams["good"]; st.State != "ready" || st.Tools == 0 {
				t.Errorf("good server: %+v", st)
			}
			for name, status := range map[string]string{"quits": "exit status 0", "three": "exit status 3"} {
				st := h.Upstreams[name]
				want := fmt.Sprintf(`mcp server %q exited before answering initialize (%s)`, name, status)
				if st.State != "failed" || !strings.Contains(st.LastError, want) {
					t.Errorf("%s: %+v; want failed with %q", name, st, want)
				}
			}

			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- s.cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("serve exited with %v after SIGTERM; log:\n%s", err, s.serveLog())
				}
			case <-time.After(60 * time.Second): // a hang, not a timing: shutdown takes a second
				t.Fatalf("serve did not exit after SIGTERM; log:\n%s", s.serveLog())
			}
			s.pid = 0
		})
	}
}
