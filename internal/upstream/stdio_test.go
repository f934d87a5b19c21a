package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// testTimeout bounds each test; no test waits for it to pass.
const testTimeout = 30 * time.Second

type fixture struct {
	s      *upstream.Stdio
	stderr *recorder
	logs   *syncBuffer
}

// newFake returns an upstream for the fake server in the given mode; edit
// adjusts its options. The upstream is closed when the test ends.
func newFake(t *testing.T, mode string, edit func(*upstream.StdioOptions)) *fixture {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{stderr: newRecorder(), logs: &syncBuffer{}}
	opts := upstream.StdioOptions{
		Name:      "fake",
		Command:   []string{exe},
		Env:       []string{fakeModeEnv + "=" + mode},
		Stderr:    fx.stderr,
		Logger:    slog.New(slog.NewTextHandler(fx.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		KillGrace: 5 * time.Second,
	}
	if edit != nil {
		edit(&opts)
	}
	fx.s = upstream.NewStdio(opts)
	t.Cleanup(func() { fx.s.Close() })
	return fx
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func toolParams(name, args string) json.RawMessage {
	return json.RawMessage(`{"name":"` + name + `","arguments":` + args + `}`)
}

func callTool(ctx context.Context, s *upstream.Stdio, name, args string) (*wire.Response, error) {
	return s.Call(ctx, "tools/call", toolParams(name, args))
}

// mustCall calls a tool that must succeed and returns its raw result.
func mustCall(t *testing.T, ctx context.Context, s *upstream.Stdio, name, args string) json.RawMessage {
	t.Helper()
	resp, err := callTool(ctx, s, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if resp.Error != nil || resp.Result == nil {
		t.Fatalf("call %s: want a result, got %+v", name, resp)
	}
	return resp.Result
}

func toolPID(t *testing.T, ctx context.Context, s *upstream.Stdio, tool string) int {
	t.Helper()
	var r struct{ PID int }
	if err := json.Unmarshal(mustCall(t, ctx, s, tool, `{}`), &r); err != nil || r.PID == 0 {
		t.Fatalf("%s: no pid in result: %v", tool, err)
	}
	return r.PID
}

func TestHandshakeAndRawCall(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if err := fx.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if g := fx.s.Generation(); g != 1 {
		t.Errorf("Generation after Start = %d, want 1", g)
	}
	wantInit := `"x-received":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-gateway","version":"dev"}}`
	if got := string(fx.s.InitializeResult()); !strings.Contains(got, wantInit) {
		t.Errorf("InitializeResult = %s\nwant it to contain the initialize params sent: %s", got, wantInit)
	}
	fx.stderr.waitFor(t, ctx, "[fake] initialized") // notifications/initialized reached the server

	// Odd spacing, escapes, number forms, unknown fields and _meta must reach the
	// server untouched, and its result must come back byte for byte.
	params := `{ "name" : "echo", "arguments":{"text":"caf\u00e9 \"q\"","n":1.50,"e":1e3,"nested":{"b":[1, 2],"a":null}},` +
		`"_meta":{"progressToken":"tok-1","com.example/trace":{"id":7}},"x-unknown":[true]}`
	resp, err := fx.s.Call(ctx, "tools/call", json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		t.Fatalf("unexpected error response %s", resp.Error)
	}
	if got, want := string(resp.Result), echoResult(params); got != want {
		t.Errorf("result not byte for byte:\n got %s\nwant %s", got, want)
	}
}

func TestErrorResponsePassesThrough(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	resp, err := fx.s.Call(ctx, "no/such/method", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":-32601,"message":"no method no/such/method"}`; string(resp.Error) != want || resp.Result != nil {
		t.Errorf("response = %+v, want Error %s", resp, want)
	}
}

func TestCallStartsTheServer(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	mustCall(t, ctx, fx.s, "echo", `{}`)
	if g := fx.s.Generation(); g != 1 {
		t.Errorf("Generation = %d, want 1", g)
	}
}

func TestConcurrentCalls(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			params := fmt.Sprintf(`{"name":"echo","arguments":{"i":%d}}`, i)
			resp, err := fx.s.Call(ctx, "tools/call", json.RawMessage(params))
			switch {
			case err != nil:
				errs <- err
			case string(resp.Result) != echoResult(params):
				errs <- fmt.Errorf("call %d got someone else's answer: %s", i, resp.Result)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if g := fx.s.Generation(); g != 1 {
		t.Errorf("Generation = %d, want 1 (one process for all)", g)
	}
}

func TestCancellationReachesServer(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if err := fx.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := callTool(callCtx, fx.s, "slow", `{"tag":"a"}`)
		done <- err
	}()
	fx.stderr.waitFor(t, ctx, "slow started a")
	cancel(errors.New("the client went away"))
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: error %v, want one wrapping context.Canceled", err)
	}
	if !strings.Contains(err.Error(), `mcp server "fake"`) {
		t.Errorf("error %q does not name the server", err)
	}
	fx.stderr.waitFor(t, ctx, "slow a cancelled: the client went away")

	mustCall(t, ctx, fx.s, "echo", `{}`) // the server keeps serving
	if g := fx.s.Generation(); g != 1 {
		t.Errorf("Generation = %d, want 1: a cancellation must not restart the server", g)
	}
}

func TestCrashDuringCall(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	pid := toolPID(t, ctx, fx.s, "pid")

	// Two more calls are waiting on the server when it crashes.
	pendingErrs := make(chan error, 2)
	for _, tag := range []string{"x", "y"} {
		go func() {
			_, err := callTool(ctx, fx.s, "slow", `{"tag":"`+tag+`"}`)
			pendingErrs <- err
		}()
		fx.stderr.waitFor(t, ctx, "slow started "+tag)
	}

	_, err := callTool(ctx, fx.s, "crash", `{}`)
	if !errors.Is(err, upstream.ErrExited) {
		t.Fatalf("crash: error %v, want ErrExited", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("crash: error %v does not carry the exit status 1", err)
	}
	for _, want := range []string{`mcp server "fake" exited during the call (exit status 1)`, "the next call restarts it", "its last stderr:", "panic: simulated crash"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("crash error %q\ndoes not contain %q", err, want)
		}
	}
	for range 2 {
		if err := <-pendingErrs; !errors.Is(err, upstream.ErrExited) {
			t.Errorf("pending call: error %v, want ErrExited", err)
		}
	}
	if logs := fx.logs.String(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, `exited (exit status 1)`) {
		t.Errorf("the crash was not logged at warn level:\n%s", logs)
	}

	if got := toolPID(t, ctx, fx.s, "pid"); got == pid {
		t.Errorf("the next call went to the dead process %d", pid)
	}
	if g := fx.s.Generation(); g != 2 {
		t.Errorf("Generation after restart = %d, want 2", g)
	}
}

func TestConcurrentCallsRestartOnce(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if _, err := callTool(ctx, fx.s, "crash", `{}`); !errors.Is(err, upstream.ErrExited) {
		t.Fatalf("crash: %v", err)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := callTool(ctx, fx.s, "echo", `{}`); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if g := fx.s.Generation(); g != 2 {
		t.Errorf("Generation = %d, want 2: exactly one restart for all waiting calls", g)
	}
}

func TestGarbageOnStdout(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	_, err := callTool(ctx, fx.s, "garbage", `{}`)
	if !errors.Is(err, upstream.ErrProtocol) {
		t.Fatalf("garbage: error %v, want ErrProtocol", err)
	}
	for _, want := range []string{`mcp server "fake" wrote non-JSON-RPC output to stdout during the call`, `"this is not JSON-RPC"`, "the next call restarts it", "logs belong on stderr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("garbage error %q\ndoes not contain %q", err, want)
		}
	}
	if logs := fx.logs.String(); !strings.Contains(logs, `wrote non-JSON-RPC output to stdout: this is not JSON-RPC`) {
		t.Errorf("the garbage was not logged:\n%s", logs)
	}
	mustCall(t, ctx, fx.s, "echo", `{}`)
	if g := fx.s.Generation(); g != 2 {
		t.Errorf("Generation = %d, want 2", g)
	}
}

func TestLongLines(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) { o.MaxMessageBytes = 200_000 })
	// Longer than the reader's buffer, within the limit.
	r := mustCall(t, ctx, fx.s, "big", `{"size":150000}`)
	if !bytes.Contains(r, []byte(strings.Repeat("x", 150000))) {
		t.Errorf("long result cut: %d bytes", len(r))
	}
	_, err := callTool(ctx, fx.s, "big", `{"size":300000}`)
	if !errors.Is(err, upstream.ErrProtocol) || !strings.Contains(err.Error(), "a line longer than 200000 bytes") {
		t.Fatalf("over-long line: error %v, want ErrProtocol naming the limit", err)
	}
	mustCall(t, ctx, fx.s, "echo", `{}`)
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		command []string
		timeout time.Duration
		is      error
		want    []string
	}{
		{
			name:    "missing command",
			command: []string{"mcp-gateway-no-such-command"},
			is:      exec.ErrNotFound,
			want:    []string{`mcp server "fake": cannot start "mcp-gateway-no-such-command"`, "check the command and the PATH"},
		},
		{
			name: "exits at once",
			mode: "exit",
			is:   upstream.ErrExited,
			want: []string{`mcp server "fake" exited before answering initialize (exit status 3)`, "check its command", "fatal: FAKE_API_KEY is not set"},
		},
		{
			name: "refuses initialize",
			mode: "refuse",
			want: []string{`mcp server "fake" refused initialize: unsupported protocol version`, "fake server pid"},
		},
		{
			name: "answers initialize wrongly",
			mode: "bad-init",
			want: []string{`mcp server "fake" answered initialize wrongly: its initialize result has no protocolVersion: {"serverInfo":{"name":"not quite MCP"}}`},
		},
		{
			name:    "never answers",
			mode:    "silent",
			timeout: 500 * time.Millisecond,
			is:      context.DeadlineExceeded,
			want:    []string{`mcp server "fake" did not answer initialize`, "fake server pid"},
		},
		{
			name: "writes a banner to stdout",
			mode: "banner",
			is:   upstream.ErrProtocol,
			want: []string{`mcp server "fake" wrote non-JSON-RPC output to stdout before answering initialize`, "Fake server v1.0 starting", "must write only JSON-RPC"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			fx := newFake(t, tt.mode, func(o *upstream.StdioOptions) {
				if tt.command != nil {
					o.Command = tt.command
					o.Env = append(o.Env, "PATH=/usr/bin:/bin")
				}
			})
			err := fx.s.Start(ctx)
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v\ndoes not wrap %v", err, tt.is)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
			if g := fx.s.Generation(); g != 0 {
				t.Errorf("Generation = %d after a failed start", g)
			}
			if tt.command == nil { // a process ran: nothing of it may be left
				pid := fakePID(t, fx)
				if !pidGone(pid) {
					t.Errorf("process %d still running after a failed Start", pid)
				}
			}
		})
	}
}

func TestRefusedInitializeIsAWireError(t *testing.T) {
	fx := newFake(t, "refuse", nil)
	var rpcErr *wire.Error
	if err := fx.s.Start(testContext(t)); !errors.As(err, &rpcErr) || rpcErr.Code != wire.CodeInvalidParams {
		t.Errorf("error %v: want a *wire.Error with code %d", err, wire.CodeInvalidParams)
	}
}

// fakePID reads the pid the fake server announces on stderr.
func fakePID(t *testing.T, fx *fixture) int {
	t.Helper()
	for _, line := range fx.s.StderrTail() {
		if s, ok := strings.CutPrefix(line, "fake server pid "); ok {
			pid, err := strconv.Atoi(s)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in the stderr tail %q", fx.s.StderrTail())
	return 0
}

func TestStderrLinesArePrefixed(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	mustCall(t, ctx, fx.s, "stderr", `{"lines":["first line","second line"]}`)
	fx.stderr.waitFor(t, ctx, "second line")
	writes := fx.stderr.all()
	for _, want := range []string{"[fake] first line\n", "[fake] second line\n"} {
		found := false
		for _, w := range writes {
			found = found || w == want
		}
		if !found {
			t.Errorf("no Write of exactly %q among %q", want, writes)
		}
	}
	tail := fx.s.StderrTail()
	if len(tail) < 2 || tail[len(tail)-2] != "first line" || tail[len(tail)-1] != "second line" {
		t.Errorf("StderrTail = %q, want it to end with the two lines", tail)
	}
}

func TestStderrTailKeepsTheLastLines(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	lines = append(lines, strings.Repeat("é", 1000), "last")
	args, _ := json.Marshal(map[string]any{"lines": lines})
	mustCall(t, ctx, fx.s, "stderr", string(args))
	fx.stderr.waitFor(t, ctx, "[fake] last")
	tail := fx.s.StderrTail()
	if len(tail) != 20 || tail[0] != "line 12" || tail[19] != "last" {
		t.Fatalf("StderrTail = %q, want the last 20 lines", tail)
	}
	if long := tail[18]; len(long) > 1100 || !strings.HasSuffix(long, "é…") {
		t.Errorf("a long line is kept as %d bytes ending %q, want it cut at a rune boundary", len(long), long[len(long)-8:])
	}
}

func TestServerClosesItsPipes(t *testing.T) {
	tests := []struct{ tool, want string }{
		{"close-stdout", `mcp server "fake" closed its stdout during the call (while still running)`},
		{"close-stdin", `mcp server "fake" stopped reading its stdin during the call`},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx := testContext(t)
			fx := newFake(t, "normal", nil)
			_, err := callTool(ctx, fx.s, tt.tool, `{}`)
			if tt.tool == "close-stdin" { // its answer came; the next write finds the pipe closed
				if err != nil {
					t.Fatal(err)
				}
				_, err = callTool(ctx, fx.s, "echo", `{}`)
			}
			if !errors.Is(err, upstream.ErrProtocol) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant ErrProtocol and %q", err, tt.want)
			}
			mustCall(t, ctx, fx.s, "echo", `{}`)
			if g := fx.s.Generation(); g != 2 {
				t.Errorf("Generation = %d, want 2", g)
			}
		})
	}
}

func TestEnvironmentIsExactlyTheGivenOne(t *testing.T) {
	ctx := testContext(t)
	env := []string{fakeModeEnv + "=normal", "A=1", "B=two words", "EMPTY="}
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) { o.Env = env })
	var r struct{ Env []string }
	if err := json.Unmarshal(mustCall(t, ctx, fx.s, "env", `{}`), &r); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Env, "\n") != strings.Join(env, "\n") {
		t.Errorf("child environment = %q, want exactly %q", r.Env, env)
	}
}

func TestNotificationsArriveBeforeTheResponse(t *testing.T) {
	ctx := testContext(t)
	var mu sync.Mutex
	var got []string
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.OnNotification = func(method string, params json.RawMessage) {
			mu.Lock()
			got = append(got, method+" "+string(params))
			mu.Unlock()
		}
	})
	if _, err := fx.s.Call(ctx, "tools/call", json.RawMessage(`{"name":"notify","_meta":{"progressToken":"p-1"}}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`notifications/progress {"progressToken":"p-1","progress":1,"total":2}`,
		`notifications/message {"level":"info","data":"half way"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notifications = %q, want %q", got, want)
	}
}

func TestServerToClientRequests(t *testing.T) {
	ctx := testContext(t)
	var gotParams string
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			if method != "sampling/createMessage" {
				return nil, wire.Errorf(wire.CodeMethodNotFound, "no %s", method)
			}
			gotParams = string(params)
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`), nil
		}
	})
	params := `{"messages":[{"role":"user","content":{"type":"text","text":"say hi"}}],"maxTokens":5}`
	r := mustCall(t, ctx, fx.s, "ask", `{"tag":"1","method":"sampling/createMessage","params":`+params+`}`)
	if want := `{"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`; string(r) != want {
		t.Errorf("the server got %s, want %s", r, want)
	}
	if gotParams != params {
		t.Errorf("OnRequest params = %s, want %s", gotParams, params)
	}
	r = mustCall(t, ctx, fx.s, "ask", `{"tag":"2","method":"roots/list","params":{}}`)
	if want := `{"error":{"code":-32601,"message":"no roots/list"}}`; string(r) != want {
		t.Errorf("the server got %s, want %s", r, want)
	}
}

func TestServerToClientRequestsByDefault(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if r := mustCall(t, ctx, fx.s, "ask", `{"tag":"1","method":"ping","params":{}}`); string(r) != `{"result":{}}` {
		t.Errorf("ping: the server got %s, want an empty result", r)
	}
	r := mustCall(t, ctx, fx.s, "ask", `{"tag":"2","method":"sampling/createMessage","params":{}}`)
	if !strings.Contains(string(r), `"code":-32601`) || !strings.Contains(string(r), "sampling/createMessage") {
		t.Errorf("sampling: the server got %s, want method-not-found", r)
	}
}

func TestServerCancelsItsRequest(t *testing.T) {
	ctx := testContext(t)
	ended := make(chan error, 1)
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, nil
		}
	})
	mustCall(t, ctx, fx.s, "ask-cancel", `{}`)
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler's ctx was not cancelled by the server's notifications/cancelled")
	}
}

func TestResponseForUnknownIDIsIgnored(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if r := mustCall(t, ctx, fx.s, "unknown-id", `{}`); string(r) != `{"ok":true}` {
		t.Errorf("result = %s", r)
	}
	if logs := fx.logs.String(); !strings.Contains(logs, "unknown request id") || !strings.Contains(logs, "id=987654321") {
		t.Errorf("the stray response was not logged:\n%s", logs)
	}
	mustCall(t, ctx, fx.s, "echo", `{}`)
}

func TestNotify(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	if err := fx.s.Notify(ctx, "notifications/roots/list_changed", nil); !errors.Is(err, upstream.ErrNotRunning) {
		t.Errorf("Notify before Start: %v, want ErrNotRunning", err)
	}
	if err := fx.s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.Notify(ctx, "notifications/roots/list_changed", json.RawMessage(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	fx.stderr.waitFor(t, ctx, `notification notifications/roots/list_changed {"x":1}`)
}

func TestCloseKillsTheProcessGroup(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	pid := toolPID(t, ctx, fx.s, "pid")
	grandchild := toolPID(t, ctx, fx.s, "spawn")

	slow := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, fx.s, "slow", `{"tag":"c"}`)
		slow <- err
	}()
	fx.stderr.waitFor(t, ctx, "slow started c")

	// Two concurrent Closes; both return once everything is stopped.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := fx.s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if !pidGone(pid) {
		t.Errorf("server %d still running after Close", pid)
	}
	waitGone(t, ctx, grandchild)
	if err := <-slow; !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("call in flight during Close: %v, want ErrClosed", err)
	}
	if _, err := callTool(ctx, fx.s, "echo", `{}`); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("call after Close: %v, want ErrClosed", err)
	}
	if err := fx.s.Start(ctx); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if err := fx.s.Notify(ctx, "notifications/x", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Notify after Close: %v, want ErrClosed", err)
	}
	if err := fx.s.Close(); err != nil {
		t.Errorf("third Close: %v", err)
	}
}

func TestCloseEscalatesToSIGKILL(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "ignore-term", func(o *upstream.StdioOptions) { o.KillGrace = 100 * time.Millisecond })
	pid := toolPID(t, ctx, fx.s, "pid")
	fx.s.Close()
	if !pidGone(pid) {
		t.Errorf("server %d, which ignores SIGTERM and stdin EOF, survived Close", pid)
	}
}

func TestCloseBeforeStart(t *testing.T) {
	fx := newFake(t, "normal", nil)
	if err := fx.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.Start(testContext(t)); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
}

func TestCrashKillsGrandchildren(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", nil)
	grandchild := toolPID(t, ctx, fx.s, "spawn")
	if _, err := callTool(ctx, fx.s, "crash", `{}`); !errors.Is(err, upstream.ErrExited) {
		t.Fatalf("crash: %v", err)
	}
	waitGone(t, ctx, grandchild)
	mustCall(t, ctx, fx.s, "echo", `{}`)
}

func TestServerThatStopsReading(t *testing.T) {
	ctx := testContext(t)
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) { o.KillGrace = 200 * time.Millisecond })
	mustCall(t, ctx, fx.s, "stop-reading", `{}`)

	// Far more than a pipe holds: the write blocks, and the caller's deadline
	// must still end the call. The rest of the message is left to a background
	// writer, so the stream stays well formed.
	big := `{"text":"` + strings.Repeat("y", 4<<20) + `"}`
	for _, args := range []string{big, `{}`} { // the second waits for stdin behind the first
		callCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := callTool(callCtx, fx.s, "echo", args)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call to a server that does not read: %v, want DeadlineExceeded", err)
		}
	}
	if g := fx.s.Generation(); g != 1 {
		t.Errorf("Generation = %d, want 1: the hung server must not have been restarted", g)
	}
	// Close ends the background writer; TestMain checks no goroutine is left.
	if err := fx.s.Close(); err != nil {
		t.Fatal(err)
	}
}

// pidGone reports whether a process no longer runs (a zombie waiting for a
// parent that does not reap counts as gone).
func pidGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitGone waits for a process killed with its group, which its new parent
// reaps in its own time.
func waitGone(t *testing.T, ctx context.Context, pid int) {
	t.Helper()
	for !pidGone(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d still running", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// recorder is a Stderr writer that keeps every Write.
type recorder struct {
	mu      sync.Mutex
	writes  []string
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, string(b))
	close(r.changed)
	r.changed = make(chan struct{})
	return len(b), nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

// waitFor waits until a Write contains substr.
func (r *recorder) waitFor(t *testing.T, ctx context.Context, substr string) {
	t.Helper()
	for {
		r.mu.Lock()
		for _, w := range r.writes {
			if strings.Contains(w, substr) {
				r.mu.Unlock()
				return
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the server never wrote %q to stderr; it wrote %q", substr, r.all())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func BenchmarkCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	s := upstream.NewStdio(upstream.StdioOptions{
		Name:    "fake",
		Command: []string{exe},
		Env:     []string{fakeModeEnv + "=normal"},
		Stderr:  &syncBuffer{},
		Logger:  slog.New(slog.DiscardHandler),
	})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	params := toolParams("echo", `{"text":"hello"}`)
	// The gateway calls with a context of its own per call (its call
	// timeout): one that can end is what the write path has to watch.
	for _, bc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"timeout", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Minute) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					cctx, cancel := bc.ctx()
					_, err := s.Call(cctx, "tools/call", params)
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// A client's params may hold CR and LF between tokens (JSON allows it); they
// reach a stdio server as one line, compacted, never as several messages.
// A message that cannot be made one line is refused without touching the
// process.
func TestMessagesReachTheServerAsOneLine(t *testing.T) {
	ctx := testContext(t)
	record := t.TempDir() + "/stdin"
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.Env = append(o.Env, fakeRecordEnv+"="+record)
	})
	params := json.RawMessage("{\"name\":\"echo\",\r\n  \"arguments\": {\n\t\"text\": \"a\\nb\"\r}\n}")
	resp, err := fx.s.Call(ctx, "tools/call", params)
	if err != nil {
		t.Fatalf("call with line breaks between tokens: %v", err)
	}
	compact := `{"name":"echo","arguments":{"text":"a\nb"}}`
	if !bytes.Contains(resp.Result, []byte(`"received" : `+compact)) {
		t.Errorf("the server received other params: %s", resp.Result)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") || strings.Contains(strings.TrimSuffix(line, "\n"), "\r") {
			t.Errorf("a line with a CR or without its LF reached the server: %q", line)
		}
		if strings.Contains(line, `"tools/call"`) {
			calls = append(calls, line)
		}
	}
	if len(calls) != 1 || !strings.Contains(calls[0], `"params":`+compact+`}`) {
		t.Errorf("the server's stdin lines with tools/call: %q; want one holding %s", calls, compact)
	}

	_, err = fx.s.Call(ctx, "tools/call", json.RawMessage("{\"name\":\n\"echo\""))
	if !errors.Is(err, upstream.ErrInvalidMessage) || !strings.Contains(err.Error(), `mcp server "fake": tools/call not sent`) {
		t.Errorf("call with a line break in invalid JSON: %v; want ErrInvalidMessage naming the server", err)
	}
	mustCall(t, ctx, fx.s, "echo", `{}`) // the process is unharmed
	if got := fx.s.Generation(); got != 1 {
		t.Errorf("Generation = %d: the process was restarted", got)
	}
}

// The gateway's answer to a server's request reaches the server as one
// line: compacted when it holds CR or LF between tokens; replaced by an
// internal error when it cannot be (a line break in what is not JSON), the
// process unharmed.
func TestAnswersReachTheServerAsOneLine(t *testing.T) {
	ctx := testContext(t)
	record := t.TempDir() + "/stdin"
	fx := newFake(t, "normal", func(o *upstream.StdioOptions) {
		o.Env = append(o.Env, fakeRecordEnv+"="+record)
		o.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
			if method == "roots/list" {
				return json.RawMessage("{\"roots\":\r\n  [{\"uri\": \"file:///a\"}]\n}"), nil
			}
			return json.RawMessage("{\"role\":\n"), nil
		}
	})
	r := mustCall(t, ctx, fx.s, "ask", `{"tag":"1","method":"roots/list","params":{}}`)
	if want := `{"result":{"roots":[{"uri":"file:///a"}]}}`; string(r) != want {
		t.Errorf("the server got %s, want %s", r, want)
	}
	r = mustCall(t, ctx, fx.s, "ask", `{"tag":"2","method":"sampling/createMessage","params":{}}`)
	if !strings.Contains(string(r), `"code":-32603`) || !strings.Contains(string(r), "could not send the answer to sampling/createMessage") {
		t.Errorf("the server got %s, want the gateway's internal error", r)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") || strings.Contains(strings.TrimSuffix(line, "\n"), "\r") {
			t.Errorf("a line with a CR or without its LF reached the server: %q", line)
		}
		if strings.Contains(line, `"id":"srv-`) {
			answers++
		}
	}
	if answers != 2 {
		t.Errorf("%d lines answer the server's requests, want 2:\n%s", answers, data)
	}
	if got := fx.s.Generation(); got != 1 {
		t.Errorf("Generation = %d: the process was restarted", got)
	}
}

// A start that takes long is remarked once in the log, so a first `make run`
// that waits for npx says what it waits for.
func TestSlowStartIsRemarked(t *testing.T) {
	defer upstream.SetSlowStartNotice(50 * time.Millisecond)()
	fx := newFake(t, "silent", nil)
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
	defer cancel()
	if err := fx.s.Start(ctx); err == nil {
		t.Fatal("a server that never answers initialize started")
	}
	if got := fx.logs.String(); !strings.Contains(got, `mcp server \"fake\" has not answered initialize after 50ms; still waiting`) {
		t.Fatalf("no remark about the slow start in the log:\n%s", got)
	}
}
