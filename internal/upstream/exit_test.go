package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

// A server that exits at once, or in any phase of its start-up, is seen as
// exited every time: the start (or the call) fails with an error naming the
// server, and Close returns. Each case runs many times, several at once, as
// the race between a child's exit and the gateway's watch of it is won or
// lost by a few microseconds.
func TestServerExitingDuringStartUpIsSeenEveryTime(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake := func(mode string) ([]string, []string) {
		return []string{exe}, []string{fakeModeEnv + "=" + mode}
	}
	const runs = 50
	cases := []struct {
		name     string
		command  func() ([]string, []string)
		list     bool   // the exit comes on tools/list, after a good start
		mayStart bool   // the start may succeed (the server answered initialize): then tools/list fails
		want     string // in the error
	}{
		{name: "/bin/true", command: func() ([]string, []string) { return []string{"/bin/true"}, nil },
			want: `mcp server "x" exited before answering initialize (exit status 0)`},
		{name: "sh exit 3", command: func() ([]string, []string) { return []string{"/bin/sh", "-c", "exit 3"}, nil },
			want: `mcp server "x" exited before answering initialize (exit status 3)`},
		{name: "before answering initialize", command: func() ([]string, []string) { return fake("exit") },
			want: `mcp server "x" exited before answering initialize (exit status 3)`},
		{name: "right after initialize", command: func() ([]string, []string) { return fake("exit-after-init") }, mayStart: true,
			want: `mcp server "x" exited`},
		{name: "during tools/list", command: func() ([]string, []string) { return fake("exit-on-list") }, list: true,
			want: `mcp server "x" exited during the call (exit status 5)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, runs)
			for i := range runs {
				wg.Go(func() {
					if err := startOnce(tc.command, tc.list, tc.mayStart, tc.want); err != nil {
						errs <- fmt.Errorf("run %d: %w", i, err)
					}
				})
				if i%5 == 4 {
					wg.Wait() // five at a time
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// startOnce starts one server and checks that its exit is seen: Start (or,
// with list, a tools/list call after it; with mayStart, a tools/list call
// if Start succeeded) fails with want in its error, not by the context's
// deadline, and Close returns.
func startOnce(command func() ([]string, []string), list, mayStart bool, want string) error {
	argv, env := command()
	s := upstream.NewStdio(upstream.StdioOptions{Name: "x", Command: argv, Env: env, Stderr: discard{}, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err := s.Start(ctx)
	if mayStart && err == nil {
		_, err = s.Call(ctx, "tools/list", nil)
	} else if list {
		if err != nil {
			s.Close()
			return fmt.Errorf("start: %v", err)
		}
		_, err = s.Call(ctx, "tools/list", nil)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		return errors.New("Close did not return: the exit was never seen")
	}
	switch {
	case err == nil:
		return errors.New("no error")
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the exit was never seen: %v", err)
	case !errors.Is(err, upstream.ErrExited):
		return fmt.Errorf("error %q does not wrap ErrExited", err)
	case !strings.Contains(err.Error(), want):
		return fmt.Errorf("error %q does not say %q", err, want)
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
