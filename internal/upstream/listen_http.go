package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// A remote server of the 2026-07-28 era has no GET stream: what it says
// between calls (list changes, resource updates, log messages) comes on a
// subscriptions/listen stream (SEP-2575), a request whose response stream
// stays open. The session keeps one open from the moment it first needs it
// (the same methods that open a session-era GET stream, see opensStream),
// reopens it with backoff when it ends, and reopens it at once with a new
// filter when the resources subscribed to change: resources/subscribe and
// resources/unsubscribe are not part of that era, so the session answers
// them itself by changing the stream's resourceSubscriptions. Its
// notifications go to OnNotification as those of any stream do.

const (
	metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
	codeMethodNotFound = -32601
)

// listenFilter is the notifications filter of subscriptions/listen.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

func (f listenFilter) empty() bool {
	return !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0
}

// remoteListen is the state of an HTTP upstream's subscriptions/listen
// stream, kept across its attempts.
type remoteListen struct {
	mu      sync.Mutex
	uris    map[string]struct{} // the resources subscribed to
	version uint64              // bumped by every change of uris
	attempt uint64              // the filter version of the attempt in flight
	reopen  context.CancelFunc  // ends the attempt in flight, to reopen it
	kick    chan struct{}       // a filter change, for a loop that waits
	// settled is the filter version the latest acknowledgement (or failed
	// attempt) answered; agreed what that acknowledgement granted; failure
	// why that attempt failed, "" when it was acknowledged.
	settled uint64
	agreed  listenFilter
	failure string
	wake    chan struct{} // closed and replaced when settled changes
	open    bool          // acknowledged and not ended since
	// isDown: the stream's end was logged; its next acknowledgement is.
	isDown bool
	log    func(msg string)
}

func (l *remoteListen) init() {
	l.uris = map[string]struct{}{}
	l.kick = make(chan struct{}, 1)
	l.wake = make(chan struct{})
	l.settled = ^uint64(0) // nothing settled yet
}

// begin starts an attempt: it returns the filter to ask for and its version.
func (l *remoteListen) begin(cancel context.CancelFunc) (listenFilter, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := listenFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
	for uri := range l.uris {
		f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
	}
	slices.Sort(f.ResourceSubscriptions)
	l.attempt, l.reopen = l.version, cancel
	select {
	case <-l.kick: // a change this attempt already has
	default:
	}
	return f, l.version
}

// settle records the outcome of the attempt of version v (an
// acknowledgement when failure is "") and wakes whoever waits for it.
func (l *remoteListen) settle(v uint64, agreed listenFilter, failure string) {
	l.mu.Lock()
	l.settled, l.agreed, l.failure = v, agreed, failure
	l.open = failure == ""
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// acknowledged handles notifications/subscriptions/acknowledged, the first
// message of the stream.
func (l *remoteListen) acknowledged(params json.RawMessage) {
	var ack struct {
		Notifications listenFilter `json:"notifications"`
	}
	_ = json.Unmarshal(params, &ack)
	l.mu.Lock()
	v, wasDown := l.attempt, l.isDown
	l.isDown = false
	l.mu.Unlock()
	l.settle(v, ack.Notifications, "")
	if wasDown && l.log != nil {
		l.log("its subscriptions/listen stream is open again")
	}
}

// change adds or removes a resource subscription and has the stream
// reopened with it; it returns the new filter version.
func (l *remoteListen) change(uri string, add bool) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, had := l.uris[uri]
	if had == add {
		return l.version
	}
	if add {
		l.uris[uri] = struct{}{}
	} else {
		delete(l.uris, uri)
	}
	l.version++
	if l.reopen != nil {
		l.reopen()
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return l.version
}

// await waits until an attempt with filter version v or later has settled,
// within ctx and at most wait; it reports that attempt's outcome.
func (l *remoteListen) await(ctx context.Context, v uint64, wait time.Duration) (agreed listenFilter, failure string, ok bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		l.mu.Lock()
		if l.settled != ^uint64(0) && l.settled >= v {
			agreed, failure = l.agreed, l.failure
			l.mu.Unlock()
			return agreed, failure, true
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-t.C:
			return listenFilter{}, "", false
		case <-ctx.Done():
			return listenFilter{}, "", false
		}
	}
}

// startStatelessListen opens the session's subscriptions/listen stream
// unless it is open already or never is (NoListen, the session is down),
// and waits, within ctx and at most listenReadyWait, for its first
// acknowledgement, so that a change right after the caller's request is not
// missed.
func (s *session) startStatelessListen(ctx context.Context) {
	if s.h.opts.NoListen {
		return
	}
	s.openStream(ctx, s.listenStateless)
}

// listenStateless keeps the subscriptions/listen stream open until the
// session ends. Its state changes are logged, not its attempts: once when
// it cannot be opened or ends, once when it is open again (acknowledged).
func (s *session) listenStateless(ready chan<- struct{}) {
	l := &s.h.listen
	ctx := s.listenCtx
	backoff := defaultRetry
	for {
		attempt, cancel := context.WithCancel(ctx)
		filter, v := l.begin(cancel)
		params, _ := json.Marshal(map[string]any{"notifications": filter})
		if ready != nil {
			r := ready
			if !s.rpc.Go(func() { s.markReady(attempt, v, r) }) {
				close(r)
			}
			ready = nil
		}
		resp, err := s.call(attempt, "subscriptions/listen", params)
		reopened := attempt.Err() != nil && ctx.Err() == nil
		cancel()
		if ctx.Err() != nil {
			l.settle(v, listenFilter{}, "the session ended")
			return
		}
		if reopened { // the filter changed: reopen at once, quietly
			l.settle(v, listenFilter{}, "reopened with another filter")
			continue
		}
		acked := l.wasOpen(v)
		idle := false // nothing to listen for until the filter changes
		var failure string
		switch {
		case err != nil:
			failure = unprefixed(err, s.name())
		case resp.Error != nil:
			e := wire.DecodeError(resp.Error)
			failure = fmt.Sprintf("it refused subscriptions/listen: %v", e)
			idle = e.Code == codeMethodNotFound
		default:
			// A graceful end. A server that agreed to nothing (or does
			// not acknowledge) ends at once: nothing to reopen it for.
			l.mu.Lock()
			idle = !acked || l.agreed.empty()
			l.mu.Unlock()
			failure = "it ended the stream"
		}
		l.settle(v, listenFilter{}, failure)
		l.down(s, failure, acked, idle)
		delay := backoff
		switch {
		case idle:
			delay = 0 // until the filter changes
		case acked:
			delay, backoff = defaultRetry, defaultRetry
		}
		kicked, ok := s.waitReopen(ctx, delay)
		if !ok {
			return
		}
		if !idle && !acked && !kicked {
			backoff = min(backoff*2, listenRetryMax)
		}
	}
}

// down logs that the stream is not open, once until it is open again.
func (l *remoteListen) down(s *session, failure string, acked, idle bool) {
	l.mu.Lock()
	logged := l.isDown
	l.isDown = true
	l.mu.Unlock()
	if logged {
		return
	}
	switch {
	case idle:
		s.h.log.Info(fmt.Sprintf("mcp server %q sends no change notifications on subscriptions/listen (%s); its lists are current as of their last listing", s.name(), failure))
	case acked:
		s.h.log.Info(fmt.Sprintf("mcp server %q: its subscriptions/listen stream ended (%s); reopening it with backoff", s.name(), failure))
	default:
		s.h.log.Warn(fmt.Sprintf("mcp server %q: cannot open its subscriptions/listen stream (%s); retrying with backoff, its list changes, resource updates and log messages are missed meanwhile", s.name(), failure))
	}
}

// markReady closes ready once the first attempt has settled or ended.
func (s *session) markReady(attempt context.Context, v uint64, ready chan<- struct{}) {
	s.h.listen.await(attempt, v, s.h.opts.Timeout)
	close(ready)
}

// wasOpen reports whether the attempt of version v was acknowledged.
func (l *remoteListen) wasOpen(v uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open && l.settled == v
}

// waitReopen waits d before the next attempt (for ever when d is 0) unless
// the filter changes (kicked) or ctx ends first (not ok).
func (s *session) waitReopen(ctx context.Context, d time.Duration) (kicked, ok bool) {
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-tc:
		return false, true
	case <-s.h.listen.kick:
		return true, true
	case <-ctx.Done():
		return false, false
	}
}

// subscribeStateless answers resources/subscribe and resources/unsubscribe
// for a server of the 2026-07-28 era, by reopening the listen stream with
// the resource added to or removed from its filter. A subscription is
// answered once the server acknowledged the new filter: {} when it agreed
// to the resource, an error saying why not otherwise.
func (h *HTTP) subscribeStateless(ctx context.Context, s *session, method string, params json.RawMessage) (*wire.Response, error) {
	uri, _ := wire.GetString(params, "uri")
	if uri == "" {
		e := wire.Errorf(wire.CodeInvalidParams, "%s needs a uri", method)
		return &wire.Response{Error: e.Marshal()}, nil
	}
	add := method == "resources/subscribe"
	v := h.listen.change(uri, add)
	s.startStatelessListen(ctx)
	if !add {
		return &wire.Response{Result: json.RawMessage(`{}`)}, nil
	}
	agreed, failure, ok := h.listen.await(ctx, v, h.opts.Timeout)
	switch {
	case ok && failure == "" && slices.Contains(agreed.ResourceSubscriptions, uri):
		return &wire.Response{Result: json.RawMessage(`{}`)}, nil
	case ctx.Err() != nil:
		h.listen.change(uri, false)
		return nil, fmt.Errorf("mcp server %q: resources/subscribe abandoned before the server acknowledged it: %w", h.opts.Name, ctx.Err())
	}
	h.listen.change(uri, false)
	var e *wire.Error
	switch {
	case !ok:
		e = wire.Errorf(wire.CodeInternalError, "mcp server %q did not acknowledge a subscriptions/listen stream for %s within %s; try again later", h.opts.Name, uri, h.opts.Timeout)
	case failure != "":
		e = wire.Errorf(wire.CodeInternalError, "mcp server %q: cannot subscribe to %s: its subscriptions/listen stream is not open (%s)", h.opts.Name, uri, failure)
	default:
		e = wire.Errorf(wire.CodeInvalidParams, "mcp server %q does not send updates of %s (its subscriptions/listen stream did not agree to it)", h.opts.Name, uri)
	}
	return &wire.Response{Error: e.Marshal()}, nil
}

// notification is the hook every stream's notifications pass: the
// acknowledgement of a listen stream is the session's own, and the
// subscription id the server stamps on what comes on it is the upstream
// request's, meaningless to the gateway's clients.
func (h *HTTP) notification(method string, params json.RawMessage) {
	if method == "notifications/subscriptions/acknowledged" {
		h.listen.acknowledged(params)
		return
	}
	if meta := wire.Get(params, "_meta"); meta != nil && wire.Get(meta, metaSubscriptionID) != nil {
		if m, ok := wire.Delete(meta, metaSubscriptionID); ok {
			if string(m) == "{}" {
				params, _ = wire.Delete(params, "_meta")
			} else if p, err := wire.Set(params, "_meta", m); err == nil {
				params = p
			}
		}
	}
	if h.opts.OnNotification != nil {
		h.opts.OnNotification(method, params)
	}
}
