package front

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// emptyGateway is a gateway without servers: enough for what the front
// decides before routing.
func emptyGateway() *gateway.Gateway {
	return gateway.New(gateway.NewRouter(gateway.RouterOptions{}), gateway.Info{Name: "test", Version: "1"})
}

// rpcError decodes the error of a JSON-RPC response.
func rpcError(t *testing.T, body []byte) (json.RawMessage, *wire.Error) {
	t.Helper()
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error *wire.Error     `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || resp.Error == nil {
		t.Fatalf("not a JSON-RPC error response (%v): %s", err, body)
	}
	return resp.ID, resp.Error
}

// TestPostParseErrors: a message the front cannot trust is answered 400,
// with a parse error when it is not JSON and an invalid request when it is
// JSON but no plain JSON-RPC message; a repeated member is named.
func TestPostParseErrors(t *testing.T) {
	h := &Handler{Gateway: emptyGateway()}
	for _, tc := range []struct {
		name, body string
		code       int64
		says       string
	}{
		{"repeated tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","arguments":{},"name":"denied"}}`, wire.CodeInvalidRequest, "params.name"},
		{"repeated escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","n\u0061me":"denied"}}`, wire.CodeInvalidRequest, "params.name"},
		{"repeated method", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, wire.CodeInvalidRequest, "method"},
		{"repeated progress token", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1,"progressToken":2}}}`, wire.CodeInvalidRequest, "params._meta.progressToken"},
		{"repeated argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"path":"/ok","path":"/etc"}}}`, wire.CodeInvalidRequest, "params.arguments.path"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, wire.CodeInvalidRequest, "batch"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, wire.CodeInvalidRequest, "id must be a string or a number"},
		{"not JSON", `{"jsonrpc":`, wire.CodeParseError, "not valid JSON"},
		{"two messages", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", wire.CodeParseError, "not valid JSON"},
		{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}", wire.CodeParseError, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", w.Code, w.Body)
			}
			id, e := rpcError(t, w.Body.Bytes())
			if string(id) != "null" || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
				t.Errorf("id %s error %d %q; want id null, %d, naming %q", id, e.Code, e.Message, tc.code, tc.says)
			}
		})
	}
}

// TestStdioParseErrors: the stdio front answers the same errors, one line
// each, and goes on reading.
func TestStdioParseErrors(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed","name":"denied"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"x","progressToken":"y"}}}`,
		`{"jsonrpc":"2.0","id":3,`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	if err := ServeStdio(context.Background(), emptyGateway(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out.String())
	}
	for i, want := range []struct {
		code int64
		says string
	}{{wire.CodeInvalidRequest, "params.name"}, {wire.CodeInvalidRequest, "params._meta.progressToken"}, {wire.CodeParseError, "not valid JSON"}} {
		_, e := rpcError(t, []byte(lines[i]))
		if e.Code != want.code || !strings.Contains(e.Message, want.says) {
			t.Errorf("line %d: error %d %q, want %d naming %q", i+1, e.Code, e.Message, want.code, want.says)
		}
	}
	if lines[3] != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Errorf("the ping after the errors: %s", lines[3])
	}
}

// TestStdioWritesOneLine: whatever the gateway hands the stdio front to
// send, with line breaks in it, reaches the client as one line.
func TestStdioWritesOneLine(t *testing.T) {
	var out bytes.Buffer
	c := &stdioConn{w: &out}
	msgs := []string{
		"{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/message\",\r\n\"params\":{\"level\":\"info\",\r\"data\":\"a\\nb\"}}",
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	}
	for _, m := range msgs {
		if err := c.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	c.reply(json.RawMessage(`1`), gateway.Reply{Result: json.RawMessage("{\n\"content\": [\r\n]}")})
	c.reply(json.RawMessage(`2`), gateway.Reply{Error: json.RawMessage("{\"code\":\n-1,\"message\":\"m\"}")})
	want := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a\nb"}}` + "\n" +
		msgs[1] + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m"}}` + "\n"
	if out.String() != want {
		t.Errorf("stdio front wrote\n%q\nwant\n%q", out.String(), want)
	}
	// A message that cannot be made one line is not written.
	if err := c.Send([]byte("{\"a\":\n")); err == nil {
		t.Error("Send of broken JSON with a line break: want an error")
	}
	if _, err := io.WriteString(&out, ""); err != nil || strings.Count(out.String(), "\n") != 4 {
		t.Errorf("something more was written: %q", out.String())
	}
}
