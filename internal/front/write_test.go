package front

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// TestWriteReplySizes: a reply is the same JSON-RPC response whether its
// result is small (copied into a pooled buffer with the envelope) or large
// (written after the envelope's start, with its Content-Length).
func TestWriteReplySizes(t *testing.T) {
	for _, n := range []int{10, bigResult + 1} {
		result := json.RawMessage(`{"tools":["` + strings.Repeat("t", n) + `"]}`)
		rec := httptest.NewRecorder()
		writeReply(rec, 0, json.RawMessage(`7`), gateway.Reply{Result: result})
		want := string(wire.AppendResult(nil, json.RawMessage(`7`), result))
		if got := rec.Body.String(); got != want {
			t.Errorf("%d bytes: body %.80q…, want %.80q…", n, got, want)
		}
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d bytes: status %d, type %q", n, rec.Code, rec.Header().Get("Content-Type"))
		}
		if cl := rec.Header().Get("Content-Length"); n > bigResult && cl != strconv.Itoa(len(want)) {
			t.Errorf("%d bytes: Content-Length %q, want %d", n, cl, len(want))
		}
	}
}
