package e2e

// One message stays one message: a client's line breaks do not split its
// call into several messages on a stdio server's input (and a forged
// message cannot ride along), and a remote server's pretty-printed JSON
// reaches a stdio client as one line per message and an HTTP client as one
// data line per SSE event.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawPost posts body to the gateway's /mcp with the token and the headers
// given, and returns the status, the response's headers and its body.
func (g *gw) rawPost(t *testing.T, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+g.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// rawSession opens a session-era session on raw HTTP and returns its header.
func (g *gw) rawSession(t *testing.T) map[string]string {
	t.Helper()
	status, h, body := g.rawPost(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := h.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	session := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	if status, _, body := g.rawPost(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); status != 202 {
		t.Fatalf("initialized: %d %s", status, body)
	}
	return session
}

// sseEvents splits an event stream into its events, each the list of its
// data lines, leaving out events without data.
func sseEvents(stream string) [][]string {
	var events [][]string
	for block := range strings.SplitSeq(strings.ReplaceAll(stream, "\r\n", "\n"), "\n\n") {
		var data []string
		for line := range strings.SplitSeq(block, "\n") {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(v, " "))
			}
		}
		// An event whose data is empty is a resumable stream's priming
		// event (an id and a retry), which carries no message.
		if len(data) > 0 && strings.Join(data, "") != "" {
			events = append(events, data)
		}
	}
	return events
}

// responseText returns the text of the tools/call response in a JSON or
// SSE body.
func responseText(t *testing.T, header http.Header, body string) string {
	t.Helper()
	msgs := []string{body}
	if strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") {
		msgs = nil
		for _, ev := range sseEvents(body) {
			msgs = append(msgs, strings.Join(ev, "\n"))
		}
	}
	for _, m := range msgs {
		var resp struct {
			ID     json.RawMessage
			Result *struct{ Content []struct{ Text string } }
			Error  *struct{ Message string }
		}
		if json.Unmarshal([]byte(m), &resp) != nil || resp.ID == nil {
			continue
		}
		if resp.Error != nil {
			t.Fatalf("error response: %s", m)
		}
		if resp.Result == nil || len(resp.Result.Content) != 1 {
			t.Fatalf("unexpected result: %s", m)
		}
		return resp.Result.Content[0].Text
	}
	t.Fatalf("no response in %q", body)
	return ""
}

// A client's tools/call whose params are pretty-printed (LF, CRLF and a
// bare CR between tokens) reaches the everything server (stdio, one message
// a line) as one line and is answered; a body that embeds a second message
// between params' tokens is no JSON value and is refused before any server
// sees it, so the forged message never runs.
func TestLineBreaksDoNotSplitAClientsMessage(t *testing.T) {
	g := newGW(t)
	// A call the server never understood fails in 30 s, not 5 min.
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")), "--call-timeout", "30s")
	session := g.rawSession(t)

	message := `two\nlines \"}{\"jsonrpc\":\"2.0\"` // escaped: a line break and quotes inside a string
	pretty := "{\r\n  \"jsonrpc\": \"2.0\",\n  \"id\": 2,\r  \"method\": \"tools/call\",\n  \"params\": {\r\n    \"name\": \"echo\",\r" +
		"    \"arguments\": {\n      \"message\": \"" + message + "\"\n    }\n  }\n}\n"
	status, h, body := g.rawPost(t, pretty, session)
	if status != 200 {
		t.Fatalf("pretty-printed call: %d %s\nlog:\n%s", status, body, g.log())
	}
	if got, want := responseText(t, h, body), "Echo: two\nlines \"}{\"jsonrpc\":\"2.0\""; got != want {
		t.Errorf("echo of a pretty-printed call = %q, want %q", got, want)
	}

	// The forged message would answer the gateway's next request to the
	// server (id 3 or so) in another client's name.
	forged := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"forged"}}}`
	for name, smuggle := range map[string]string{
		"LF":   "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\n" + forged + "\n\"arguments\":{\"message\":\"a\"}}}",
		"CR":   "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\r" + forged + "\r\"arguments\":{\"message\":\"a\"}}}",
		"tail": "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"a\"}}}\n" + forged,
	} {
		status, _, body := g.rawPost(t, smuggle, session)
		if status != 400 || !strings.Contains(body, "-32700") {
			t.Errorf("%s: a body with a second message: %d %s, want 400 with -32700", name, status, body)
		}
	}
	// The session goes on, and the server answered nothing unasked for.
	status, h, body = g.rawPost(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"message":"after"}}}`, session)
	if status != 200 || responseText(t, h, body) != "Echo: after" {
		t.Errorf("call after the refusals: %d %s", status, body)
	}
	if log := g.log(); strings.Contains(log, "unknown request id") || strings.Contains(log, "forged") {
		t.Errorf("the forged message reached the server:\n%s", log)
	}
}

// prettyRemote is a streamable HTTP MCP server that pretty-prints every
// message, with CRLF line ends: its JSON bodies span lines, and each SSE
// event's data spans several data lines (which SSE joins with LF). Its one
// tool, "hello", sends a progress notification before its result.
func prettyRemote(t *testing.T) string {
	t.Helper()
	indent := func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Error(err)
		}
		return strings.ReplaceAll(string(b), "\n", "\r\n")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Meta            struct {
					ProgressToken any `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "pretty-1")
			answer["result"] = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "pretty", "version": "1"}}
		case "tools/list":
			answer["result"] = map[string]any{"tools": []any{map[string]any{"name": "hello", "description": "says\nhello",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			event := func(msg string) {
				fmt.Fprint(w, "event: message\r\n")
				for line := range strings.SplitSeq(msg, "\r\n") {
					fmt.Fprintf(w, "data: %s\r\n", line)
				}
				fmt.Fprint(w, "\r\n")
			}
			if tok := req.Params.Meta.ProgressToken; tok != nil {
				event(indent(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": tok, "progress": 1, "total": 2, "message": "half\nway"}}))
			}
			answer["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "line 1\nline 2"}}}
			event(indent(answer))
			return
		case "ping":
			answer["result"] = map[string]any{}
		default:
			answer["error"] = map[string]any{"code": -32601, "message": "no " + req.Method}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, indent(answer)+"\r\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// mustBeMessage fails unless line is one JSON-RPC message, and returns it.
func mustBeMessage(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
		t.Fatalf("%q is not one JSON-RPC message (%v)", line, err)
	}
	return m
}

// `mcp-gateway stdio` in front of a pretty-printing remote server writes
// every message, the server's progress and result among them, on one line.
func TestPrettyRemoteOverStdioFront(t *testing.T) {
	config := fmt.Sprintf(`{"pretty": {"url": %q}}`, prettyRemote(t))
	cmd := exec.Command(gatewayBin, "stdio", "--config", config, "--catalog-file", filepath.Join(t.TempDir(), "none.json"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("mcp-gateway stdio: %v\n%s", err, stderr.String())
		}
	})
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// until reads messages up to the response with id, each of which must
	// be one line.
	until := func(id float64) []map[string]any {
		t.Helper()
		var got []map[string]any
		deadline := time.After(60 * time.Second) // a hang guard, not a measure
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout ended before the response %v; stderr:\n%s", id, stderr.String())
				}
				m := mustBeMessage(t, line)
				got = append(got, m)
				if m["id"] == id {
					return got
				}
			case <-deadline:
				t.Fatalf("no response %v; stderr:\n%s", id, stderr.String())
			}
		}
	}
	send := func(msg string) {
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	until(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := until(2)
	if b, _ := json.Marshal(list[len(list)-1]["result"]); !bytes.Contains(b, []byte(`"description":"says\nhello","inputSchema"`)) {
		t.Errorf("tools/list = %s", b)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello","arguments":{},"_meta":{"progressToken":"p-1"}}}`)
	call := until(3)
	var progress, result bool
	for _, m := range call {
		b, _ := json.Marshal(m)
		switch {
		case m["method"] == "notifications/progress":
			progress = bytes.Contains(b, []byte(`"progressToken":"p-1"`)) && bytes.Contains(b, []byte(`"message":"half\nway"`))
		case m["id"] == 3.0:
			result = bytes.Contains(b, []byte(`"text":"line 1\nline 2"`))
		}
	}
	if !progress || !result {
		t.Errorf("tools/call: progress %v, result %v in %v", progress, result, call)
	}
}

// The HTTP front in front of the same server answers a call whose progress
// comes first as an SSE stream whose every event has one data line.
func TestPrettyRemoteOverHTTPFront(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"pretty": {"url": %q}}`, prettyRemote(t)))
	session := g.rawSession(t)
	status, h, body := g.rawPost(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello","arguments":{},"_meta":{"progressToken":7}}}`, session)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: %d %s %q", status, h.Get("Content-Type"), body)
	}
	events := sseEvents(body)
	if len(events) != 2 {
		t.Fatalf("%d events, want the progress and the result: %q", len(events), body)
	}
	for i, data := range events {
		if len(data) != 1 {
			t.Errorf("event %d has %d data lines: %q", i, len(data), data)
			continue
		}
		mustBeMessage(t, data[0])
	}
	if got := responseText(t, h, body); got != "line 1\nline 2" {
		t.Errorf("result text %q", got)
	}
}
