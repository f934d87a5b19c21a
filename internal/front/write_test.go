package front

import (
	"encoding/json"
	"io"
	"net/http"
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

// TestWriteReplyNotChunked: over a real connection, a plain JSON reply of
// any size goes with its Content-Length, never chunked (net/http chunks a
// body beyond its 2 KiB buffer unless the length is given, and writes the
// last chunk apart).
func TestWriteReplyNotChunked(t *testing.T) {
	for _, n := range []int{10, 2048, 3000, 10000, bigResult + 1} {
		result := json.RawMessage(`{"t":"` + strings.Repeat("t", n) + `"}`)
		want := string(wire.AppendResult(nil, json.RawMessage(`7`), result))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeReply(w, 0, json.RawMessage(`7`), gateway.Reply{Result: result})
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if string(body) != want {
			t.Errorf("%d bytes: body %.60q…, want %.60q…", n, body, want)
		}
		if len(resp.TransferEncoding) > 0 || resp.ContentLength != int64(len(want)) {
			t.Errorf("%d bytes: Transfer-Encoding %v, Content-Length %d; want none and %d", n, resp.TransferEncoding, resp.ContentLength, len(want))
		}
	}
}
