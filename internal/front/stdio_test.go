package front

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
)

// slowGateway serves one built-in tool, "slow", that answers after d.
func slowGateway(t *testing.T, d time.Duration) *gateway.Gateway {
	t.Helper()
	r := gateway.NewRouter(gateway.RouterOptions{})
	err := r.SetBuiltins([]gateway.Builtin{{
		Tool: json.RawMessage(`{"name":"slow","inputSchema":{"type":"object"}}`),
		Call: func(ctx context.Context, c *gateway.BuiltinCall) (json.RawMessage, error) {
			select {
			case <-time.After(d):
				return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return gateway.New(r, gateway.Info{Name: "test", Version: "1"})
}

// TestStdioAnswersAfterEndOfInput: a client that writes its requests and
// closes its input at once (`printf ... | mcp-gateway stdio`) still gets
// the answer of a call in flight when the input ended, in both eras.
func TestStdioAnswersAfterEndOfInput(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"session", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}
`},
		{"2026-07-28", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := ServeStdio(context.Background(), slowGateway(t, 200*time.Millisecond), strings.NewReader(tc.in), &out); err != nil {
				t.Fatal(err)
			}
			var got string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":2,`) {
					got = line
				}
			}
			if !strings.Contains(got, `"text":"done"`) {
				t.Errorf("the call in flight at the end of input was not answered; output:\n%s", out.String())
			}
		})
	}
}

// TestStdioEndOfInputBoundsTheWait: a call that never ends does not keep
// ServeStdio from returning once its input has ended: it is cancelled
// after the drain.
func TestStdioEndOfInputBoundsTheWait(t *testing.T) {
	c := &stdioConn{gw: slowGateway(t, time.Hour), w: io.Discard, inflight: map[string]*inflightRequest{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.handle(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`))
	returned := make(chan struct{})
	go func() {
		c.drain(ctx, 10*time.Millisecond)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("drain waited for a call that never ends")
	}
	cancel()
	c.wg.Wait()
}

// TestStdioEndsWithItsContext: a signal (ctx) ends the serving even while
// the client keeps its input open and says nothing.
func TestStdioEndsWithItsContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- ServeStdio(ctx, emptyGateway(), r, io.Discard) }()
	cancel()
	select {
	case err := <-returned:
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio kept reading a silent input after its context ended")
	}
}
