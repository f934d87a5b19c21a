package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// 200 concurrent calls over three servers while one of them is killed again
// and again: every call to the healthy servers succeeds, every failed call
// to the broken one says which server failed, and after SIGTERM no child
// process remains.
func TestConcurrentCallsWhileAServerIsKilled(t *testing.T) {
	s := startServe(t, fmt.Sprintf(`{"alpha": {"runCmd": %q}, "beta": {"runCmd": %q}, "victim": {"runCmd": %q, "envs": {"E2E_VICTIM": "1"}}}`,
		testServerCmd(), testServerCmd(), testServerCmd()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := make([]*mcp.ClientSession, 4)
	for i := range clients {
		era := "2025-11-25"
		if i%2 == 1 {
			era = "" // the SDK's newest: 2026-07-28
		}
		clients[i] = s.connectEra(ctx, era)
	}

	// The killer: SIGKILL the victim's process whenever one is up, until the calls are done.
	stop := make(chan struct{})
	var kills atomic.Int32
	var killer sync.WaitGroup
	killer.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			for _, p := range descendants(s.pid) {
				env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
				if err == nil && strings.Contains(string(env), "E2E_VICTIM=1") && alive(p) {
					if syscall.Kill(p, syscall.SIGKILL) == nil {
						kills.Add(1)
					}
				}
			}
		}
	})

	tools := []string{"echo", "beta_echo", "victim_echo"}
	var healthyOK, victimOK, victimFailed atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for i := range 200 {
		wg.Go(func() {
			tool := tools[i%3]
			want := fmt.Sprintf("call %d", i)
			res, err := clients[i%len(clients)].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": want}})
			ok := err == nil && !res.IsError && text(res) == want
			switch {
			case tool != "victim_echo" && ok:
				healthyOK.Add(1)
			case tool != "victim_echo":
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s) failed: %v %v", tool, want, res, err))
				mu.Unlock()
			case ok:
				victimOK.Add(1)
			default:
				victimFailed.Add(1)
				msg := fmt.Sprint(err)
				if err == nil {
					msg = text(res)
				}
				if !strings.Contains(msg, `"victim"`) {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("a failed victim call does not name its server: %q", msg))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	killer.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if healthyOK.Load() != 134 { // 67 + 67 of the 200 calls go to alpha and beta
		t.Errorf("%d of 134 calls to the healthy servers succeeded", healthyOK.Load())
	}
	t.Logf("victim killed %d times; its calls: %d succeeded, %d failed with a readable error", kills.Load(), victimOK.Load(), victimFailed.Load())
	if kills.Load() == 0 {
		t.Error("the victim was never killed: the test proved nothing")
	}

	children := descendants(s.pid)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range children {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(p) {
			t.Errorf("process %d outlived the gateway", p)
		}
	}
	s.pid = 0
}
