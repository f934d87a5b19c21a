package attach

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// swappable is the part of an upstream whose connection is made by its
// Start, not when it is built, and may be replaced by the next Start (a
// remote server's session, a per-client process). It forwards the calls to
// the connection Start made last; before there is one, Call and Notify fail
// with upstream.ErrNotRunning, naming the server. The types embedding it
// write Start and Close, setting up and closed under mu.
type swappable struct {
	name string

	mu     sync.Mutex
	up     gateway.Upstream // nil until Start makes it
	closed bool             // set by Close: a later Start fails with upstream.ErrClosed
}

func (s *swappable) current() gateway.Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}

func (s *swappable) Name() string { return s.name }

func (s *swappable) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	up := s.current()
	if up == nil {
		return nil, fmt.Errorf("mcp server %q: %w", s.name, upstream.ErrNotRunning)
	}
	return up.Call(ctx, method, params)
}

func (s *swappable) Notify(ctx context.Context, method string, params json.RawMessage) error {
	up := s.current()
	if up == nil {
		return fmt.Errorf("mcp server %q: %w", s.name, upstream.ErrNotRunning)
	}
	return up.Notify(ctx, method, params)
}

func (s *swappable) InitializeResult() json.RawMessage {
	if up := s.current(); up != nil {
		return up.InitializeResult()
	}
	return nil
}

func (s *swappable) Generation() uint64 {
	if up := s.current(); up != nil {
		return up.Generation()
	}
	return 0
}
