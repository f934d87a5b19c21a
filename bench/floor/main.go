// Command floor is the benchmark's floor relay: the least a relay from
// streamable HTTP to one stdio MCP server does on net/http, measured beside
// the gateway (go run ./bench -floor) so that a figure of the gateway's can
// be read against what the topology itself costs on the machine.
//
// It runs the first server of a gateway-style --config ({"NAME":{"runCmd":
// "..."}}), initializes it once, and then, for every client: answers
// initialize from that one result, accepts notifications without passing
// them on, and relays each request as one line on the server's stdin under
// an id of its own, its answer going back under the client's id as
// application/json. Nothing else: no sessions of its own, no policy,
// telemetry, timeouts, limits or list merging. It takes the gateway's serve
// command line (the flags it does not need are ignored) and prints the
// gateway's ready line, so the benchmark starts it as it starts a gateway.
// It is a measuring instrument, not a product: it trusts its one client.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	config := fs.String("config", "", "servers, as the gateway's --config")
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 0, "port (0: any)")
	for _, ignored := range []string{"token-file", "catalog-file", "github-dir", "log-level"} {
		fs.String(ignored, "", "ignored")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd, err := firstServer(*config)
	if err != nil {
		return err
	}
	r, err := start(cmd)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", r.serveMCP)
	mux.HandleFunc("/health", r.serveHealth)
	slog.New(slog.NewTextHandler(os.Stderr, nil)).Info("MCP gateway is ready", "port", ln.Addr().(*net.TCPAddr).Port)
	return http.Serve(ln, mux)
}

// firstServer returns the runCmd of the config's only (or first) server.
func firstServer(config string) (string, error) {
	var servers map[string]struct {
		RunCmd string `json:"runCmd"`
	}
	if err := json.Unmarshal([]byte(config), &servers); err != nil {
		return "", fmt.Errorf("--config: %w", err)
	}
	for _, s := range servers {
		if s.RunCmd != "" {
			return s.RunCmd, nil
		}
	}
	return "", errors.New("--config: no server with a runCmd")
}

// relay is one stdio server and the requests waiting for its answers.
type relay struct {
	token string

	wmu   sync.Mutex // the writer of stdin
	stdin io.Writer
	wbuf  []byte

	next    atomic.Uint64
	mu      sync.Mutex
	pending map[uint64]chan *wire.Message

	initResult json.RawMessage
	tools      int
}

func start(runCmd string) (*relay, error) {
	cmd := exec.Command("sh", "-c", runCmd)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &relay{token: os.Getenv("GATEWAY_ACCESS_TOKEN"), stdin: stdin, pending: map[uint64]chan *wire.Message{}}
	go r.read(stdout)
	init, err := r.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"1"}}`))
	if err != nil || init.Error != nil {
		return nil, fmt.Errorf("initialize: %v %s", err, init.Error)
	}
	r.initResult = init.Result
	if err := r.send(wire.AppendNotification(nil, "notifications/initialized", nil)); err != nil {
		return nil, err
	}
	list, err := r.call("tools/list", json.RawMessage(`{}`))
	if err != nil || list.Error != nil {
		return nil, fmt.Errorf("tools/list: %v %s", err, list.Error)
	}
	var tools struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(list.Result, &tools); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	r.tools = len(tools.Tools)
	return r, nil
}

// read hands each answer on stdout to the request waiting for it.
func (r *relay) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: the server's stdout ended:", err)
			os.Exit(1)
		}
		m, err := wire.Parse(line)
		if err != nil || !m.IsResponse() {
			continue // the server's own notifications and requests are not relayed
		}
		id, err := strconv.ParseUint(string(m.ID), 10, 64)
		if err != nil {
			continue
		}
		r.mu.Lock()
		ch := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (r *relay) send(line []byte) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.wbuf = append(append(r.wbuf[:0], line...), '\n')
	_, err := r.stdin.Write(r.wbuf)
	return err
}

// call sends a request under the relay's own id and waits for its answer.
func (r *relay) call(method string, params json.RawMessage) (*wire.Message, error) {
	id := r.next.Add(1)
	ch := make(chan *wire.Message, 1)
	r.mu.Lock()
	r.pending[id] = ch
	r.mu.Unlock()
	r.wmu.Lock()
	r.wbuf = append(wire.AppendIntRequest(r.wbuf[:0], id, method, params), '\n')
	_, err := r.stdin.Write(r.wbuf)
	r.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	return <-ch, nil
}

func (r *relay) authorized(req *http.Request) bool {
	return r.token == "" || req.Header.Get("Authorization") == "Bearer "+r.token
}

func (r *relay) serveMCP(w http.ResponseWriter, req *http.Request) {
	if !r.authorized(req) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch req.Method {
	case http.MethodPost:
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m, err := wire.Parse(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !m.IsRequest() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	if m.Method == "initialize" {
		h["Mcp-Session-Id"] = sessionID
		_, _ = w.Write(wire.AppendResult(nil, m.ID, r.initResult))
		return
	}
	a, err := r.call(m.Method, m.Params)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	var out []byte
	if a.Error != nil {
		out = wire.AppendRawError(make([]byte, 0, 64+len(a.Error)), m.ID, a.Error)
	} else {
		out = wire.AppendResult(make([]byte, 0, 64+len(a.Result)), m.ID, a.Result)
	}
	_, _ = w.Write(out)
}

var (
	contentTypeJSON = []string{"application/json"}
	sessionID       = []string{"floor"}
)

func (r *relay) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"status":"ok","servers":["echo"],"tools":%d,"upstreams":{"echo":{"state":"ready"}}}`, r.tools)
	_, _ = w.Write(b.Bytes())
}
