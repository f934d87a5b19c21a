package upstream_test

// A fake MCP server for the tests: the test binary re-executes itself with
// fakeModeEnv set and speaks raw line-delimited JSON-RPC, so that each test
// controls exactly what the server writes. Params and results are kept as raw
// bytes, which lets the tests check that nothing is re-encoded on the way.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeModeEnv selects the fake server's start-up behaviour:
//
//	normal       answers initialize and serves the tools below
//	sdk          is a server built with the official Go SDK instead
//	exit         writes to stderr and exits 3 before reading anything
//	refuse       answers initialize with a JSON-RPC error
//	bad-init     answers initialize with a result lacking protocolVersion
//	silent       never answers initialize
//	banner       prints a banner to stdout before anything
//	ignore-term  ignores SIGTERM (Close must SIGKILL it)
//	exit-after-init  answers initialize, then exits 4
//	exit-on-list     exits 5 when asked tools/list
//
// With fakeRecordEnv set to a file name, every line read from stdin is
// appended to that file as it came.
const (
	fakeModeEnv   = "UPSTREAM_FAKE_SERVER"
	fakeRecordEnv = "UPSTREAM_FAKE_RECORD"
)

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(fakeModeEnv); ok {
		os.Exit(runFake(mode))
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines of the package still running after every upstream was closed:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines returns the stacks of the package's goroutines still
// running, after giving those that are ending a moment to return.
func leakedGoroutines() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "mcp-gateway/internal/upstream.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type fakeMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type fakeServer struct {
	outMu sync.Mutex
	out   *os.File

	mu      sync.Mutex
	cancels map[string]chan string      // request id → receives the cancel reason
	waiting map[string]chan fakeMessage // id of our request to the client → its response
}

func runFake(mode string) int {
	fmt.Fprintf(os.Stderr, "fake server pid %d\n", os.Getpid())
	switch mode {
	case "sdk":
		return runSDKServer()
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: FAKE_API_KEY is not set")
		return 3
	case "banner":
		fmt.Println("Fake server v1.0 starting...")
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	}
	f := &fakeServer{
		out:     os.Stdout,
		cancels: map[string]chan string{},
		waiting: map[string]chan fakeMessage{},
	}
	var record *os.File
	if name := os.Getenv(fakeRecordEnv); name != "" {
		var err error
		if record, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
			return 7
		}
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if record != nil && len(line) > 0 {
			record.Write(line)
		}
		if len(line) > 0 {
			f.handle(mode, line)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "stdin closed")
			if mode == "ignore-term" {
				time.Sleep(time.Hour) // only SIGKILL ends it (an empty select would be a detected deadlock)
			}
			return 0
		}
	}
}

func (f *fakeServer) write(s string) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.WriteString(s + "\n")
}

func (f *fakeServer) result(id json.RawMessage, result string) {
	f.write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func (f *fakeServer) handle(mode string, line []byte) {
	var m fakeMessage
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "fake server: bad input %q\n", line)
		os.Exit(9)
	}
	switch {
	case m.Method == "initialize":
		switch mode {
		case "silent":
			return
		case "bad-init":
			f.result(m.ID, `{"serverInfo":{"name":"not quite MCP"}}`)
			return
		case "refuse":
			f.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32602,"message":"unsupported protocol version"}}`)
			return
		}
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		f.result(m.ID, `{"protocolVersion":"`+p.ProtocolVersion+`","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1.0.0"},"x-received":`+string(m.Params)+`}`)
		if mode == "exit-after-init" {
			os.Exit(4)
		}
	case m.Method == "tools/list" && mode == "exit-on-list":
		os.Exit(5)
	case m.Method == "notifications/initialized":
		fmt.Fprintln(os.Stderr, "initialized")
	case m.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		json.Unmarshal(m.Params, &p)
		f.mu.Lock()
		ch := f.cancels[string(p.RequestID)]
		f.mu.Unlock()
		if ch != nil {
			ch <- p.Reason
		}
	case m.Method == "ping":
		f.result(m.ID, `{}`)
	case m.Method == "tools/call" && strings.Contains(string(m.Params), `"stop-reading"`):
		f.result(m.ID, `{}`)
		time.Sleep(time.Hour) // a hung server: stdin is never read again
	case m.Method == "tools/call" && strings.Contains(string(m.Params), `"close-stdin"`):
		os.Stdin.Close() // before answering, so the next request finds it closed
		f.result(m.ID, `{}`)
		time.Sleep(time.Hour) // alive, but deaf
	case m.Method == "tools/call":
		cancel := make(chan string, 1)
		f.mu.Lock()
		f.cancels[string(m.ID)] = cancel
		f.mu.Unlock()
		go f.tool(m, cancel)
	case m.Method == "":
		f.mu.Lock()
		ch := f.waiting[string(m.ID)]
		f.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.ID == nil:
		fmt.Fprintf(os.Stderr, "notification %s %s\n", m.Method, m.Params)
	default:
		f.write(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"no method ` + m.Method + `"}}`)
	}
}

// echoResult is what the echo tool answers: the params it received, raw, in
// a result with unusual spacing and escapes that re-encoding would change.
func echoResult(params string) string {
	return `{"content":[{"type":"text","text":"caf\u00e9"}], "received" : ` + params + `,"z":1,"a":[ ]}`
}

func (f *fakeServer) tool(m fakeMessage, cancel chan string) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Tag    string          `json:"tag"`
			Lines  []string        `json:"lines"`
			Size   int             `json:"size"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	a := p.Arguments
	switch p.Name {
	case "echo":
		f.result(m.ID, echoResult(string(m.Params)))
	case "slow":
		fmt.Fprintf(os.Stderr, "slow started %s\n", a.Tag)
		reason := <-cancel
		fmt.Fprintf(os.Stderr, "slow %s cancelled: %s\n", a.Tag, reason)
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: simulated crash")
		fmt.Fprintln(os.Stderr, "goroutine 1 [running]: main.crash()")
		os.Exit(1)
	case "garbage":
		f.write("this is not JSON-RPC")
	case "stderr":
		for _, l := range a.Lines {
			fmt.Fprintln(os.Stderr, l)
		}
		f.result(m.ID, `{}`)
	case "env":
		b, _ := json.Marshal(os.Environ())
		f.result(m.ID, `{"env":`+string(b)+`}`)
	case "pid":
		f.result(m.ID, fmt.Sprintf(`{"pid":%d}`, os.Getpid()))
	case "notify":
		f.write(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(p.Meta.ProgressToken) + `,"progress":1,"total":2}}`)
		f.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"half way"}}`)
		f.result(m.ID, `{"content":[]}`)
	case "ask":
		// Sends a server-to-client request and returns the raw response it got.
		id := `"srv-` + a.Tag + `"`
		ch := make(chan fakeMessage, 1)
		f.mu.Lock()
		f.waiting[id] = ch
		f.mu.Unlock()
		f.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + a.Method + `","params":` + string(a.Params) + `}`)
		r := <-ch
		if r.Error != nil {
			f.result(m.ID, `{"error":`+string(r.Error)+`}`)
		} else {
			f.result(m.ID, `{"result":`+string(r.Result)+`}`)
		}
	case "ask-cancel":
		// Sends a server-to-client request and cancels it at once.
		f.write(`{"jsonrpc":"2.0","id":"srv-c","method":"sampling/createMessage","params":{}}`)
		f.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"srv-c","reason":"no longer needed"}}`)
		f.result(m.ID, `{}`)
	case "close-stdout":
		f.outMu.Lock() // nothing more is written
		os.Stdout.Close()
		time.Sleep(time.Hour)
	case "unknown-id":
		f.result(json.RawMessage(`987654321`), `{"stray":true}`)
		f.result(m.ID, `{"ok":true}`)
	case "big":
		f.result(m.ID, `{"content":[{"type":"text","text":"`+strings.Repeat("x", a.Size)+`"}]}`)
	case "spawn":
		// Leaves a grandchild in our process group holding our stdout (as
		// fd 1) and stderr, as npx and shell wrappers do.
		cmd := exec.Command("/bin/sh", "-c", "sleep 300 >&3 3>&- & echo $!")
		cmd.ExtraFiles = []*os.File{os.Stdout}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			os.Exit(8)
		}
		f.result(m.ID, `{"pid":`+strings.TrimSpace(string(out))+`}`)
	default:
		f.result(m.ID, `{"isError":true,"content":[{"type":"text","text":"unknown tool"}]}`)
	}
}
