package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A session-era call that takes longer than the front's PrimeAfter becomes
// a resumable SSE stream that opens with a priming event (an id, a retry,
// no data), so a client whose connection a proxy cuts during a long call
// can resume it; a quick one stays plain JSON.
func TestLongCallIsPrimedForResumption(t *testing.T) {
	g := newGW(t)
	g.mustLaunch(fmt.Sprintf(`{"everything": {"runCmd": %q}}`, filepath.Join(npmBin, "mcp-server-everything")))
	session := g.rawSession(t)

	status, h, body := g.rawPost(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"quick"}}}`, session)
	if status != 200 || h.Get("Content-Type") != "application/json" {
		t.Errorf("a quick call: %d %s %q; want plain JSON", status, h.Get("Content-Type"), body)
	}

	// No progress token: the server sends nothing before its answer.
	status, h, body = g.rawPost(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":1}}}`, session)
	if status != 200 || h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("a one-second call: %d %s %q; want an SSE stream", status, h.Get("Content-Type"), body)
	}
	first, _, _ := strings.Cut(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n")
	if !strings.HasPrefix(first, "id: ") || !strings.Contains(first, "\nretry: ") || !strings.HasSuffix(first, "\ndata: ") {
		t.Errorf("the stream's first event %q; want the priming event: an id, a retry and empty data", first)
	}
	if got := responseText(t, h, body); !strings.Contains(got, "Long running operation completed") {
		t.Errorf("the primed call's answer: %q", got)
	}
}
