package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// hundredPolicies is a set of 100 policies of the kinds docs/policy.md
// shows: per server, per tool, by annotation, by argument.
func hundredPolicies(tb testing.TB) *Set {
	var b strings.Builder
	for i := range 100 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "@id(\"p%d\") permit(principal, action == MCP::Action::\"invokeTool\", resource in MCP::Server::\"srv%d\");\n", i, i)
		case 1:
			fmt.Fprintf(&b, "@id(\"p%d\") forbid(principal, action == MCP::Action::\"invokeTool\", resource == MCP::Tool::\"srv%d/tool%d\") when { context.args has path && context.args.path like \"/secret%d/*\" };\n", i, i, i, i)
		case 2:
			fmt.Fprintf(&b, "@id(\"p%d\") forbid(principal == MCP::Client::\"c%d\", action, resource is MCP::Tool) when { resource.destructive && resource.serverName == \"srv%d\" };\n", i, i, i)
		case 3:
			fmt.Fprintf(&b, "@id(\"p%d\") permit(principal, action == MCP::Action::\"getPrompt\", resource) when { context.request_time > datetime(\"2020-01-01\") && resource.name == \"prompt%d\" };\n", i, i)
		}
	}
	set, err := Parse(DefaultDeny, Source{Name: "bench.cedar", Text: []byte(b.String())})
	if err != nil {
		tb.Fatal(err)
	}
	if set.Len() != 100 {
		tb.Fatalf("%d policies", set.Len())
	}
	return set
}

// reportP99 adds the 99th percentile of the samples to the benchmark's output.
func reportP99(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1000, "p99-µs")
}

// BenchmarkDecide is one decision with 100 policies loaded.
func BenchmarkDecide(b *testing.B) {
	set := hundredPolicies(b)
	req := &Request{Principal: "default", Action: ActionInvokeTool, Kind: TypeTool, Server: Server{Name: "srv1", Type: "local-stdio", Command: "npx", Args: []string{"-y", "pkg"}},
		Name: "tool1", Annotations: ParseAnnotations(json.RawMessage(`{"annotations":{"readOnlyHint":true}}`)), Args: json.RawMessage(`{"path":"/home/x/file.txt","n":3}`)}
	samples := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		t := time.Now()
		d := set.Decide(req)
		samples = append(samples, time.Since(t))
		if d.Allow {
			b.Fatal("srv1 has no permit: want deny by default")
		}
	}
	reportP99(b, samples)
}

// benchUpstream answers at once: the cost measured is the gateway's own.
type benchUpstream struct{}

func (benchUpstream) Name() string                { return "srv0" }
func (benchUpstream) Start(context.Context) error { return nil }
func (benchUpstream) Generation() uint64          { return 1 }
func (benchUpstream) Close() error                { return nil }
func (benchUpstream) InitializeResult() json.RawMessage {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"b","version":"1"}}`)
}
func (benchUpstream) Notify(context.Context, string, json.RawMessage) error { return nil }
func (benchUpstream) Call(_ context.Context, method string, _ json.RawMessage) (*upstream.Response, error) {
	if method == "tools/list" {
		return &upstream.Response{Result: json.RawMessage(`{"tools":[{"name":"tool0","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)}, nil
	}
	return &upstream.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)}, nil
}

// BenchmarkCall is one tools/call through the gateway: without a guard,
// with 100 policies, and with 100 policies and the audit log.
func BenchmarkCall(b *testing.B) {
	for _, mode := range []string{"none", "policy", "policy+audit"} {
		b.Run(mode, func(b *testing.B) {
			r := gateway.NewRouter(gateway.RouterOptions{})
			g := gateway.New(r, gateway.Info{Name: "gw", Version: "b"})
			r.Add(benchUpstream{})
			if err := r.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if mode != "none" {
				guard := &Guard{Engine: NewEngine(hundredPolicies(b)), Principal: "default"}
				if mode == "policy+audit" {
					l, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), audit.Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer l.Close()
					guard.Audit = l
				}
				g.Guard = guard
			}
			s, _, werr := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
			if werr != nil {
				b.Fatal(werr)
			}
			m := &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(`{"name":"tool0","arguments":{"path":"/home/x","n":1}}`)}
			ctx := context.Background()
			samples := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				t := time.Now()
				reply := s.Handle(ctx, m, nil)
				samples = append(samples, time.Since(t))
				if reply.Error != nil {
					b.Fatal(string(reply.Error))
				}
			}
			reportP99(b, samples)
		})
	}
}

// BenchmarkList is tools/list with 100 policies: the filtered list is
// cached, so a list costs what it costs without policies.
func BenchmarkList(b *testing.B) {
	r := gateway.NewRouter(gateway.RouterOptions{})
	g := gateway.New(r, gateway.Info{Name: "gw", Version: "b"})
	r.Add(benchUpstream{})
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	g.Guard = &Guard{Engine: NewEngine(hundredPolicies(b)), Principal: "default"}
	s, _, _ := g.Initialize(json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
	m := &wire.Message{ID: json.RawMessage(`1`), Method: "tools/list"}
	for b.Loop() {
		s.Handle(context.Background(), m, nil)
	}
}
