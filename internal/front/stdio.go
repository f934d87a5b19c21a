package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// maxStdioMessage bounds one line from a stdio client.
const maxStdioMessage = 64 << 20

// stdioDrain bounds how long the requests still in flight when a stdio
// client closes its input are given to be answered.
const stdioDrain = 10 * time.Second

// ServeStdio serves one client over newline-delimited JSON-RPC on r and w,
// for agents that start MCP servers as processes, until r ends or ctx is
// done. The client may speak either era: initialize opens a session;
// requests carrying a 2026-07-28 _meta are served on their own.
//
// The end of r is how a stdio client says it is done (the spec's stdio
// shutdown): the requests it sent before are still answered, for up to
// stdioDrain, and an open subscriptions/listen ends; then the session
// closes. A client that closes its input right after its last request
// gets that request's answer. When ctx ends (a signal), it returns at once.
func ServeStdio(ctx context.Context, gw *gateway.Gateway, r io.Reader, w io.Writer) error {
	return ServeStdioWith(ctx, gw, r, w, StdioOptions{})
}

// StdioOptions configure ServeStdioWith; the zero value is ServeStdio's.
type StdioOptions struct {
	// Telemetry, when set, counts, times and traces each request, taking
	// the client's trace context from its _meta.
	Telemetry *telemetry.Telemetry
}

// ServeStdioWith is ServeStdio with options.
func ServeStdioWith(ctx context.Context, gw *gateway.Gateway, r io.Reader, w io.Writer, opts StdioOptions) error {
	c := &stdioConn{gw: gw, w: w, inflight: map[string]*inflightRequest{}, tel: opts.Telemetry}
	ctx, cancel := context.WithCancel(ctx)
	defer c.wg.Wait()
	defer func() {
		c.mu.Lock()
		sess := c.sess
		c.mu.Unlock()
		if sess != nil {
			sess.Close()
		}
	}()
	defer cancel()

	// The reads happen on their own goroutine so that ctx (a signal) ends
	// the serving while the client keeps its input open and silent.
	type read struct {
		line []byte
		err  error
	}
	reads := make(chan read)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			select {
			case reads <- read{line, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var rd read
		select {
		case rd = <-reads:
		case <-ctx.Done():
			return nil
		}
		if len(rd.line) > 0 {
			c.handle(ctx, rd.line)
		}
		if rd.err != nil {
			c.drain(ctx, stdioDrain)
			if errors.Is(rd.err, io.EOF) {
				return nil
			}
			return rd.err
		}
	}
}

// drain ends every open listen and waits up to d for the other requests in
// flight to be answered (or ctx to end).
func (c *stdioConn) drain(ctx context.Context, d time.Duration) {
	c.mu.Lock()
	for _, r := range c.inflight {
		if r.listen {
			r.cancel()
		}
	}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		c.requests.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > maxStdioMessage {
			return nil, errors.New("a message longer than 64 MiB")
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

type stdioConn struct {
	gw  *gateway.Gateway
	tel *telemetry.Telemetry
	wmu sync.Mutex
	w   io.Writer
	wg  sync.WaitGroup // every goroutine: requests and the session's pump

	requests sync.WaitGroup // the requests in flight

	mu       sync.Mutex
	sess     *gateway.Session
	inflight map[string]*inflightRequest // by id
}

type inflightRequest struct {
	cancel context.CancelFunc
	listen bool // subscriptions/listen: answered when it is ended
}

// write sends one message as one line. A line break in it (white space
// JSON allows between tokens) would make it several messages to the client:
// wire.OneLine compacts it; what cannot be compacted is not JSON, and is
// not sent.
func (c *stdioConn) write(msg []byte) error {
	msg, err := wire.OneLine(msg)
	if err != nil {
		return fmt.Errorf("stdio front: not sending a message that does not fit on one line: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err = c.w.Write(buf)
	return err
}

// Send implements gateway.Stream: on stdio every message shares one channel.
func (c *stdioConn) Send(msg []byte) error { return c.write(msg) }

func (c *stdioConn) reply(id json.RawMessage, r gateway.Reply) {
	if r.Result == nil && r.Error == nil {
		return
	}
	if r.Error != nil {
		_ = c.write(wire.AppendRawError(nil, id, r.Error))
		return
	}
	_ = c.write(wire.AppendResult(nil, id, r.Result))
}

func (c *stdioConn) handle(ctx context.Context, line []byte) {
	m, err := wire.Parse(line)
	if err != nil {
		code := wire.CodeInvalidRequest // valid JSON, but no JSON-RPC message
		if errors.Is(err, wire.ErrNotJSON) {
			code = wire.CodeParseError
		}
		_ = c.write(wire.AppendError(nil, nil, wire.Errorf(int64(code), "malformed JSON-RPC message: %v", err)))
		return
	}
	stateless := wire.Get(wire.Get(m.Params, "_meta"), gateway.MetaProtocolVersion) != nil
	c.mu.Lock()
	sess := c.sess
	c.mu.Unlock()
	switch {
	case m.IsResponse():
		if sess != nil {
			sess.HandleResponse(m)
		}
	case m.IsNotification():
		if m.Method == "notifications/cancelled" {
			c.mu.Lock()
			r := c.inflight[string(wire.Get(m.Params, "requestId"))]
			c.mu.Unlock()
			if r != nil {
				r.cancel()
			}
		}
		if sess != nil {
			sess.HandleNotification(ctx, m)
		}
	case stateless:
		c.goRequest(ctx, m, telemetry.Request{Era: "stateless", ProtocolVersion: gateway.StatelessVersion}, func(ctx context.Context) gateway.Reply {
			if m.Method == "subscriptions/listen" {
				return c.gw.Listen(ctx, m, c)
			}
			return c.gw.HandleStateless(ctx, m, c)
		})
	case m.Method == "initialize":
		s, res, werr := c.gw.Initialize(m.Params)
		if werr != nil {
			_ = c.write(wire.AppendError(nil, m.ID, werr))
			return
		}
		c.mu.Lock()
		old := c.sess
		c.sess = s
		c.mu.Unlock()
		if old != nil {
			old.Close()
		}
		c.wg.Go(func() { c.pump(ctx, s) })
		_ = c.write(wire.AppendResult(nil, m.ID, res))
	case sess == nil:
		if m.Method == "ping" {
			_ = c.write(wire.AppendResult(nil, m.ID, json.RawMessage(`{}`)))
			return
		}
		_ = c.write(wire.AppendError(nil, m.ID, wire.Errorf(wire.CodeInvalidRequest, "send initialize first (or a %s request with its _meta)", gateway.StatelessVersion)))
	default:
		c.goRequest(ctx, m, telemetry.Request{Era: "session", ProtocolVersion: sess.ProtocolVersion()},
			func(ctx context.Context) gateway.Reply { return sess.Handle(ctx, m, c) })
	}
}

// goRequest answers a request in its own goroutine, so a slow call does not
// hold up the others; notifications/cancelled for it cancels its ctx. tr
// says the request's era and version, for telemetry.
func (c *stdioConn) goRequest(ctx context.Context, m *wire.Message, tr telemetry.Request, handle func(context.Context) gateway.Reply) {
	tr.Method, tr.ID, tr.Params = m.Method, m.ID, m.Params
	ctx, done := c.tel.StartRequest(ctx, tr)
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.inflight[string(m.ID)] = &inflightRequest{cancel: cancel, listen: m.Method == "subscriptions/listen"}
	c.mu.Unlock()
	c.requests.Add(1)
	c.wg.Go(func() {
		defer c.requests.Done()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, string(m.ID))
			c.mu.Unlock()
			cancel()
		}()
		reply := handle(ctx)
		done(reply)
		if ctx.Err() != nil && m.Method != "subscriptions/listen" {
			return // cancelled: the client expects no answer
		}
		c.reply(m.ID, reply)
	})
}

// pump writes the session's server-initiated messages.
func (c *stdioConn) pump(ctx context.Context, s *gateway.Session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Done():
			return
		case msg := <-s.Outbox():
			if c.write(msg) != nil {
				return
			}
		}
	}
}
