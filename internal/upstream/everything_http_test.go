package upstream_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

var listeningRE = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// startEverythingHTTP runs the reference server pinned in test/npm with the
// given transport ("streamableHttp" or "sse") and returns its address. The
// preload in testdata makes it bind 127.0.0.1 on a free port. The process
// group is killed when the test ends.
func startEverythingHTTP(t *testing.T, ctx context.Context, transport string) (addr string, output *syncBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts node")
	}
	npm, err := filepath.Abs("../../test/npm/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(npm, ".bin", "node")
	server := filepath.Join(npm, ".bin", "mcp-server-everything")
	for _, f := range []string{node, server} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("reference server not installed (run npm ci in test/npm): %v", err)
		}
	}
	preload, err := filepath.Abs("testdata/loopback.cjs")
	if err != nil {
		t.Fatal(err)
	}
	output = &syncBuffer{}
	cmd := exec.Command(node, "--require", preload, server, transport)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "PORT=0"}
	cmd.Stdout, cmd.Stderr = output, output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // gone already is fine
		cmd.Wait()                                      //nolint:errcheck // killed
	})
	for {
		if m := listeningRE.FindStringSubmatch(output.String()); m != nil {
			return m[1], output
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the everything server did not start listening; it wrote:\n%s", output)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestEverythingServerOverHTTP runs the remote upstream against the
// reference server (TypeScript SDK) on both HTTP transports: a real
// implementation of the server side, with its own session handling, event
// store, server-to-client requests and notifications.
func TestEverythingServerOverHTTP(t *testing.T) {
	for _, tc := range []struct{ transport, path, want string }{
		{"streamableHttp", "/mcp", upstream.TransportStreamable},
		{"sse", "/sse", upstream.TransportSSE},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			ctx := testContext(t)
			addr, output := startEverythingHTTP(t, ctx, tc.transport)

			var mu sync.Mutex
			var requests []string
			fx := newRemote(t, "http://"+addr+tc.path, func(o *upstream.HTTPOptions) {
				o.Name = "everything"
				o.Capabilities = json.RawMessage(`{"roots":{"listChanged":true},"sampling":{}}`)
				o.OnRequest = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
					mu.Lock()
					requests = append(requests, method)
					mu.Unlock()
					switch method {
					case "roots/list":
						return json.RawMessage(`{"roots":[{"uri":"file:///srv/data","name":"data"}]}`), nil
					case "sampling/createMessage":
						return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"sampled by the client"},"model":"test-model"}`), nil
					}
					return nil, wire.Errorf(wire.CodeMethodNotFound, "no %s", method)
				}
			})
			if err := fx.up.Start(ctx); err != nil {
				t.Fatalf("Start: %v\nserver output:\n%s", err, output)
			}
			if got := fx.up.Transport(); got != tc.want {
				t.Errorf("detected transport %q, want %q", got, tc.want)
			}
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
				ServerInfo      struct{ Name string }
			}
			if err := json.Unmarshal(fx.up.InitializeResult(), &init); err != nil || init.ProtocolVersion != "2025-11-25" {
				t.Errorf("initialize result %s: %v", fx.up.InitializeResult(), err)
			}

			// Between calls, the server asks for the roots (on the GET
			// stream, or the legacy stream) and logs what it received.
			waitNotification(t, ctx, fx, "notifications/message", "Roots updated: 1 root(s) received from client")

			resp, err := fx.up.Call(ctx, "tools/call", json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`))
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"content":[{"type":"text","text":"Echo: hi"}]}`; string(resp.Result) != want {
				t.Errorf("echo result = %s, want %s", resp.Result, want)
			}

			// Progress notifications arrive before the call returns.
			resp, err = fx.up.Call(ctx, "tools/call", json.RawMessage(`{"name":"trigger-long-running-operation","arguments":{"duration":0.2,"steps":2},"_meta":{"progressToken":7}}`))
			if err != nil || resp.Error != nil {
				t.Fatalf("long-running operation: %+v, %v", resp, err)
			}
			progress := 0
			for len(fx.notifications) > 0 {
				if n := <-fx.notifications; strings.HasPrefix(n, "notifications/progress ") && strings.Contains(n, `"progressToken":7`) {
					progress++
				}
			}
			if progress != 2 {
				t.Errorf("%d progress notifications before the result, want 2", progress)
			}

			// A sampling request during a call reaches OnRequest; its answer
			// goes back to the server, which puts it in the result.
			resp, err = fx.up.Call(ctx, "tools/call", json.RawMessage(`{"name":"trigger-sampling-request","arguments":{"prompt":"hello","maxTokens":5}}`))
			if err != nil || resp.Error != nil || !strings.Contains(string(resp.Result), "sampled by the client") {
				t.Errorf("sampling: %+v, %v", resp, err)
			}
			mu.Lock()
			got := strings.Join(requests, ",")
			mu.Unlock()
			if got != "roots/list,sampling/createMessage" {
				t.Errorf("server requests %q, want roots/list then sampling/createMessage", got)
			}

			resp, err = fx.up.Call(ctx, "tools/list", nil)
			if err != nil || !strings.Contains(string(resp.Result), `"name":"trigger-sampling-request"`) {
				t.Errorf("tools/list = %s, %v", resp.Result, err)
			}
			if err := fx.up.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitNotification waits for a notification of method whose params contain substr.
func waitNotification(t *testing.T, ctx context.Context, fx *remoteFixture, method, substr string) {
	t.Helper()
	var seen []string
	for {
		select {
		case n := <-fx.notifications:
			if strings.HasPrefix(n, method+" ") && strings.Contains(n, substr) {
				return
			}
			seen = append(seen, n)
		case <-ctx.Done():
			t.Fatalf("no %s notification with %q; got %q", method, substr, seen)
		}
	}
}
