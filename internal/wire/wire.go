// Package wire is the JSON-RPC 2.0 envelope of the gateway's own wire path.
//
// A message is decoded only as far as routing needs (id, method, and whether it
// is a result or an error); params, results and errors stay raw bytes, so what
// the gateway does not change passes through unchanged. Writers append to a
// caller's buffer, so a hot path can reuse one.
//
// It also holds what an upstream hands the gateway ([Response], and the
// failure kinds the gateway acts on: [ErrStart], [ErrCredentials]), so that
// the gateway and the upstreams share a vocabulary without the gateway
// importing an upstream package.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON-RPC and MCP error codes the gateway produces itself.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeUnsupportedProtocolVersion = -32022
)

// Message is one JSON-RPC message with only its envelope decoded.
//
//   - a request has Method and ID;
//   - a notification has Method and no ID;
//   - a response has ID and Result or Error.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// IsRequest reports whether m is a request (it expects a response).
func (m *Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// IsResponse reports whether m is a response to a request.
func (m *Message) IsResponse() bool { return m.Method == "" && (m.Result != nil || m.Error != nil) }

// ErrBatch is returned by Parse for a JSON array: MCP since 2025-06-18 has no batches.
var ErrBatch = errors.New("JSON-RPC batches are not supported")

// ErrNotJSON is wrapped by Parse's errors for a message that is not one
// JSON text (RFC 8259: one value, UTF-8): a JSON-RPC parse error. Parse's
// other errors are for JSON that is no valid JSON-RPC message.
var ErrNotJSON = errors.New("not valid JSON")

// DuplicateError is Parse's error for a message in which an object repeats
// a member name. JSON parsers disagree on which of the two counts (most keep
// the last, some the first, the gateway's own scanner finds the first), so
// such a message could be routed and checked by one and executed by
// another: it is refused whole, wherever the repetition is.
//
// In the envelope and the objects of its first two levels (params,
// params._meta, params.ref, params.arguments, result, error...) names that
// differ only in case count as repeated too: Go's encoding/json (so mcp-go's
// servers) and other parsers match names to fields regardless of case, and
// read {"name":"a","Name":"b"} as "b" where the gateway reads "a".
type DuplicateError struct {
	// Path names the repeated member from the top of the message, as
	// written the second time: "params.name", "result.tools[3].inputSchema.type".
	Path string
	// CaseOnly: the member repeats an earlier one but for case.
	CaseOnly bool
}

func (e *DuplicateError) Error() string {
	if e.CaseOnly {
		return fmt.Sprintf("member %s repeats a member of its object but for case, which some parsers ignore; send each member once", e.Path)
	}
	return fmt.Sprintf("member %s appears more than once in its object; send each member once", e.Path)
}

// Parse decodes the envelope of one JSON-RPC message. The raw fields of the
// returned message may alias b: the caller must not change b while using them.
func Parse(b []byte) (*Message, error) {
	m := &Message{}
	if err := ParseInto(m, b); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseInto is Parse into a message the caller provides, which may live on
// its stack: a hot path that only reads the envelope allocates nothing for
// it. m is overwritten; on error its fields are undefined.
//
// It refuses what could mean one thing to the gateway and another to a
// peer: a repeated member name anywhere (*DuplicateError), a name the
// gateway reads spelled otherwise but for case (*FoldedNameError), text that is not
// UTF-8, nesting deeper than encoding/json's 10000 levels. A message
// holding a line break (white space between tokens, which JSON allows) is
// compacted first: every raw member it hands out fits on one line, as a
// stdio peer's input and an SSE data line need.
func ParseInto(m *Message, b []byte) error {
	*m = Message{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("%w: empty message", ErrNotJSON)
	}
	if b[0] == '[' {
		return ErrBatch
	}
	if b[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrNotJSON)
	}
	// Validate once, then pick the envelope's members out by scanning:
	// cheaper than decoding, and the raw members alias b.
	found, ok := check(b, maxCaseDepth)
	if ok && found.kind == repeatedButForCase && inResponse(b, found.at) {
		// A response's data may repeat a name but for case: check again
		// with the response's depth (rare: only then is it scanned twice).
		found, ok = check(b, responseCaseDepth)
	}
	if !ok {
		var v any
		err := json.Unmarshal(b, &v) // says where it is malformed
		if err == nil {
			err = errors.New("malformed JSON")
		}
		return fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	switch found.kind {
	case repeated, repeatedButForCase:
		return &DuplicateError{Path: pathTo(b, found.at), CaseOnly: found.kind == repeatedButForCase}
	case spelledButForCase:
		return &FoldedNameError{Path: pathTo(b, found.at), Want: found.want}
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: not UTF-8", ErrNotJSON)
	}
	b, _ = OneLine(b) // valid JSON: compacting cannot fail
	var version []byte
	for it := (members{obj: b}); it.next(); {
		// The envelope's names have no escapes; switching on the raw bytes
		// allocates nothing.
		switch string(it.key) {
		case "jsonrpc":
			version = it.value
		case "id":
			m.ID = it.value
		case "method":
			s, ok := method(it.value)
			if !ok {
				return errors.New("method must be a string")
			}
			m.Method = s
		case "params":
			m.Params = it.value
		case "result":
			m.Result = it.value
		case "error":
			m.Error = it.value
		}
	}
	if string(version) != `"2.0"` {
		if v, _ := unquote(version); v != "2.0" {
			return fmt.Errorf("jsonrpc must be \"2.0\", got %q", v)
		}
	}
	if err := checkID(m); err != nil {
		return err
	}
	if string(m.Params) == "null" {
		m.Params = nil
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		return errors.New("neither a request, a notification nor a response")
	}
	return nil
}

// checkID checks the type of m's id: a string or a number, as MCP asks; a
// number is kept as written, however long. A response's id may be null (an
// error about a request whose id could not be read): it is then dropped.
// A request's may not: MCP forbids it, and JSON-RPC would still answer it,
// so it is neither a request nor a notification.
func checkID(m *Message) error {
	if len(m.ID) == 0 {
		return nil
	}
	switch c := m.ID[0]; {
	case c == '"', c == '-', '0' <= c && c <= '9':
		return nil
	case c == 'n': // null
		if m.Method != "" {
			return errors.New("a request's id must be a string or a number, not null")
		}
		m.ID = nil
		return nil
	}
	return fmt.Errorf("id must be a string or a number, not %s", m.ID)
}

const (
	maxPathParts = 16 // levels pathTo names
	maxNameBytes = 64 // of one name pathTo writes
)

// pathTo names the member whose name starts at b[off], from the top of the
// valid JSON text b, for an error message. It names at most maxPathParts
// levels: each costs a scan of the value it descends into.
func pathTo(b []byte, off int) string {
	var path []byte
	i := skipSpace(b, 0)
	for parts := 0; ; parts++ {
		if parts == maxPathParts {
			return string(append(path, ".…"...))
		}
		switch b[i] {
		case '{':
			j := skipSpace(b, i+1)
			for {
				kend, _ := skipString(b, j)
				vstart := skipSpace(b, skipSpace(b, kend)+1)
				vend, err := skipValue(b, vstart)
				if err != nil {
					return string(path)
				}
				if j == off || off < vend {
					name, _ := unquote(b[j:kend])
					path = appendName(path, name)
					if j == off {
						return string(path)
					}
					i = vstart
					break
				}
				j = skipSpace(b, vend)
				if b[j] == ',' {
					j = skipSpace(b, j+1)
				}
			}
		case '[':
			j := skipSpace(b, i+1)
			for n := 0; ; n++ {
				vend, err := skipValue(b, j)
				if err != nil {
					return string(path)
				}
				if off < vend {
					path = strconv.AppendInt(append(path, '['), int64(n), 10)
					path = append(path, ']')
					i = j
					break
				}
				j = skipSpace(b, vend)
				if b[j] == ',' {
					j = skipSpace(b, j+1)
				}
			}
		default:
			return string(path)
		}
	}
}

// appendName appends a member's name to a path: after a dot when it reads
// as an identifier, else quoted in brackets; cut when long.
func appendName(path []byte, name string) []byte {
	if len(name) > maxNameBytes {
		name = strings.ToValidUTF8(name[:maxNameBytes], "") + "…"
	}
	plain := name != ""
	for _, r := range name {
		if !(r == '_' || r == '$' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		return append(strconv.AppendQuote(append(path, '['), name), ']')
	}
	if len(path) > 0 {
		path = append(path, '.')
	}
	return append(path, name...)
}

// knownMethods are the methods of MCP, most frequent first: method returns
// these strings instead of allocating a new one for every message.
var knownMethods = [...]string{
	"tools/call",
	"notifications/progress",
	"notifications/message",
	"notifications/cancelled",
	"tools/list",
	"resources/read",
	"prompts/get",
	"completion/complete",
	"ping",
	"resources/list",
	"resources/templates/list",
	"prompts/list",
	"initialize",
	"notifications/initialized",
	"server/discover",
	"subscriptions/listen",
	"resources/subscribe",
	"resources/unsubscribe",
	"logging/setLevel",
	"sampling/createMessage",
	"elicitation/create",
	"roots/list",
	"notifications/roots/list_changed",
	"notifications/resources/updated",
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
	"notifications/elicitation/complete",
}

// method decodes a JSON string holding a method name.
func method(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		name := raw[1 : len(raw)-1]
		for _, m := range knownMethods {
			if len(m) == len(name) && string(name) == m {
				return m, true
			}
		}
	}
	return unquote(raw)
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code)
}

// Errorf returns an Error with the given code and a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// DecodeError decodes a raw error object; a malformed one becomes an internal error.
func DecodeError(raw json.RawMessage) *Error {
	var e Error
	if err := json.Unmarshal(raw, &e); err != nil {
		return &Error{Code: CodeInternalError, Message: "malformed error object: " + string(raw)}
	}
	return &e
}

// Marshal encodes e as a raw error object.
func (e *Error) Marshal() json.RawMessage {
	b, err := json.Marshal(e)
	if err != nil { // only Data can fail, and it is raw JSON we made
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	return b
}

const prefix = `{"jsonrpc":"2.0"`

// AppendRequest appends a request with the given id.
func AppendRequest(dst []byte, id json.RawMessage, method string, params json.RawMessage) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, `,"id":`...)
	dst = append(dst, id...)
	return appendMethodParams(dst, method, params)
}

// AppendIntRequest appends a request whose id is the integer id.
func AppendIntRequest(dst []byte, id uint64, method string, params json.RawMessage) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	return appendMethodParams(dst, method, params)
}

// AppendNotification appends a notification.
func AppendNotification(dst []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, prefix...)
	return appendMethodParams(dst, method, params)
}

func appendMethodParams(dst []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `,"method":`...)
	dst = AppendString(dst, method)
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// AppendResult appends a response carrying result.
func AppendResult(dst []byte, id json.RawMessage, result json.RawMessage) []byte {
	dst = AppendResultStart(dst, id)
	if len(result) == 0 {
		result = json.RawMessage(`{}`)
	}
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultStart appends what AppendResult writes before the result:
// the result and a closing brace complete it.
func AppendResultStart(dst []byte, id json.RawMessage) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, `,"id":`...)
	dst = appendID(dst, id)
	return append(dst, `,"result":`...)
}

// AppendRawError appends a response carrying an error object that is already encoded.
func AppendRawError(dst []byte, id json.RawMessage, errObj json.RawMessage) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, `,"id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":`...)
	dst = append(dst, errObj...)
	return append(dst, '}')
}

// AppendError appends a response carrying e. A nil id is written as null, as
// JSON-RPC asks when the request's id could not be read.
func AppendError(dst []byte, id json.RawMessage, e *Error) []byte {
	return AppendRawError(dst, id, e.Marshal())
}

func appendID(dst []byte, id json.RawMessage) []byte {
	if len(id) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

// AppendString appends s as a JSON string.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// inResponse reports whether the member name at b[at] lies in a response's
// result or error: its path starts with one of them.
func inResponse(b []byte, at int) bool {
	path := pathTo(b, at)
	return strings.HasPrefix(path, "result.") || strings.HasPrefix(path, "error.")
}
