package wire

import (
	"encoding/json"
	"errors"
)

// Response is a server's answer to a call, as an upstream hands it to the
// gateway. Exactly one field is set; both hold the server's bytes unchanged.
type Response struct {
	Result json.RawMessage
	Error  json.RawMessage // the raw JSON-RPC error object
}

// StatelessVersion is the protocol version of the stateless era
// (2026-07-28), which the gateway and its upstreams both speak beside the
// session era.
const StatelessVersion = "2026-07-28"

// Kinds of an upstream's failure that the gateway acts on, tested with
// errors.Is. The upstream's errors wrap them; their text says the rest.
var (
	// ErrStart marks a call that failed because its server could not be
	// (re)started: the caller may take the server out of service.
	ErrStart = errors.New("mcp server could not be started")
	// ErrCredentials: a remote server answered 401 or 403, refusing the
	// credentials the gateway sent. The text says so in words that cannot
	// be taken for the gateway's own 401.
	ErrCredentials = errors.New("mcp server refused the credentials")
)
