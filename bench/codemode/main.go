// Command codemode measures code mode (docs/code-mode.md) through the real
// gateway, and prints the figures as Markdown tables:
//
//   - what a client reads in tools/list for 64 servers × 20 tools, against
//     what it reads with code-mode and one generated tool over all of them
//     instead (the ratio is the figure);
//
//   - the latency an inner call adds over a direct tools/call of the same
//     tool (the goal: at most 1.2× the direct call);
//
//   - a run of N inner calls in one round trip against N round trips.
//
//     go run ./bench/codemode            (make bench-codemode)
//     go run ./bench/codemode -short     seconds, for a smoke test
//
// It asserts nothing about speed: it exits 1 only when a call fails or the
// harness breaks. It builds ./cmd/mcp-gateway and ./bench/echo (the
// official Go SDK's server) and talks to the gateway's streamable HTTP
// endpoint with net/http in the 2025-11-25 era, one call at a time.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const token = "bench-codemode-token"

// prebuilt is -gateway-bin: another build to measure (an older one, to compare).
var prebuilt string

func main() {
	short := flag.Bool("short", false, "a few calls only (a smoke test)")
	servers := flag.Int("servers", 64, "servers behind the gateway")
	tools := flag.Int("tools", 20, "tools per server")
	calls := flag.Int("calls", 400, "measured calls (and runs) per figure")
	flag.StringVar(&prebuilt, "gateway-bin", "", "measure this mcp-gateway executable (its runner beside it) instead of building ./cmd/mcp-gateway")
	flag.Parse()
	if *short {
		*calls = 20
	}
	if err := run(*servers, *tools, *calls); err != nil {
		fmt.Fprintln(os.Stderr, "bench/codemode:", err)
		os.Exit(1)
	}
}

func run(nServers, nTools, calls int) error {
	dir, err := os.MkdirTemp("", "mcp-gateway-bench-codemode-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gatewayBin, echoBin := filepath.Join(dir, "mcp-gateway"), filepath.Join(dir, "echo")
	runnerBin := filepath.Join(dir, "mcp-gateway-codemode") // found beside the gateway
	for bin, pkg := range map[string]string{gatewayBin: "./cmd/mcp-gateway", runnerBin: "./cmd/mcp-gateway-codemode", echoBin: "./bench/echo"} {
		if prebuilt != "" && bin != echoBin {
			continue
		}
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	var cfg strings.Builder
	cfg.WriteString("{")
	names := make([]string, nServers)
	for i := range nServers {
		names[i] = fmt.Sprintf("s%02d", i+1)
		if i > 0 {
			cfg.WriteString(",")
		}
		fmt.Fprintf(&cfg, `%q:{"runCmd":"exec '%s' -tools %d"}`, names[i], echoBin, nTools)
	}
	cfg.WriteString("}")
	port, err := freePort()
	if err != nil {
		return err
	}
	if prebuilt != "" {
		gatewayBin = prebuilt
	}
	cmd := exec.Command(gatewayBin, "serve", "--config", cfg.String(), "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--token-file", "", "--catalog-file", filepath.Join(dir, "none.json"), "--code-mode", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "GATEWAY_ACCESS_TOKEN="+token)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	c := &client{url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	if err := c.initialize(2 * time.Minute); err != nil {
		return err
	}
	fmt.Printf("# Code mode: %d servers × %d tools (echo, bench/echo), %s\n\n", nServers, nTools, time.Now().UTC().Format("2006-01-02"))
	rest := vmRSS(cmd.Process.Pid)

	// tools/list: every tool, against code-mode and one generated tool.
	_, listBytes, err := c.listAll(nServers*nTools + 1)
	if err != nil {
		return err
	}
	if _, err := c.callTool("code-mode", map[string]any{"name": "all", "servers": names}); err != nil {
		return err
	}
	defs, _, err := c.listAll(nServers*nTools + 2)
	if err != nil {
		return err
	}
	modeBytes, genBytes := len(defs["code-mode"]), len(defs["code-mode-all"])
	serverBytes := listBytes - modeBytes
	fmt.Println("| what a client reads | bytes | vs the tools |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| tools/list: the %d tools' definitions | %d | 1 |\n", nServers*nTools, serverBytes)
	fmt.Printf("| code-mode + code-mode-all (every tool as a signature) | %d | %.3f |\n", modeBytes+genBytes, float64(modeBytes+genBytes)/float64(serverBytes))
	fmt.Printf("| code-mode alone (one-shot runs) | %d | %.4f |\n\n", modeBytes, float64(modeBytes)/float64(serverBytes))

	// Latency, one call at a time.
	direct, err := c.timed(calls, func() error {
		res, err := c.callTool("echo", map[string]any{"text": "x"})
		return want(res, err, `"x"`, false)
	})
	if err != nil {
		return err
	}
	runOf := func(n int, parallel bool) (time.Duration, error) {
		script := fmt.Sprintf(`let last; for (let i = 0; i < %d; i++) last = await servers.s01.echo({text: "x"}); return %d;`, n, n)
		if parallel {
			script = fmt.Sprintf(`await Promise.all(Array.from({length: %d}, () => servers.s01.echo({text: "x"}))); return %d;`, n, n)
		}
		return c.timed(max(calls/max(n/4, 1), 10), func() error {
			res, err := c.callTool("code-mode-all", map[string]any{"script": script})
			return want(res, err, strconv.Itoa(n), true)
		})
	}
	empty, err := runOf(0, false)
	if err != nil {
		return err
	}
	fmt.Println("| p50, one call at a time | time | per inner call | vs a direct tools/call |")
	fmt.Println("|---|---:|---:|---:|")
	fmt.Printf("| direct tools/call of echo | %s | | 1 |\n", us(direct))
	fmt.Printf("| a run with no inner call | %s | | |\n", us(empty))
	for _, n := range []int{1, 10, 50} {
		for _, parallel := range []bool{false, true} {
			if parallel && n == 1 {
				continue
			}
			d, err := runOf(n, parallel)
			if err != nil {
				return err
			}
			what := fmt.Sprintf("a run of %d inner calls, one after another", n)
			if parallel {
				what = fmt.Sprintf("a run of %d inner calls, Promise.all (8 at once)", n)
			}
			per := (d - empty) / time.Duration(n)
			fmt.Printf("| %s | %s | %s | %.2f× (%d round trips: %s, %.2f×) |\n", what, us(d), us(per),
				float64(per)/float64(direct), n, us(direct*time.Duration(n)), float64(d)/float64(direct*time.Duration(n)))
		}
	}
	fmt.Println("\nThe goal for an inner call: at most 1.2× a direct tools/call (the per-inner-call column, the run's own cost taken out).")

	// Memory: the gateway's, and its code-mode runners' (children of it).
	var runners []string
	for _, pid := range children(cmd.Process.Pid) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(comm), "mcp-gateway-cod") {
			runners = append(runners, fmt.Sprintf("%.1f", float64(vmRSS(pid))/(1<<20)))
		}
	}
	fmt.Println("\n| VmRSS | MiB |")
	fmt.Println("|---|---:|")
	fmt.Printf("| the gateway at rest (initialized, tools/list) | %.1f |\n", float64(rest)/(1<<20))
	fmt.Printf("| the gateway after the runs | %.1f |\n", float64(vmRSS(cmd.Process.Pid))/(1<<20))
	fmt.Printf("| its code-mode runner processes | %s |\n", orNone(runners))
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none (in-process)"
	}
	return strings.Join(s, ", ")
}

// vmRSS is a process's resident memory in bytes (/proc/PID/status), 0 off Linux.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// children are the pids whose parent is pid (forked by any of its threads).
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// want checks a tools/call result: its structuredContent.result (code
// mode) or its text is v.
func want(res json.RawMessage, err error, v string, run bool) error {
	if err != nil {
		return err
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool `json:"isError"`
		Structured struct {
			Result json.RawMessage `json:"result"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	got := ""
	if run {
		got = string(r.Structured.Result)
	} else if len(r.Content) > 0 {
		got = strconv.Quote(r.Content[0].Text)
	}
	if r.IsError || got != v {
		return fmt.Errorf("a call returned %.300s, want %s", res, v)
	}
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1e3) }

// client is a 2025-11-25 client of the gateway over net/http.
type client struct {
	url, session string
	id           int
	http         http.Client
}

func (c *client) initialize(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		_, err := c.rpc("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "bench-codemode", "version": "1"}})
		if err == nil {
			_, err = c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the gateway did not answer initialize: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listAll reads every page of tools/list: the definitions by name and the
// bytes of their JSON; it waits until there are want tools.
func (c *client) listAll(want int) (map[string]json.RawMessage, int, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		defs, n := map[string]json.RawMessage{}, 0
		cursor := ""
		for {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			res, err := c.rpc("tools/list", params)
			if err != nil {
				return nil, 0, err
			}
			var page struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(res, &page); err != nil {
				return nil, 0, err
			}
			for _, t := range page.Tools {
				var d struct{ Name string }
				_ = json.Unmarshal(t, &d)
				defs[d.Name] = t
				n += len(t)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(defs) >= want {
			return defs, n, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("tools/list has %d tools, want %d", len(defs), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *client) callTool(name string, args any) (json.RawMessage, error) {
	return c.rpc("tools/call", map[string]any{"name": name, "arguments": args})
}

// timed runs f n times (after a few unmeasured) and returns the median.
func (c *client) timed(n int, f func() error) (time.Duration, error) {
	for range 5 {
		if err := f(); err != nil {
			return 0, err
		}
	}
	took := make([]time.Duration, 0, n)
	for range n {
		began := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		took = append(took, time.Since(began))
	}
	slices.Sort(took)
	return took[len(took)/2], nil
}

func (c *client) rpc(method string, params any) (json.RawMessage, error) {
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	b, err := c.post(body)
	if err != nil {
		return nil, err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		return nil, fmt.Errorf("%s: %v: %.200s", method, err, b)
	}
	if msg.Error != nil {
		return nil, fmt.Errorf("%s: JSON-RPC error %d: %s", method, msg.Error.Code, msg.Error.Message)
	}
	return msg.Result, nil
}

// post sends one message and returns the JSON-RPC message answering it
// (the last data line of an SSE stream).
func (c *client) post(body []byte) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	if resp.StatusCode == http.StatusAccepted {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for line := range bytes.Lines(b) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
				last = bytes.TrimSpace(d)
			}
		}
		return last, nil
	}
	return b, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
