package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// constantUpstream answers every call at once with the same result: the
// gateway's own share of a call, without a transport.
type constantUpstream struct{ fakeUpstream }

var constantResult = &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)}

func (c *constantUpstream) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	if method == "tools/call" {
		return constantResult, nil
	}
	return c.fakeUpstream.Call(ctx, method, params)
}

func benchGateway(b *testing.B) *Gateway {
	r := NewRouter(RouterOptions{Logger: slog.New(slog.DiscardHandler)})
	g := New(r, Info{Name: "b", Version: "1"})
	r.Add(&constantUpstream{fakeUpstream{name: "a", tools: []string{tool("echo")}}})
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close(); _ = r.Close() })
	return g
}

// BenchmarkCallSession is one tools/call of a session-era client through
// the gateway (Session.Handle to the upstream's Call and back).
func BenchmarkCallSession(b *testing.B) {
	g := benchGateway(b)
	s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}`))
	if werr != nil {
		b.Fatal(werr)
	}
	m := &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hi"}}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := s.Handle(ctx, m, nil); r.Error != nil {
			b.Fatal(string(r.Error))
		}
	}
}

// BenchmarkCallStateless is one tools/call of a 2026-07-28 client that
// declares no capability (its call runs on the request's goroutine).
func BenchmarkCallStateless(b *testing.B) {
	g := benchGateway(b)
	m := &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"` +
		MetaProtocolVersion + `":"` + StatelessVersion + `","` + MetaClientInfo + `":{"name":"b","version":"1"},"` + MetaClientCapabilities + `":{}}}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := g.HandleStateless(ctx, m, nil); r.Error != nil {
			b.Fatal(string(r.Error))
		}
	}
}
