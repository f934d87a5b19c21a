package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// listFake offers tools and prompts whose lists the test changes, and can
// hold a tools/list until released.
type listFake struct {
	fakeUpstream
	mu         sync.Mutex
	toolNames  []string
	prompts    []string
	holdTools  chan struct{} // non-nil: tools/list waits for it to close
	toolsEnter chan struct{} // told when a held tools/list begins
	failTools  int           // how many tools/list to fail next
}

func (f *listFake) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true}},"serverInfo":{"name":"f","version":"1"}}`)
}

func (f *listFake) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	f.mu.Lock()
	hold, enter := f.holdTools, f.toolsEnter
	tools, prompts := slices.Clone(f.toolNames), slices.Clone(f.prompts)
	fail := method == "tools/list" && f.failTools > 0
	if fail {
		f.failTools--
	}
	f.mu.Unlock()
	if fail {
		return nil, errors.New(`mcp server "a": tools/list: the server took too long`)
	}
	switch method {
	case "tools/list":
		if hold != nil {
			enter <- struct{}{}
			<-hold // answers the list as it was when asked
		}
		defs := make([]string, len(tools))
		for i, n := range tools {
			defs[i] = tool(n)
		}
		return &wire.Response{Result: json.RawMessage(`{"tools":[` + strings.Join(defs, ",") + `]}`)}, nil
	case "prompts/list":
		defs := make([]string, len(prompts))
		for i, n := range prompts {
			defs[i] = `{"name":"` + n + `"}`
		}
		return &wire.Response{Result: json.RawMessage(`{"prompts":[` + strings.Join(defs, ",") + `]}`)}, nil
	}
	return f.fakeUpstream.Call(ctx, method, params)
}

func viewNames(r *Router, k *listKind) []string {
	var out []string
	for _, it := range r.view(k).items {
		out = append(out, it.original)
	}
	return out
}

// TestListChangeDuringRelistIsNotLost: a prompts change announced while a
// tools re-listing waits on the server is re-listed after it, and a second
// tools change announced meanwhile too.
func TestListChangeDuringRelistIsNotLost(t *testing.T) {
	f := &listFake{fakeUpstream: fakeUpstream{name: "a"}, toolNames: []string{"t1"}, prompts: []string{"p1"}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(f)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	hooks := hooksOf(g, "a")

	hold, enter := make(chan struct{}), make(chan struct{}, 4)
	f.mu.Lock()
	f.holdTools, f.toolsEnter = hold, enter
	f.toolNames = []string{"t1", "t2"}
	f.mu.Unlock()
	hooks.OnNotification("notifications/tools/list_changed", nil)
	<-enter // the tools re-listing waits on the server

	f.mu.Lock()
	f.prompts = []string{"p1", "p2"}
	f.mu.Unlock()
	hooks.OnNotification("notifications/prompts/list_changed", nil)
	hooks.OnNotification("notifications/tools/list_changed", nil)
	f.mu.Lock()
	f.holdTools = nil // the second tools listing answers at once
	f.toolNames = []string{"t1", "t2", "t3"}
	f.mu.Unlock()
	close(hold)

	seen := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for !seen["notifications/prompts/list_changed"] || !slices.Equal(viewNames(r, kindTools), []string{"t1", "t2", "t3"}) {
		select {
		case msg := <-s.Outbox():
			var n struct{ Method string }
			_ = json.Unmarshal(msg, &n)
			seen[n.Method] = true
		case <-deadline:
			t.Fatalf("after the re-listings: tools %v, prompts %v, notifications %v; want tools [t1 t2 t3], prompts [p1 p2] and prompts/list_changed",
				viewNames(r, kindTools), viewNames(r, kindPrompts), seen)
		}
	}
	if got := viewNames(r, kindPrompts); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Errorf("prompts %v, want [p1 p2]", got)
	}
}

// TestRelistFailureIsRetried: a re-listing that fails (the server timed
// out) is tried again, so the change it was for reaches the clients, with
// list_changed, without waiting for the server's next announcement.
func TestRelistFailureIsRetried(t *testing.T) {
	defer func(d time.Duration) { relistRetryDelay = d }(relistRetryDelay)
	relistRetryDelay = time.Millisecond
	f := &listFake{fakeUpstream: fakeUpstream{name: "a"}, toolNames: []string{"t1"}, prompts: []string{"p1"}}
	r := NewRouter(RouterOptions{})
	g := New(r, Info{})
	r.Add(f)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, g)
	f.mu.Lock()
	f.toolNames, f.failTools = []string{"t1", "t2"}, 2
	f.mu.Unlock()
	hooksOf(g, "a").OnNotification("notifications/tools/list_changed", nil)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case msg := <-s.Outbox():
			if strings.Contains(string(msg), "notifications/tools/list_changed") {
				if got := viewNames(r, kindTools); !slices.Equal(got, []string{"t1", "t2"}) {
					t.Fatalf("list_changed with tools %v, want [t1 t2]", got)
				}
				return
			}
		case <-deadline:
			t.Fatalf("no tools/list_changed after two failed re-listings: tools %v", viewNames(r, kindTools))
		}
	}
}
