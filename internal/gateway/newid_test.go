package gateway

import (
	"strings"
	"testing"
)

// TestNewIDIsUnguessable: the progress tokens and request ids the gateway
// makes are unique, and knowing some of them (those of one's own calls, or
// another gateway's) does not tell the next: each carries 130 random bits.
func TestNewIDIsUnguessable(t *testing.T) {
	g1, g2 := New(NewRouter(RouterOptions{}), Info{}), New(NewRouter(RouterOptions{}), Info{})
	seen := map[string]bool{}
	for range 1000 {
		a, b := g1.newID("gw-progress-"), g2.newID("gw-progress-")
		if a == b {
			t.Fatalf("two gateways made the same id %q: it is guessable", a)
		}
		for _, id := range []string{a, b} {
			random := id[strings.LastIndexByte(id, '-')+1:]
			if !strings.HasPrefix(id, "gw-progress-") || len(random) < 26 {
				t.Fatalf("id %q: want the prefix, then at least 26 random base32 characters (130 bits)", id)
			}
		}
		if seen[a] {
			t.Fatalf("id %q made twice", a)
		}
		seen[a] = true
	}
}
