package upstream

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Kinds of failure a caller can test for with errors.Is.
var (
	// ErrClosed: the upstream was closed; it accepts no more calls.
	ErrClosed = errors.New("upstream closed")
	// ErrNotRunning: Notify found no running process (notifications do not start one).
	ErrNotRunning = errors.New("mcp server is not running")
	// ErrExited: the server's process exited while a call or the handshake was waiting.
	ErrExited = errors.New("mcp server process exited")
	// ErrProtocol: the server broke the stdio transport (non-JSON-RPC output on
	// stdout, a line over the size limit, closed stdout, stopped reading stdin);
	// its process was killed.
	ErrProtocol = errors.New("mcp server broke the stdio protocol")
)

// ErrInvalidMessage: a message for a stdio server could not be written as
// one line (it holds a line break and is not valid JSON); it was not sent,
// and the process is unaffected.
var ErrInvalidMessage = rpc.ErrInvalidMessage

// errNotSent: the process (or HTTP session) went down before the request
// was registered, so the server never saw it and the call may safely go to
// a fresh process (session).
var errNotSent = errors.New("process went down before the request was sent")

// When an error happened, as a phrase that follows the event.
const (
	phaseCall       = "during the call"
	phaseNotSent    = "before the call was sent"
	phaseInitialize = "before answering initialize"
)

const stdoutHint = "a stdio MCP server must write only JSON-RPC messages to stdout; its logs belong on stderr"

// failure is why a process stopped serving. It is set once per process and
// shared read-only by every call it fails.
type failure struct {
	kind   error  // ErrExited, ErrProtocol or ErrClosed
	event  string // what the server did, a verb phrase: "exited"
	detail string // shown in parentheses: "exit status 1"
	hint   string // what to fix, when the event itself suggests it
	cause  error  // the underlying error, if any
	stderr []string
}

func (f *failure) Error() string { return f.event + " (" + f.detail + ")" }

// serverError is a failure told from the caller's point of view.
type serverError struct {
	server string
	phase  string
	f      *failure
}

func (e *serverError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp server %q %s %s", e.server, e.f.event, e.phase)
	if e.f.detail != "" {
		fmt.Fprintf(&b, " (%s)", e.f.detail)
	}
	if a := advice(e.f.kind, e.phase); a != "" {
		b.WriteString("; ")
		b.WriteString(a)
	}
	if e.f.hint != "" {
		b.WriteString("; ")
		b.WriteString(e.f.hint)
	}
	b.WriteString(stderrSuffix(e.f.stderr))
	return b.String()
}

func (e *serverError) Unwrap() []error {
	if e.f.cause == nil {
		return []error{e.f.kind}
	}
	return []error{e.f.kind, e.f.cause}
}

func advice(kind error, phase string) string {
	switch {
	case kind == ErrClosed:
		return ""
	case phase == phaseInitialize:
		if kind == ErrExited {
			return "check its command, arguments and environment"
		}
		return ""
	case kind == ErrExited:
		return "the next call restarts it"
	default:
		return "it was stopped and the next call restarts it"
	}
}

// stderrSuffix renders the tail of a server's stderr for an error message.
func stderrSuffix(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "; its last stderr:\n\t" + strings.Join(lines, "\n\t")
}

// startFailed wraps a start error so that errors.Is(err, wire.ErrStart) holds,
// keeping its message.
type startFailed struct{ err error }

func (e *startFailed) Error() string   { return e.err.Error() }
func (e *startFailed) Unwrap() []error { return []error{e.err, wire.ErrStart} }
