package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Authorizer is the OAuth client of a remote server (HTTPOptions.Auth), in
// the shape of the Go SDK's auth.OAuthHandler, which satisfies it: every
// request carries the token of TokenSource (none while it returns nil); a
// 401, or a 403 asking for more scope, is handed to Authorize, and when that
// succeeds the request is sent again, once, with the new token.
//
// Authorize closes the response's body. An error it returns fails the
// request with an error wrapping ErrAuthorization whose text is the
// Authorizer's (it names the server and the step that failed).
type Authorizer interface {
	TokenSource(context.Context) (oauth2.TokenSource, error)
	Authorize(context.Context, *http.Request, *http.Response) error
}

// ErrAuthorization: the server wants an OAuth token the gateway does not
// have and could not get (not authorized yet, a refused refresh, a revoked
// grant, an authorization server that failed).
var ErrAuthorization = errors.New("mcp server needs authorization")

// authError is an Authorizer's failure, kept whole by transportError.
type authError struct{ err error }

func (e *authError) Error() string   { return e.err.Error() }
func (e *authError) Unwrap() []error { return []error{ErrAuthorization, e.err} }

// sendAuthorized sends req with the Authorizer's token, and on a 401 (or a
// 403 that Authorize asks to retry) authorizes and sends it once more. The
// token is set on a copy of the request's headers (which are shared by the
// session's requests) and never logged.
func (h *HTTP) sendAuthorized(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	first, err := h.withToken(req)
	if err != nil {
		return nil, err
	}
	resp, err := h.client.Do(first)
	if err != nil || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	actx := ctx
	if dl, ok := ctx.Value(callDeadlineKey{}).(time.Time); ok {
		// The request's context outlives the call (it reads the response
		// stream to its end); an authorization the call waits for (a
		// person's step-up) ends with the call.
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	if h.opts.OnRequest != nil {
		actx = context.WithValue(actx, askClientKey{}, h.hooks.Request)
	}
	if err := h.opts.Auth.Authorize(actx, first, resp); err != nil {
		if isContextError(err) && ctx.Err() != nil {
			return nil, err
		}
		return nil, &authError{err: err}
	}
	if req.Body != nil && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		req.Body = body
	}
	second, err := h.withToken(req)
	if err != nil {
		return nil, err
	}
	return h.client.Do(second)
}

// callDeadlineKey carries the deadline of the call a request is sent for.
type callDeadlineKey struct{}

// withCallDeadline gives reqCtx the deadline of the call's ctx, if any, as
// a value (not as reqCtx's own deadline).
func withCallDeadline(reqCtx, ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithValue(reqCtx, callDeadlineKey{}, dl)
	}
	return reqCtx
}

// askClientKey carries, to an Authorizer, how to ask the client of the
// call a request is sent for (the upstream's OnRequest).
type askClientKey struct{}

// AskClient sends a request to the client whose call an Authorizer works
// for, as the server's own requests are (the upstream's OnRequest: the
// gateway routes it to the client with the call in flight); ok is false
// when ctx is not an Authorizer's or the upstream has no OnRequest.
func AskClient(ctx context.Context, method string, params json.RawMessage) (res json.RawMessage, werr *wire.Error, ok bool) {
	ask, _ := ctx.Value(askClientKey{}).(func(context.Context, string, json.RawMessage) (json.RawMessage, *wire.Error))
	if ask == nil {
		return nil, nil, false
	}
	res, werr = ask(ctx, method, params)
	return res, werr, true
}

// withToken returns req carrying the Authorizer's current token, if any.
func (h *HTTP) withToken(req *http.Request) (*http.Request, error) {
	ts, err := h.opts.Auth.TokenSource(req.Context())
	if err != nil {
		return nil, &authError{err: err}
	}
	if ts == nil {
		return req, nil
	}
	tok, err := ts.Token()
	if err != nil {
		return nil, &authError{err: fmt.Errorf("mcp server %q: cannot get an access token: %w", h.opts.Name, err)}
	}
	r := *req
	r.Header = req.Header.Clone()
	tok.SetAuthHeader(&r)
	return &r, nil
}
