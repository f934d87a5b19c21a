package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-gateway/mcp-gateway/internal/upstream/rpc"
)

// Kinds of failure of a remote (HTTP) upstream a caller can test for with
// errors.Is, besides ErrClosed and ErrNotRunning.
var (
	// ErrResponseTooLarge: one response was longer than
	// HTTPOptions.MaxResponseBytes; the call failed.
	ErrResponseTooLarge = rpc.ErrResponseTooLarge
	// ErrSessionEnded: the server ended the session (or, on the legacy
	// transport, its event stream) while the call was waiting; whether it
	// acted on the call is unknown, so the call is not retried. The next
	// call opens a new session.
	ErrSessionEnded = errors.New("mcp server ended the session")
	// ErrRemoteProtocol: the server broke the HTTP transport (a wrong
	// content type, a body that is not JSON-RPC, a redirect).
	ErrRemoteProtocol = errors.New("mcp server broke the HTTP transport")
)

// errSessionExpired: the server answered 404 to a request carrying the
// session id, so it did not process the request: safe to retry on a new
// session.
var errSessionExpired = errors.New("the server no longer knows the session (HTTP 404)")

// remoteError is an error of a remote upstream: its text is complete and
// errors.Is finds its kinds.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.kinds }

func newRemoteError(kinds []error, format string, args ...any) error {
	return &remoteError{msg: fmt.Sprintf(format, args...), kinds: kinds}
}

// statusError is an unexpected HTTP status, with the start of its body.
type statusError struct {
	code    int
	status  string
	preview string
}

func (e *statusError) Error() string {
	s := "HTTP " + e.status
	if e.status == "" {
		s = "HTTP " + strconv.Itoa(e.code)
	}
	if e.preview != "" {
		s += ": " + e.preview
	}
	return s
}

// preview renders the start of a body for a message: one line, printable.
func preview(b []byte) string {
	const max = 200
	cut := len(b) > max
	if cut {
		b = b[:max]
		for len(b) > 0 && !utf8.RuneStart(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if cut {
		s += "…"
	}
	return s
}

// statusText is "401 Unauthorized" for a response.
func statusText(resp *http.Response) string {
	if resp.Status != "" {
		return resp.Status
	}
	return strconv.Itoa(resp.StatusCode)
}

// redactURL returns u without user information, query and fragment, which
// may carry secrets: what errors and logs may show.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// netError strips the *url.Error layer, whose text repeats the whole URL
// (query included), from an error of http.Client.Do.
func netError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
