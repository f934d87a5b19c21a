package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// OneLine returns msg as one line: msg itself when it holds no CR or LF
// byte, else a compacted copy. In valid JSON a raw CR or LF can only be
// whitespace between tokens, so compacting changes no value. Every message
// written to a line-framed peer (a stdio server's input, the stdio front's
// output) or into an SSE data line goes through it: a line break in it would
// split one message into several (MCP's stdio transport forbids embedded
// newlines; a bare CR ends a line for some readers).
func OneLine(msg []byte) ([]byte, error) {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return msg, nil
	}
	var b bytes.Buffer
	b.Grow(len(msg))
	if err := json.Compact(&b, msg); err != nil {
		return nil, fmt.Errorf("a message with a line break that is not valid JSON: %w", err)
	}
	return b.Bytes(), nil
}
