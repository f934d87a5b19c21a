package attach

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The filesystem server's line about the refused start-up roots/list goes
// to the gateway's log at debug level; every other line passes as it is,
// the same refusal naming another server included.
func TestQuietExpected(t *testing.T) {
	var out, logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := quietExpected(&out, log, "filesystem")
	refusal := `[filesystem] Failed to request initial roots from client: MCP error -32600: roots/list refused: no client call is in flight on mcp server "filesystem", so the gateway cannot tell which client it is for` + "\n"
	other := "[filesystem] Secure MCP Filesystem Server running on stdio\n"
	// the same refusal about another server is not this server's expected line
	otherServer := strings.Replace(refusal, `mcp server "filesystem"`, `mcp server "files"`, 1)
	for _, line := range []string{other, refusal, otherServer, other} {
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if out.String() != other+otherServer+other {
		t.Errorf("forwarded %q, want only the other lines", out.String())
	}
	if got := logs.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "server=filesystem") || !strings.Contains(got, "Failed to request initial roots") {
		t.Errorf("gateway log: %q, want the refusal at debug level", got)
	}
	if quietExpected(nil, log, "x") != nil {
		t.Error("a nil writer is wrapped")
	}
}
