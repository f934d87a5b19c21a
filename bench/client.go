package main

// The load client: a lean hand-written streamable-HTTP JSON-RPC client. Each
// worker owns one keep-alive HTTP/1.1 connection, writes pre-rendered request
// bytes and parses the response itself (Content-Length or chunked body; an
// application/json body or a text/event-stream of events), so the client's
// own cost stays small beside the gateway's. It is not a general HTTP client:
// it speaks to the gateway and the SDK's server on 127.0.0.1, nothing else.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"
)

// Protocol eras the client speaks.
const (
	eraLegacy = "2025-11-25" // initialize, Mcp-Session-Id
	eraModern = "2026-07-28" // sessionless: version in each request's _meta and header
)

// endpoint is an MCP endpoint over plain HTTP/1.1.
type endpoint struct {
	addr  string // host:port, 127.0.0.1 only
	path  string // "/mcp"
	token string // bearer token; "" sends none
}

// httpConn is one keep-alive connection to an endpoint. Not safe for
// concurrent use: each worker owns one.
type httpConn struct {
	ep   *endpoint
	nc   net.Conn
	br   *bufio.Reader
	req  []byte // request being written, reused
	body []byte // last response body, reused: valid until the next request
}

// httpResponse is what the client keeps of a response. body aliases the
// connection's buffer.
type httpResponse struct {
	status    int
	mediaType string // Content-Type without parameters
	sessionID string
	body      []byte
}

func dial(ep *endpoint, deadline time.Time) (*httpConn, error) {
	nc, err := net.DialTimeout("tcp", ep.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if err := nc.SetDeadline(deadline); err != nil {
		nc.Close()
		return nil, err
	}
	return &httpConn{ep: ep, nc: nc, br: bufio.NewReaderSize(nc, 32<<10), req: make([]byte, 0, 1024)}, nil
}

func (c *httpConn) Close() error { return c.nc.Close() }

// do sends one request with extra header lines (each ending in "\r\n") and
// reads the whole response.
func (c *httpConn) do(method, extraHeaders string, body []byte) (httpResponse, error) {
	if err := c.send(method, extraHeaders, body); err != nil {
		return httpResponse{}, err
	}
	return c.readResponse(method == "HEAD")
}

// send writes one request and reads nothing.
func (c *httpConn) send(method, extraHeaders string, body []byte) error {
	b := c.req[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, c.ep.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.ep.addr...)
	b = append(b, "\r\nAccept: application/json, text/event-stream\r\n"...)
	if c.ep.token != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, c.ep.token...)
		b = append(b, "\r\n"...)
	}
	b = append(b, extraHeaders...)
	if body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	c.req = b
	_, err := c.nc.Write(b)
	return err
}

func (c *httpConn) readResponse(head bool) (httpResponse, error) {
	var r httpResponse
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return r, fmt.Errorf("reading the status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return r, fmt.Errorf("malformed status line %q", line)
	}
	if r.status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return r, fmt.Errorf("malformed status line %q", line)
	}
	contentLength, chunked, closing := -1, false, false
	for range 100 {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			return r, fmt.Errorf("reading headers: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, fmt.Errorf("malformed header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			if contentLength, err = strconv.Atoi(string(value)); err != nil || contentLength < 0 {
				return r, fmt.Errorf("malformed Content-Length %q", value)
			}
		case asciiEqualFold(name, "transfer-encoding"):
			chunked = asciiEqualFold(value, "chunked")
		case asciiEqualFold(name, "content-type"):
			mt, _, _ := bytes.Cut(value, []byte(";"))
			r.mediaType = string(bytes.TrimSpace(mt))
		case asciiEqualFold(name, "mcp-session-id"):
			r.sessionID = string(value)
		case asciiEqualFold(name, "connection"):
			closing = asciiEqualFold(value, "close")
		}
	}
	c.body = c.body[:0]
	switch {
	case head || r.status == 204 || r.status == 304 || r.status < 200:
	case chunked:
		err = c.readChunked()
	case contentLength >= 0:
		if cap(c.body) < contentLength {
			c.body = make([]byte, contentLength)
		}
		c.body = c.body[:contentLength]
		_, err = io.ReadFull(c.br, c.body)
	case closing:
		c.body, err = io.ReadAll(io.LimitReader(c.br, 64<<20))
	default:
		err = errors.New("response has neither Content-Length nor chunked encoding")
	}
	if err != nil {
		return r, fmt.Errorf("reading the body of a %d response: %w", r.status, err)
	}
	r.body = c.body
	if closing {
		c.nc.Close() // the next request on this connection fails loudly
	}
	return r, nil
}

func (c *httpConn) readChunked() error {
	for range 1 << 20 {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(size)), 16, 31)
		if err != nil {
			return fmt.Errorf("malformed chunk size %q", line)
		}
		if n == 0 {
			for range 100 { // trailers, then the blank line
				line, err = c.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
			return errors.New("too many trailer lines")
		}
		start := len(c.body)
		c.body = slices.Grow(c.body, int(n))[:start+int(n)]
		if _, err := io.ReadFull(c.br, c.body[start:]); err != nil {
			return err
		}
		if _, err := c.br.Discard(2); err != nil {
			return err
		}
	}
	return errors.New("too many chunks")
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// rpcResponse is the envelope of a JSON-RPC response.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// rpcMessage returns the JSON-RPC response carried by an HTTP response: the
// body itself for application/json, the first event carrying a response for
// text/event-stream (notifications before it are skipped).
func rpcMessage(r httpResponse) (*rpcResponse, error) {
	var msg rpcResponse
	switch r.mediaType {
	case "application/json":
		if err := json.Unmarshal(r.body, &msg); err != nil {
			return nil, fmt.Errorf("HTTP %d: malformed JSON body %.200q: %w", r.status, r.body, err)
		}
		return &msg, nil
	case "text/event-stream":
		rest := r.body
		for len(rest) > 0 {
			var event []byte
			event, rest = nextEvent(rest)
			data := eventData(event)
			if len(data) == 0 {
				continue
			}
			msg = rpcResponse{}
			if err := json.Unmarshal(data, &msg); err != nil {
				return nil, fmt.Errorf("HTTP %d: malformed event data %.200q: %w", r.status, data, err)
			}
			if msg.Method == "" {
				return &msg, nil
			}
		}
		return nil, fmt.Errorf("HTTP %d: the event stream ended without a response: %.200q", r.status, r.body)
	}
	return nil, fmt.Errorf("HTTP %d with Content-Type %q: %.200q", r.status, r.mediaType, r.body)
}

// nextEvent splits one SSE event (up to a blank line) off b.
func nextEvent(b []byte) (event, rest []byte) {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return b, nil
		}
		line := b[i : i+j]
		if len(bytes.TrimRight(line, "\r")) == 0 {
			return b[:i], b[i+j+1:]
		}
		i += j + 1
	}
	return b, nil
}

// eventData joins the data lines of an SSE event.
func eventData(event []byte) []byte {
	var data []byte
	lines := 0
	for len(event) > 0 {
		line, rest, _ := bytes.Cut(event, []byte("\n"))
		event = rest
		line = bytes.TrimRight(line, "\r")
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		if lines > 0 {
			data = append(data, '\n')
		}
		data = append(data, v...)
		lines++
	}
	return data
}
