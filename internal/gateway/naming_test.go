package gateway

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

// step is one change of a running gateway's set of servers.
type step struct {
	add    string   // a server to add and start, offering tools ...
	tools  []string // ... these
	remove string   // a server to remove
	lose   string   // a server lost (down, being retried)
	back   string   // a lost server that came back
}

// exposedTools maps each exposed tool name to "<server>/<original>".
func exposedTools(r *Router, k *listKind) map[string]string {
	out := map[string]string{}
	for name, it := range r.view(k).byKey {
		out[name] = it.server.name + "/" + it.original
	}
	return out
}

// TestNamesStayWithTheirServer: the servers present at start follow the
// sorted-order rule; afterwards a name once exposed stays with its server
// until that server is removed, and a later server's colliding tool gets
// "<server>_<tool>".
func TestNamesStayWithTheirServer(t *testing.T) {
	tests := []struct {
		name  string
		mode  PrefixMode
		start map[string][]string // servers present at start
		steps []step
		want  map[string]string
	}{
		{
			name:  "at start: sorted order, the first keeps the name",
			start: map[string][]string{"local": {"pid"}, "abacus": {"pid"}},
			want:  map[string]string{"pid": "abacus/pid", "local_pid": "local/pid"},
		},
		{
			name:  "a server loaded later gets the prefixed name, though it sorts first",
			start: map[string][]string{"local": {"pid", "ls"}},
			steps: []step{{add: "abacus", tools: []string{"pid", "sum"}}},
			want:  map[string]string{"pid": "local/pid", "ls": "local/ls", "abacus_pid": "abacus/pid", "sum": "abacus/sum"},
		},
		{
			name:  "removing the owner does not rename the others; the freed name goes to the next server that offers it",
			start: map[string][]string{"local": {"pid"}},
			steps: []step{
				{add: "abacus", tools: []string{"pid"}},
				{remove: "local"},
				{add: "zed", tools: []string{"pid"}},
			},
			want: map[string]string{"abacus_pid": "abacus/pid", "pid": "zed/pid"},
		},
		{
			name:  "a removed server loaded again gets its name back",
			start: map[string][]string{"local": {"pid"}},
			steps: []step{
				{add: "abacus", tools: []string{"pid"}},
				{remove: "local"},
				{add: "local", tools: []string{"pid"}},
			},
			want: map[string]string{"abacus_pid": "abacus/pid", "pid": "local/pid"},
		},
		{
			name:  "a lost server keeps its names while it is down, and has them when it is back",
			start: map[string][]string{"local": {"pid"}},
			steps: []step{
				{lose: "local"},
				{add: "abacus", tools: []string{"pid"}},
				{back: "local"},
			},
			want: map[string]string{"pid": "local/pid", "abacus_pid": "abacus/pid"},
		},
		{
			name:  "prefix never: a later server's colliding tool is hidden",
			mode:  PrefixNever,
			start: map[string][]string{"local": {"pid"}},
			steps: []step{{add: "abacus", tools: []string{"pid", "sum"}}},
			want:  map[string]string{"pid": "local/pid", "sum": "abacus/sum"},
		},
		{
			name:  "prefix always: unchanged",
			mode:  PrefixAlways,
			start: map[string][]string{"local": {"pid"}},
			steps: []step{{add: "abacus", tools: []string{"pid"}}},
			want:  map[string]string{"local_pid": "local/pid", "abacus_pid": "abacus/pid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A lost server's background retry waits longer than the test:
			// the step "back" does what a successful retry does.
			r := NewRouter(RouterOptions{Prefix: tt.mode, RetryMin: time.Hour})
			t.Cleanup(func() { _ = r.Close() })
			fakes := map[string]*fakeUpstream{}
			for _, name := range slices.Sorted(maps.Keys(tt.start)) {
				f := &fakeUpstream{name: name}
				for _, n := range tt.start[name] {
					f.tools = append(f.tools, tool(n))
				}
				fakes[name] = f
				r.Add(f)
			}
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, st := range tt.steps {
				switch {
				case st.add != "":
					f := &fakeUpstream{name: st.add}
					for _, n := range st.tools {
						f.tools = append(f.tools, tool(n))
					}
					fakes[st.add] = f
					r.Add(f)
					if err := r.StartServer(context.Background(), st.add); err != nil {
						t.Fatal(err)
					}
				case st.remove != "":
					if err := r.Remove(st.remove); err != nil {
						t.Fatal(err)
					}
				case st.lose != "":
					r.lost(r.server(st.lose), errors.New("down"))
					if _, ok := exposedTools(r, kindTools)["pid"]; ok {
						t.Fatalf("the lost server's tool is still exposed: %v", exposedTools(r, kindTools))
					}
				case st.back != "":
					s := r.server(st.back)
					if err := r.startOne(context.Background(), s); err != nil {
						t.Fatal(err)
					}
					r.recovered(s)
				}
			}
			if got := exposedTools(r, kindTools); !maps.Equal(got, tt.want) {
				t.Errorf("exposed %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPromptNamesStayWithTheirServer: the same rule for prompts.
func TestPromptNamesStayWithTheirServer(t *testing.T) {
	r := NewRouter(RouterOptions{})
	t.Cleanup(func() { _ = r.Close() })
	r.Add(&listFake{fakeUpstream: fakeUpstream{name: "local"}, prompts: []string{"greet"}})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Add(&listFake{fakeUpstream: fakeUpstream{name: "abacus"}, prompts: []string{"greet", "sum"}})
	if err := r.StartServer(context.Background(), "abacus"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"greet": "local/greet", "abacus_greet": "abacus/greet", "sum": "abacus/sum"}
	if got := exposedTools(r, kindPrompts); !maps.Equal(got, want) {
		t.Errorf("exposed prompts %v, want %v", got, want)
	}
}

// TestListingDuringStartClaimsNothing: a server that is listed (and merged)
// before the others finished starting, as when it announces a list change
// during start, does not claim names against the sorted-order rule.
func TestListingDuringStartClaimsNothing(t *testing.T) {
	r := NewRouter(RouterOptions{})
	t.Cleanup(func() { _ = r.Close() })
	r.Add(&fakeUpstream{name: "local", tools: []string{tool("pid")}})
	r.Add(&fakeUpstream{name: "abacus", tools: []string{tool("pid")}})
	if err := r.list(context.Background(), r.server("local"), kindTools); err != nil {
		t.Fatal(err)
	}
	r.rebuild(kindTools) // what a re-listing during start does
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pid": "abacus/pid", "local_pid": "local/pid"}
	if got := exposedTools(r, kindTools); !maps.Equal(got, want) {
		t.Errorf("exposed %v, want %v", got, want)
	}
}
