package gateway

import "testing"

func TestStripModernMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{ // a 2026-07-28 request for a session-era server: its own _meta stays, in order
			`{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
				`"progressToken":7,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
				`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","acme/trace":"x"}}`,
			`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7,"acme/trace":"x"}}`,
		},
		{ // nothing of the era: unchanged
			`{"name":"echo","_meta":{"progressToken":"p"}}`,
			`{"name":"echo","_meta":{"progressToken":"p"}}`,
		},
		{`{"name":"echo"}`, `{"name":"echo"}`},
	} {
		if got := stripModernMeta([]byte(c.in)); string(got) != c.want {
			t.Errorf("stripModernMeta(%s)\n = %s\nwant %s", c.in, got, c.want)
		}
	}
}
