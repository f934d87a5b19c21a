package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/audit"
	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
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
			// On a tool of the server case 0 permits: its calls are allowed unless this forbids.
			fmt.Fprintf(&b, "@id(\"p%d\") forbid(principal, action == MCP::Action::\"invokeTool\", resource == MCP::Tool::\"srv%d/tool%d\") when { context.args has path && context.args.path like \"/secret%d/*\" };\n", i, i-1, i-1, i)
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

// latencies is a histogram of durations at 25 ns resolution up to about
// 400 µs (longer ones in the last bucket): recording allocates nothing, so
// the benchmark's own bookkeeping adds no garbage collection to what it
// measures.
type latencies struct {
	n       int
	buckets [16384]uint32
}

const bucketNS = 25

func (l *latencies) add(d time.Duration) {
	i := int(d.Nanoseconds() / bucketNS)
	if i >= len(l.buckets) {
		i = len(l.buckets) - 1
	}
	l.buckets[i]++
	l.n++
}

// quantile is the upper bound of the bucket holding quantile q, in µs.
func (l *latencies) quantile(q float64) float64 {
	want := int(float64(l.n)*q) + 1
	seen := 0
	for i, c := range l.buckets {
		seen += int(c)
		if seen >= want {
			return float64((i+1)*bucketNS) / 1000
		}
	}
	return float64(len(l.buckets)*bucketNS) / 1000
}

// report adds the median and the 99th percentile to the benchmark's output.
func (l *latencies) report(b *testing.B) {
	if l.n == 0 {
		return
	}
	b.ReportMetric(l.quantile(0.5), "p50-µs")
	b.ReportMetric(l.quantile(0.99), "p99-µs")
}

// decideRequest is BenchmarkDecide's request: a tool its server's permit
// allows (context-free: decided once and cached, as are the 25 forbids on
// every tool) and a forbid on its arguments does not forbid (converted and
// evaluated on each decision).
func decideRequest() *Request {
	return &Request{Principal: "default", Action: ActionInvokeTool, Kind: TypeTool, Server: Server{Name: "srv0", Type: "local-stdio", Command: "npx", Args: []string{"-y", "pkg"}},
		Name: "tool0", Annotations: ParseAnnotations(json.RawMessage(`{"annotations":{"readOnlyHint":true}}`)), Args: json.RawMessage(`{"path":"/home/x/file.txt","n":3}`)}
}

// BenchmarkDecide is one decision with 100 policies loaded.
func BenchmarkDecide(b *testing.B) {
	set := hundredPolicies(b)
	req := decideRequest()
	l := new(latencies)
	for b.Loop() {
		t := time.Now()
		d := set.Decide(req)
		l.add(time.Since(t))
		if !d.Allow {
			b.Fatal("srv0's tool0 is permitted: ", d.Reason())
		}
	}
	l.report(b)
}

// BenchmarkAdmit is what the guard does for a call, without the audit
// log: the decision, with the request made from the call (its server,
// the tool's annotations read from its definition), as the gateway asks it.
func BenchmarkAdmit(b *testing.B) {
	g := &Guard{Engine: NewEngine(hundredPolicies(b)), Principal: "default",
		Servers: func(name string) Server {
			return Server{Name: name, Type: "local-stdio", Command: "npx", Args: []string{"-y", "pkg"}}
		}}
	c := &gateway.GuardCall{GuardItem: gateway.GuardItem{Kind: gateway.GuardTool, Server: "srv0", Name: "tool0",
		Def: json.RawMessage(`{"name":"tool0","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`)},
		Method: "tools/call", Arguments: json.RawMessage(`{"path":"/home/x/file.txt","n":3}`)}
	ctx := context.Background()
	l := new(latencies)
	for b.Loop() {
		t := time.Now()
		_, werr := g.Admit(ctx, c)
		l.add(time.Since(t))
		if werr != nil {
			b.Fatal(werr)
		}
	}
	l.report(b)
}

//go:noinline
func noopDecide(set *Set, r *Request) Decision {
	return Decision{Allow: set == nil && r == nil}
}

// BenchmarkDecideNoop has BenchmarkDecide's shape around a call that does
// nothing: its p99 is what the clock and the machine add to any sample.
func BenchmarkDecideNoop(b *testing.B) {
	set, req := hundredPolicies(b), decideRequest()
	l := new(latencies)
	for b.Loop() {
		t := time.Now()
		d := noopDecide(set, req)
		l.add(time.Since(t))
		if d.Allow {
			b.Fatal("no-op")
		}
	}
	l.report(b)
}

var spinSink uint64

//go:noinline
func spin(n int) uint64 {
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// BenchmarkDecideSpin is a fixed amount of work that allocates nothing,
// calibrated to take as long as a decision's median: its p99 against
// BenchmarkDecide's tells what in the decision's p99 is the decision's
// (its garbage collection included) and what is the machine's
// (preemption by other processes, timer interrupts).
func BenchmarkDecideSpin(b *testing.B) {
	set, req := hundredPolicies(b), decideRequest()
	median := func(f func()) time.Duration {
		ds := make([]time.Duration, 2001)
		for i := range ds {
			t := time.Now()
			f()
			ds[i] = time.Since(t)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	target := median(func() { set.Decide(req) })
	n := 1000
	for range 20 { // scale n until spin(n)'s median is the decision's
		got := median(func() { spinSink += spin(n) })
		n = max(1, int(float64(n)*float64(target)/float64(got)))
	}
	l := new(latencies)
	for b.Loop() {
		t := time.Now()
		spinSink += spin(n)
		l.add(time.Since(t))
	}
	l.report(b)
}

var allocSink [][]byte

// allocLike allocates what a decision allocates: objects by number and
// bytes (BenchmarkDecide's allocs/op and B/op), kept until the next call.
//
//go:noinline
func allocLike(objects, bytes int) {
	if len(allocSink) < objects {
		allocSink = make([][]byte, objects)
	}
	for i := range objects {
		allocSink[i] = make([]byte, bytes/objects)
	}
}

// BenchmarkDecideSpinAlloc is BenchmarkDecideSpin allocating what a
// decision allocates (26 objects, about 1.2 kB): its p99 against
// BenchmarkDecide's and BenchmarkDecideSpin's tells how much of a
// decision's tail is the Go runtime's memory management (garbage
// collection, returning and faulting pages) under the machine's load,
// which any work allocating as much would see.
func BenchmarkDecideSpinAlloc(b *testing.B) {
	set, req := hundredPolicies(b), decideRequest()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 1000 {
		set.Decide(req)
	}
	runtime.ReadMemStats(&after)
	objects, bytes := int(after.Mallocs-before.Mallocs)/1000, int(after.TotalAlloc-before.TotalAlloc)/1000
	median := func(f func()) time.Duration {
		ds := make([]time.Duration, 2001)
		for i := range ds {
			t := time.Now()
			f()
			ds[i] = time.Since(t)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	target := median(func() { set.Decide(req) })
	n := 1000
	for range 20 {
		got := median(func() { spinSink += spin(n); allocLike(objects, bytes) })
		n = max(1, int(float64(n)*float64(target)/float64(got)))
	}
	l := new(latencies)
	for b.Loop() {
		t := time.Now()
		spinSink += spin(n)
		allocLike(objects, bytes)
		l.add(time.Since(t))
	}
	l.report(b)
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
func (benchUpstream) Call(_ context.Context, method string, _ json.RawMessage) (*wire.Response, error) {
	if method == "tools/list" {
		return &wire.Response{Result: json.RawMessage(`{"tools":[{"name":"tool0","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)}, nil
	}
	return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)}, nil
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
			l := new(latencies)
			for b.Loop() {
				t := time.Now()
				reply := s.Handle(ctx, m, nil)
				l.add(time.Since(t))
				if reply.Error != nil {
					b.Fatal(string(reply.Error))
				}
			}
			l.report(b)
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
