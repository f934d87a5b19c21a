package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The streamable HTTP framing: a request is POSTed and its answer comes as
// a JSON body or on its own event stream (resumed with GET and
// Last-Event-ID when the server closes it early); between calls the server
// writes on the GET stream (listen).

// exchange POSTs a request over streamable HTTP and handles the answer: a
// JSON body is delivered at once; an event stream is read until the
// response arrives (on the caller's goroutine: no hand-off to another), then
// read to its end in the background, unless its end came with the
// response. handedOff says that background reader was started: it calls
// cancel when it is done.
func (s *session) exchange(ctx context.Context, cancel context.CancelFunc, id uint64, method string, body []byte, mh *messageHeaders) (handedOff bool, err error) {
	resp, err := s.do(ctx, http.MethodPost, body, "", mh)
	if err != nil {
		return false, s.transportError(method, err)
	}
	if method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			s.setID(sid)
		}
	}
	if err := s.checkStatus(resp, method, id); err != nil {
		return false, err
	}
	ct := mediaType(resp.Header.Get("Content-Type"))
	if method == "initialize" {
		s.jsonAnswers = ct == "application/json"
	}
	switch {
	case ct == "text/event-stream":
		rest := s.readResponseStream(ctx, resp, id, method, mh)
		if rest == nil {
			return false, nil
		}
		if !s.rpc.Go(func() {
			defer cancel()
			drain(rest)
			rest.Close()
		}) {
			rest.Close()
			return false, nil
		}
		return true, nil
	case ct == "application/json":
		defer resp.Body.Close()
		data, err := readBody(resp, s.h.opts.MaxResponseBytes)
		if err != nil {
			return false, s.readError(method, err)
		}
		var msg wire.Message
		if err := wire.ParseInto(&msg, data); err != nil {
			return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with JSON that is not a JSON-RPC message (%v): %s", s.name(), method, err, preview(data))
		}
		if got := s.rpc.Dispatch(&msg); got != id {
			return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with a JSON body that is not its response: %s", s.name(), method, preview(data))
		}
		return false, nil
	case resp.StatusCode == http.StatusAccepted:
		resp.Body.Close()
		return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered the request %s with 202 Accepted and no response", s.name(), method)
	default:
		resp.Body.Close()
		return false, newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered %s with Content-Type %q; want application/json or text/event-stream", s.name(), method, ct)
	}
}

// readResponseStream reads a call's event stream until its response
// arrives, and returns the body left to read then (nil when the stream
// ended with it or without it: the call's outcome is then delivered, or ctx
// ended). A
// stream that ends first is resumed with GET and Last-Event-ID, as
// 2025-11-25 servers may close it and let the client poll. ctx ends when
// the caller gives up before the answer or the session goes down.
func (s *session) readResponseStream(ctx context.Context, resp *http.Response, id uint64, method string, mh *messageHeaders) (rest io.ReadCloser) {
	sr := getResponseReader(resp.Body, s.h.opts.MaxResponseBytes)
	defer putResponseReader(sr)
	fruitless := 0
	for {
		answered, err := s.consume(sr, id)
		if answered && sr.ended() {
			// The server ended the stream as it sent the response (most
			// do, and the end is often in the same read): the connection
			// is back in the client's pool, nothing is left to drain.
			resp.Body.Close()
			return nil
		}
		if answered {
			return resp.Body
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			return nil // the call side reports an abandoned call
		}
		if sr.received {
			fruitless = 0
		} else {
			fruitless++
		}
		if sr.lastID == "" || fruitless > resumeAttempts {
			s.rpc.Resolve(id, wire.Response{}, newRemoteError([]error{ErrRemoteProtocol},
				"mcp server %q closed the response stream of %s before answering (%v)", s.name(), method, streamEnd(err)))
			return nil
		}
		if !sleep(ctx, retryDelay(sr.retry)) {
			return nil
		}
		resp, err = s.do(ctx, http.MethodGet, nil, sr.lastID, mh)
		if err != nil {
			if ctx.Err() == nil {
				s.rpc.Resolve(id, wire.Response{}, s.transportError(method, err))
			}
			return nil
		}
		if err := s.checkStatus(resp, method, 0); err != nil {
			if errors.Is(err, errSessionExpired) {
				err = s.endError(method)
			}
			s.rpc.Resolve(id, wire.Response{}, fmt.Errorf("mcp server %q: resuming the response stream of %s: %w", s.name(), method, err))
			return nil
		}
		if ct := mediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
			resp.Body.Close()
			s.rpc.Resolve(id, wire.Response{}, newRemoteError([]error{ErrRemoteProtocol},
				"mcp server %q resumed the response stream of %s with Content-Type %q", s.name(), method, ct))
			return nil
		}
		sr.reset(resp.Body)
	}
}

func streamEnd(err error) string {
	if err == nil || err == io.EOF {
		return "end of stream"
	}
	return err.Error()
}

func (s *session) readError(method string, err error) error {
	if errors.Is(err, errTooLarge) {
		return s.rpc.TooLarge(method)
	}
	if isContextError(err) {
		return err
	}
	return fmt.Errorf("mcp server %q: reading the answer to %s: %w", s.name(), method, err)
}

// opensStream reports whether sending method makes a session open its GET
// stream (see HTTPOptions.ListenAtStart): the server may then write to the
// client between calls.
func opensStream(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"resources/subscribe", "logging/setLevel", "notifications/roots/list_changed":
		return true
	}
	return false
}

// startListening opens the GET stream of streamable HTTP, unless it is open
// already or never is (legacy transport, NoListen, the session is down). It
// waits, within ctx and at most listenReadyWait, until the server has
// answered it, so that what the server sends next is not lost; a server
// slow to answer does not hold the caller longer.
func (s *session) startListening(ctx context.Context) {
	if s.sse || s.h.opts.NoListen {
		return
	}
	s.openStream(ctx, s.listen)
}

// openStream runs the session's one listening stream (run, which closes
// ready once the server has answered it) unless it runs already or the
// session is down, and waits for ready within ctx and at most
// listenReadyWait.
func (s *session) openStream(ctx context.Context, run func(ready chan<- struct{})) {
	s.mu.Lock()
	ready := s.listenReady
	if ready == nil {
		if s.end != nil {
			s.mu.Unlock()
			return
		}
		ready = make(chan struct{})
		s.listenReady = ready
		if !s.rpc.Go(func() { run(ready) }) {
			close(ready) // the session went down meanwhile
		}
	}
	s.mu.Unlock()
	select {
	case <-ready:
		return
	default:
	}
	t := time.NewTimer(listenReadyWait)
	select {
	case <-ready:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
}

// listen keeps the GET stream of streamable HTTP open for the server's
// requests and notifications between calls, reconnecting (after
// Last-Event-ID, when the server gives event ids) until the session ends.
// A server that offers no GET stream (405) is left alone.
//
// ready is closed once the first attempt has been answered (or has failed),
// so that Start returns with the stream open and a request the server sends
// at once is not lost.
func (s *session) listen(ready chan<- struct{}) {
	ctx := s.listenCtx
	lastID, retry, backoff := "", time.Duration(0), defaultRetry
	for {
		attempt, cancel := context.WithCancel(ctx)
		timer := time.AfterFunc(s.h.opts.Timeout, cancel) // bounds the wait for the answer's headers
		resp, err := s.do(attempt, http.MethodGet, nil, lastID, nil)
		timer.Stop()
		if ready != nil {
			close(ready)
			ready = nil
		}
		delay := backoff
		switch {
		case ctx.Err() != nil:
			cancel()
			if err == nil {
				resp.Body.Close()
			}
			if ready != nil {
				close(ready)
			}
			return
		case err != nil:
			s.h.log.Debug(fmt.Sprintf("mcp server %q: opening the GET stream failed", s.name()), "err", netError(err))
		case resp.StatusCode == http.StatusMethodNotAllowed:
			resp.Body.Close()
			cancel()
			s.h.log.Debug(fmt.Sprintf("mcp server %q offers no GET stream", s.name()))
			return
		case resp.StatusCode < 200 || resp.StatusCode > 299:
			err := s.checkStatus(resp, "the GET stream", 0)
			cancel()
			if errors.Is(err, errSessionExpired) {
				return
			}
			if errors.Is(err, wire.ErrCredentials) {
				s.h.log.Warn(err.Error() + "; its GET stream stays closed")
				return
			}
			s.h.log.Debug(fmt.Sprintf("mcp server %q: opening the GET stream failed", s.name()), "err", err)
		case mediaType(resp.Header.Get("Content-Type")) != "text/event-stream":
			resp.Body.Close()
			cancel()
			s.h.log.Debug(fmt.Sprintf("mcp server %q answered its GET stream with Content-Type %q; not listening", s.name(), resp.Header.Get("Content-Type")))
			return
		default:
			sr := newSSEReader(resp.Body, s.h.opts.MaxResponseBytes, false)
			sr.lastID = lastID
			s.consume(sr, 0) //nolint:errcheck // any end of the stream means reconnect
			resp.Body.Close()
			lastID = sr.lastID
			if sr.retry > 0 {
				retry = sr.retry
			}
			if sr.received {
				backoff, delay = defaultRetry, retryDelay(retry)
			}
		}
		cancel()
		if !sleep(ctx, delay) {
			return
		}
		backoff = min(backoff*2, listenRetryMax)
	}
}

func retryDelay(retry time.Duration) time.Duration {
	if retry <= 0 {
		return defaultRetry
	}
	return min(retry, listenRetryMax)
}

// sleep waits d unless ctx ends first; false if it did.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// drain reads what is left of a response stream that has given its answer,
// briefly, so the connection can carry the next request instead of being
// dropped (the server ends the stream after the response).
func drain(body io.ReadCloser) {
	t := time.AfterFunc(time.Second, func() { body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	t.Stop()
}
