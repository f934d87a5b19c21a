package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// checkPlainNames lists the tools of the fixture directly and through the
// gateway, and says what is wrong if a fixture tool is not exposed under its
// own name ("" when all are).
func checkPlainNames(ctx context.Context, fixtureURL, gatewayURL string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	direct, err := listTools(ctx, fixtureURL)
	if err != nil {
		return "listing the fixture's tools directly: " + err.Error()
	}
	through, err := listTools(ctx, gatewayURL)
	if err != nil {
		return "listing tools through the gateway: " + err.Error()
	}
	exposed := map[string]bool{}
	for _, n := range through {
		exposed[n] = true
	}
	var missing []string
	for _, n := range direct {
		if !exposed[n] {
			missing = append(missing, n)
		}
	}
	if len(direct) == 0 {
		return "the fixture lists no tools"
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Sprintf("the gateway does not expose %d of the fixture's %d tools under their own names (the suite calls them by name): %s",
			len(missing), len(direct), strings.Join(missing, ", "))
	}
	fmt.Printf("names: all %d fixture tools are exposed unprefixed among the gateway's %d\n", len(direct), len(through))
	return ""
}

// listTools is a minimal streamable-HTTP client of protocol 2025-11-25:
// initialize, notifications/initialized, tools/list (every page).
func listTools(ctx context.Context, url string) ([]string, error) {
	c := &rpcClient{url: url}
	init, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "conformance-harness", "version": "0"},
	})
	if err != nil {
		return nil, err
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(init, &ir); err != nil {
		return nil, fmt.Errorf("initialize result: %v", err)
	}
	c.version = ir.ProtocolVersion
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return nil, err
	}
	defer c.close()
	var names []string
	cursor := ""
	for page := 0; page < 100; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		var lr struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &lr); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		for _, t := range lr.Tools {
			names = append(names, t.Name)
		}
		if cursor = lr.NextCursor; cursor == "" {
			return names, nil
		}
	}
	return nil, fmt.Errorf("tools/list: more than 100 pages")
}

type rpcClient struct {
	url, session, version string
	id                    int
}

func (c *rpcClient) post(ctx context.Context, msg map[string]any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	return http.DefaultClient.Do(req)
}

func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.id++
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(b))
	}
	var messages [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Each event's data lines make one message.
		var data []byte
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			case line == "" && len(data) > 0:
				messages = append(messages, data)
				data = nil
			}
		}
		if len(data) > 0 {
			messages = append(messages, data)
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", method, err)
		}
		messages = append(messages, b)
	}
	for _, m := range messages {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &r) != nil || string(r.ID) != fmt.Sprint(c.id) {
			continue // a notification, or not ours
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: JSON-RPC error %d: %s", method, r.Error.Code, r.Error.Message)
		}
		return r.Result, nil
	}
	return nil, fmt.Errorf("%s: no response with id %d", method, c.id)
}

func (c *rpcClient) notify(ctx context.Context, method string) error {
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return fmt.Errorf("%s: %v", method, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
	}
	return nil
}

// close ends the session, if there is one.
func (c *rpcClient) close() {
	if c.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}
