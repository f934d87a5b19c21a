package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// ErrInvalidMessage: a message could not be sent as it is (for stdio: it
// holds a line break and is not valid JSON); it was not sent, and the
// connection is unaffected. A [Sender] returns an error wrapping it.
var ErrInvalidMessage = errors.New("message cannot be sent as one line")

// ErrResponseTooLarge: a response was longer than the connection's limit
// for one message; the call it answers failed.
var ErrResponseTooLarge = errors.New("mcp server response over the size limit")

// errServerCancelled ends the handler of a request the server cancelled.
var errServerCancelled = errors.New("the server cancelled its request")

// Handler receives what a server sends unprompted.
type Handler interface {
	// Notification receives a notification (notifications/cancelled for a
	// request being served excepted). It runs on the reader of the stream
	// the notification came on, so it must not block.
	Notification(method string, params json.RawMessage)
	// Request answers a server-to-client request on its own goroutine; ctx
	// ends when the server cancels the request or the connection ends.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error)
}

// Hooks is a [Handler] made of two functions. A nil OnNotification drops
// notifications; a nil OnRequest answers ping with {} and anything else
// with method-not-found.
type Hooks struct {
	Server         string // named in the method-not-found error
	OnNotification func(method string, params json.RawMessage)
	OnRequest      func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error)
}

// Notification implements [Handler].
func (h Hooks) Notification(method string, params json.RawMessage) {
	if h.OnNotification != nil {
		h.OnNotification(method, params)
	}
}

// Request implements [Handler].
func (h Hooks) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *wire.Error) {
	if h.OnRequest != nil {
		return h.OnRequest(ctx, method, params)
	}
	if method == "ping" {
		return json.RawMessage(`{}`), nil
	}
	return nil, wire.Errorf(wire.CodeMethodNotFound, "the gateway does not serve %s requests from mcp server %q", method, h.Server)
}

// A Sender writes one whole message to the server: a notification, or the
// answer to one of its requests. what names it for errors and headers: the
// notification's method, or "the answer to <method>". ctx is the
// connection's; a Sender bounds its own wait where its transport needs it.
type Sender interface {
	Send(ctx context.Context, what string, msg []byte) error
}

// A Reader reads the messages of one stream from the server, one at a time:
// Read returns the next, valid until the next Read (its raw fields stay
// valid for good), or why the stream ended.
type Reader interface {
	Read() (*wire.Message, error)
}

// Conn correlates the messages of one connection to a server. It is safe
// for concurrent use.
type Conn struct {
	server  string
	log     *slog.Logger
	handler Handler
	out     Sender
	ctx     context.Context // the handlers' and background sends'; its owner ends it
	limit   int             // the longest message accepted from the server, in bytes

	mu       sync.Mutex
	ids      idSource
	pending  map[uint64]*Call
	incoming map[string]context.CancelCauseFunc // server-to-client requests being served, by raw id
	refused  bool                               // no new calls or background work
	failed   bool                               // the pending calls were failed; none is waited for any more
	idle     sync.Cond                          // on mu: pending shrank or the calls were failed
	wg       sync.WaitGroup
}

// New returns the Conn of one connection to the named server. ctx bounds
// its handlers and background sends: its owner ends it when the connection
// goes down. limit is the longest message the transport accepts from the
// server (see Oversize).
func New(ctx context.Context, server string, log *slog.Logger, handler Handler, out Sender, limit int) *Conn {
	c := &Conn{
		limit:    limit,
		server:   server,
		log:      log,
		handler:  handler,
		out:      out,
		ctx:      ctx,
		ids:      newIDSource(),
		pending:  make(map[uint64]*Call),
		incoming: make(map[string]context.CancelCauseFunc),
	}
	c.idle.L = &c.mu
	return c
}

// Call is a request waiting for its response. It belongs to the caller of
// Begin until one of Wait, Abandon, Take or Forget, which end it.
type Call struct {
	conn   *Conn
	id     uint64
	method string
	ch     chan Outcome // buffered: one outcome
}

// Outcome is how a call ended: the server's response, or the error that
// ended it instead.
type Outcome struct {
	Response wire.Response
	Err      error
}

// callPool recycles Calls whose channel is known to be empty and unreferenced.
var callPool = sync.Pool{New: func() any { return &Call{ch: make(chan Outcome, 1)} }}

// ID is the request id to send.
func (k *Call) ID() uint64 { return k.id }

// Begin registers a call of method and draws its id; false once the
// connection refuses calls (see Refuse).
func (c *Conn) Begin(method string) (*Call, bool) {
	k := callPool.Get().(*Call)
	c.mu.Lock()
	if c.refused || c.failed {
		c.mu.Unlock()
		callPool.Put(k)
		return nil, false
	}
	k.conn, k.method = c, method
	k.id = c.ids.next(c.isPending)
	c.pending[k.id] = k
	c.mu.Unlock()
	return k, true
}

// isPending reports whether id is a pending call's; c.mu is held.
func (c *Conn) isPending(id uint64) bool {
	_, ok := c.pending[id]
	return ok
}

// Wait waits for the call's outcome; when ctx ends first it abandons the
// call (see Abandon). sent says the server may have seen the request.
func (k *Call) Wait(ctx context.Context, sent bool) (wire.Response, error) {
	select {
	case r := <-k.ch:
		k.release()
		return r.Response, r.Err
	case <-ctx.Done():
		return k.Abandon(ctx, sent)
	}
}

// Abandon ends a call whose ctx is done. An outcome already delivered is
// returned; otherwise, when sent says the server may have seen the request,
// it is told the caller gave up (not for initialize, which a client must
// not cancel), and Abandon returns ctx.Err().
func (k *Call) Abandon(ctx context.Context, sent bool) (wire.Response, error) {
	c, id, method := k.conn, k.id, k.method // k is released by Take
	if r, ok := k.Take(); ok {
		return r.Response, r.Err
	}
	if sent && method != "initialize" {
		c.sendCancelled(id, context.Cause(ctx).Error())
	}
	return wire.Response{}, ctx.Err()
}

// Take ends the call, returning its outcome if one was delivered (or is
// being delivered) already.
func (k *Call) Take() (Outcome, bool) {
	if k.conn.forget(k) {
		k.release()
		return Outcome{}, false
	}
	r := <-k.ch // delivered or about to be
	k.release()
	return r, true
}

// Forget ends a call that was never sent.
func (k *Call) Forget() { k.Take() }

func (k *Call) release() {
	k.conn, k.method = nil, ""
	callPool.Put(k)
}

// forget removes k from the pending calls; false when it was not there any
// more (its outcome is delivered, or being delivered). k's id alone would
// not do: once k is resolved, its id may be drawn again for another call.
func (c *Conn) forget(k *Call) bool {
	c.mu.Lock()
	ok := c.pending[k.id] == k
	if ok {
		delete(c.pending, k.id)
		c.idle.Broadcast()
	}
	c.mu.Unlock()
	return ok
}

// Resolve delivers an outcome to the pending call id: the server's response,
// or err when the transport failed that one call. False if no such call is
// waiting (most often the late answer to a call whose caller gave up).
func (c *Conn) Resolve(id uint64, resp wire.Response, err error) bool {
	c.mu.Lock()
	k := c.pending[id]
	delete(c.pending, id)
	c.idle.Broadcast()
	c.mu.Unlock()
	if k == nil {
		return false
	}
	k.ch <- Outcome{Response: resp, Err: err}
	return true
}

// method returns the method of the pending call id, or "".
func (c *Conn) method(id uint64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.pending[id]; k != nil {
		return k.method
	}
	return ""
}

// Oversize handles a message longer than the limit that the transport could
// skip: it fails the pending call id, which that message answers, and tells
// the server to stop working on it. False when no such call is pending.
func (c *Conn) Oversize(id uint64) bool {
	method := c.method(id)
	if id == 0 || method == "" {
		c.log.Warn(fmt.Sprintf("mcp server %q sent a message longer than %d bytes that answers no call; ignored", c.server, c.limit))
		return false
	}
	if c.Resolve(id, wire.Response{}, c.TooLarge(method)) {
		c.sendCancelled(id, "the response is over the gateway's size limit")
	}
	return true
}

// TooLarge is the error of a call of method whose response was longer than
// the limit; errors.Is finds ErrResponseTooLarge in it.
func (c *Conn) TooLarge(method string) error {
	return &tooLargeError{fmt.Sprintf("mcp server %q answered %s with more than %d bytes, the gateway's limit for one response; the call failed", c.server, method, c.limit)}
}

type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string        { return e.msg }
func (e *tooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

// InFlight returns the ids of the pending calls a server may be told were
// cancelled (initialize excepted).
func (c *Conn) InFlight() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []uint64
	for id, k := range c.pending {
		if k.method != "initialize" {
			ids = append(ids, id)
		}
	}
	return ids
}

// Serve reads r until it ends, dispatching each message. With awaited set
// (a call's own response stream) it returns as soon as that call's response
// has been delivered, answered true.
func (c *Conn) Serve(r Reader, awaited uint64) (answered bool, err error) {
	for {
		msg, err := r.Read()
		if err != nil {
			return false, err
		}
		if got := c.Dispatch(msg); awaited != 0 && got == awaited {
			return true, nil
		}
	}
}

// Dispatch handles one message from the server and returns the id of the
// call it answered, if any. msg may be reused once Dispatch returns.
func (c *Conn) Dispatch(msg *wire.Message) (answered uint64) {
	switch {
	case msg.IsResponse():
		return c.deliver(msg)
	case msg.IsRequest():
		c.serve(*msg)
	default:
		if msg.Method == "notifications/cancelled" && c.cancelIncoming(msg.Params) {
			return 0
		}
		c.handler.Notification(msg.Method, msg.Params)
	}
	return 0
}

func (c *Conn) deliver(msg *wire.Message) uint64 {
	id, ok := ParseID(msg.ID)
	var resp wire.Response
	if msg.Error != nil {
		resp.Error = msg.Error
	} else {
		resp.Result = msg.Result
	}
	if !ok || !c.Resolve(id, resp, nil) {
		// Most often the late answer to a call whose caller gave up.
		level := slog.LevelDebug
		if !ok {
			level = slog.LevelWarn
		}
		c.log.Log(context.Background(), level, fmt.Sprintf("mcp server %q answered an unknown request id; ignored", c.server), "id", string(msg.ID))
		return 0
	}
	return id
}

// serve answers a server-to-client request on its own goroutine, so that
// the reader never waits on a handler or on the Sender.
func (c *Conn) serve(msg wire.Message) {
	key := string(msg.ID)
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused {
		cancel(nil)
		return
	}
	c.incoming[key] = cancel
	c.wg.Go(func() {
		result, rpcErr := c.handler.Request(ctx, msg.Method, msg.Params)
		c.mu.Lock()
		delete(c.incoming, key)
		c.mu.Unlock()
		cancelled := errors.Is(context.Cause(ctx), errServerCancelled)
		cancel(nil)
		if cancelled || c.ctx.Err() != nil {
			return // a cancelled request gets no response
		}
		c.answer(msg, result, rpcErr)
	})
}

func (c *Conn) answer(msg wire.Message, result json.RawMessage, rpcErr *wire.Error) {
	var body []byte
	if rpcErr != nil {
		body = wire.AppendError(nil, msg.ID, rpcErr)
	} else {
		body = wire.AppendResult(nil, msg.ID, result)
	}
	what := "the answer to " + msg.Method
	err := c.out.Send(c.ctx, what, body)
	if errors.Is(err, ErrInvalidMessage) {
		c.log.Warn(fmt.Sprintf("mcp server %q: the answer to its %s request is not valid JSON; sending an error instead", c.server, msg.Method), "err", err)
		// The gateway's own error: one line (its id was read from one).
		body = wire.AppendError(body[:0], msg.ID, wire.Errorf(wire.CodeInternalError, "the gateway could not send the answer to %s as one JSON-RPC message", msg.Method))
		err = c.out.Send(c.ctx, what, body)
	}
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn(fmt.Sprintf("mcp server %q: sending the answer to its %s request failed", c.server, msg.Method), "err", err)
	}
}

// cancelIncoming ends the handler of a server-to-client request the server
// has cancelled; false when no such request is being served.
func (c *Conn) cancelIncoming(params json.RawMessage) bool {
	start, end, ok, err := wire.Member(params, "requestId")
	if err != nil || !ok {
		return false
	}
	c.mu.Lock()
	cancel := c.incoming[string(bytes.TrimSpace(params[start:end]))]
	c.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errServerCancelled)
	return true
}

// sendCancelled tells the server, in the background, that the gateway no
// longer waits for its answer to the request id.
func (c *Conn) sendCancelled(id uint64, reason string) {
	c.Go(func() {
		if err := c.out.Send(c.ctx, "notifications/cancelled", Cancelled(id, reason)); err != nil && c.ctx.Err() == nil {
			c.log.Debug(fmt.Sprintf("mcp server %q: sending notifications/cancelled failed", c.server), "err", err)
		}
	})
}

// Cancelled is the notifications/cancelled message for the request id.
func Cancelled(id uint64, reason string) []byte {
	params := make([]byte, 0, 64+len(reason))
	params = append(params, `{"requestId":`...)
	params = strconv.AppendUint(params, id, 10)
	params = append(params, `,"reason":`...)
	params = wire.AppendString(params, reason)
	params = append(params, '}')
	return wire.AppendNotification(make([]byte, 0, 64+len(params)), "notifications/cancelled", params)
}

// ParseID reads one of the gateway's integer ids, also when a server quoted it.
func ParseID(raw json.RawMessage) (uint64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if len(raw) == 0 {
		return 0, false
	}
	var id uint64
	for _, c := range raw {
		if c < '0' || c > '9' || id > (math.MaxUint64-9)/10 {
			return 0, false
		}
		id = id*10 + uint64(c-'0')
	}
	return id, true
}

// Go runs f on a goroutine the Conn owns (see Wait), unless the connection
// refuses new work; false then.
func (c *Conn) Go(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused {
		return false
	}
	c.wg.Go(f)
	return true
}

// Refuse makes the connection take no new calls, requests of the server or
// background work; the calls pending keep waiting (see FailPending). It
// reports whether the connection was accepting until then.
func (c *Conn) Refuse() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := !c.refused
	c.refused = true
	return was
}

// FailPending refuses new calls (see Refuse) and fails every pending call
// with errFor(its method). Only the first call fails anything.
func (c *Conn) FailPending(errFor func(method string) error) {
	c.mu.Lock()
	c.refused = true
	if c.failed {
		c.mu.Unlock()
		return
	}
	c.failed = true
	pending := c.pending
	c.pending = make(map[uint64]*Call)
	c.idle.Broadcast()
	c.mu.Unlock()
	for _, k := range pending {
		k.ch <- Outcome{Err: errFor(k.method)}
	}
}

// WaitIdle waits until no call is pending, or the pending calls were failed.
func (c *Conn) WaitIdle() {
	c.mu.Lock()
	for len(c.pending) > 0 && !c.failed {
		c.idle.Wait()
	}
	c.mu.Unlock()
}

// Wait waits for every goroutine the Conn owns: handlers, background sends
// and what the transport started with Go. End the Conn's context first.
func (c *Conn) Wait() { c.wg.Wait() }
