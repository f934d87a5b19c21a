package upstream_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
)

// pretty is a message as a server that pretty-prints its JSON writes it,
// with the line ends given: every member on its own line.
func pretty(msg, eol string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(msg), "", "  "); err != nil {
		panic(err)
	}
	return strings.ReplaceAll(b.String(), "\n", eol)
}

// sseEvent writes msg as one event, each of its lines a data line, as the
// SSE specification has multi-line data sent; eol ends the lines.
func sseEvent(msg, eol string) string {
	var b strings.Builder
	b.WriteString("event: message" + eol)
	for line := range strings.SplitSeq(msg, "\n") {
		b.WriteString("data: " + strings.TrimSuffix(line, "\r") + eol)
	}
	return b.String() + eol
}

// TestRemotePrettyPrintedAnswers: a remote server that pretty-prints its
// messages, in a JSON body or in SSE events whose data spans several lines
// (LF, CRLF or CR line ends), is understood, and what reaches the gateway
// (the result, a notification's params) holds no line break: forwarded to
// a stdio client or into an SSE data line, it stays one message.
func TestRemotePrettyPrintedAnswers(t *testing.T) {
	const wantResult = `{"content":[{"type":"text","text":"line 1\nline 2"}],"isError":false}`
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"a":[1,2],"b":"x"}}}`
	for _, tc := range []struct {
		name, ct string
		body     func(id json.RawMessage) string
	}{
		{"JSON body, LF", "application/json", func(id json.RawMessage) string {
			return pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\n") + "\n"
		}},
		{"JSON body, CRLF", "application/json", func(id json.RawMessage) string {
			return pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\r\n")
		}},
		{"JSON body, CR", "application/json", func(id json.RawMessage) string {
			return pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\r")
		}},
		{"SSE, LF", "text/event-stream", func(id json.RawMessage) string {
			return sseEvent(pretty(note, "\n"), "\n") + sseEvent(pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\n"), "\n")
		}},
		{"SSE, CRLF", "text/event-stream", func(id json.RawMessage) string {
			return sseEvent(pretty(note, "\n"), "\r\n") + sseEvent(pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\n"), "\r\n")
		}},
		{"SSE, CR", "text/event-stream", func(id json.RawMessage) string {
			return sseEvent(pretty(note, "\n"), "\r") + sseEvent(pretty(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, wantResult), "\n"), "\r")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			url := fakeStreamable(t, func(id json.RawMessage, method, session string) (int, string, string) {
				return 200, tc.ct, tc.body(id)
			})
			fx := newRemote(t, url, func(o *upstream.HTTPOptions) { o.NoListen = true })
			resp, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`))
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Result) != wantResult {
				t.Errorf("result %q, want %q", resp.Result, wantResult)
			}
			if tc.ct != "text/event-stream" {
				return
			}
			select {
			case got := <-fx.notifications:
				if want := `notifications/message {"level":"info","data":{"a":[1,2],"b":"x"}}`; got != want {
					t.Errorf("notification %q, want %q", got, want)
				}
			case <-time.After(5 * time.Second):
				t.Error("the pretty-printed notification never arrived")
			}
		})
	}
}

// TestRemoteRepeatedMembers: a server's message that repeats a member is
// not trusted. In a JSON body it fails the call, saying why; in an event it
// is dropped with a warning (as any event that is no JSON-RPC message), so
// the call ends with the stream, unanswered.
func TestRemoteRepeatedMembers(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body, err string
	}{
		{"JSON body", "application/json", `{"jsonrpc":"2.0","id":%s,"result":{"content":[]},"result":{"content":[{"type":"text","text":"other"}]}}`,
			`mcp server "remote" answered tools/call with JSON that is not a JSON-RPC message (member result appears more than once in its object; send each member once)`},
		{"event", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[],\"content\":[1]}}\n\n",
			`mcp server "remote" closed the response stream of tools/call before answering (end of stream)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			url := fakeStreamable(t, func(id json.RawMessage, method, session string) (int, string, string) {
				return 200, tc.ct, fmt.Sprintf(tc.body, id)
			})
			fx := newRemote(t, url, func(o *upstream.HTTPOptions) { o.NoListen = true })
			resp, err := fx.up.Call(ctx, "tools/call", toolParams("x", `{}`))
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Fatalf("call = %+v, %v; want an error starting %s", resp, err, tc.err)
			}
			if tc.ct == "text/event-stream" && !strings.Contains(fx.logs.String(), "result.content appears more than once") {
				t.Errorf("no warning naming result.content in the log:\n%s", fx.logs)
			}
		})
	}
}

// TestStdioRepeatedMembers: a stdio server whose message repeats a member
// (here its answer to initialize, with two ids) wrote bad output: it is
// stopped, and the error says so.
func TestStdioRepeatedMembers(t *testing.T) {
	ctx := testContext(t)
	script := `read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"dup","version":"1"}}}\n' "$id" "$id"
sleep 30`
	fx := newFake(t, "", func(o *upstream.StdioOptions) {
		o.Command = []string{"/bin/sh", "-c", script}
		o.Env = append(o.Env, "PATH=/usr/bin:/bin")
	})
	err := fx.s.Start(ctx)
	if !errors.Is(err, upstream.ErrProtocol) || !strings.Contains(err.Error(), `mcp server "fake" wrote non-JSON-RPC output to stdout before answering initialize`) {
		t.Fatalf("Start = %v, want the bad output named", err)
	}
	if !strings.Contains(err.Error(), `\"id\":`) {
		t.Errorf("the error does not show the output: %v", err)
	}
}
