package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// blockingStart is a per-client upstream whose Start waits for release.
type blockingStart struct {
	*fakeUpstream
	started chan struct{}
	release chan struct{}
	closed  atomic.Bool
}

func (b *blockingStart) Start(ctx context.Context) error {
	close(b.started)
	<-b.release
	return b.fakeUpstream.Start(ctx)
}

func (b *blockingStart) Close() error { b.closed.Store(true); return nil }

// A client's own upstream session that finishes starting after the client's
// session ended is closed, not kept where nothing would ever close it (a
// per-client process and its directory would outlive the session).
func TestPerClientStartedAfterSessionEnds(t *testing.T) {
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	own := &blockingStart{fakeUpstream: &fakeUpstream{name: "pc", tools: []string{tool("work")}},
		started: make(chan struct{}), release: make(chan struct{})}
	r.AddPerClient(&fakeUpstream{name: "pc", tools: []string{tool("work")}}, Hooks{}, func(json.RawMessage, Hooks) Upstream { return own })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = r.Close() })
	s := newSession(t, g)

	reply := make(chan Reply, 1)
	go func() {
		reply <- s.Handle(context.Background(), &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"work"}`)}, noStream{})
	}()
	<-own.started
	s.Close()
	close(own.release)
	rep := <-reply
	if rep.Error == nil || !strings.Contains(string(rep.Error), "session ended") {
		t.Errorf("the call whose session ended while its upstream started: %s %s, want an error saying the session ended", rep.Result, rep.Error)
	}
	if !own.closed.Load() {
		t.Error("the upstream session started after the client's session ended was not closed")
	}
	s.mu.Lock()
	kept := len(s.ups)
	s.mu.Unlock()
	if kept != 0 {
		t.Errorf("the ended session keeps %d upstream sessions", kept)
	}
}
