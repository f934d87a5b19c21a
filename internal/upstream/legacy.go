package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The legacy HTTP+SSE framing (MCP 2024-11-05): one event stream opened
// with GET carries everything the server sends; messages are POSTed to the
// endpoint it names first.

// openLegacyStream opens the HTTP+SSE event stream and waits, within ctx,
// for its endpoint event; the stream then lives as long as the session.
func (s *session) openLegacyStream(ctx context.Context) error {
	stopWaiting := context.AfterFunc(ctx, s.cancel)
	resp, err := s.do(s.ctx, http.MethodGet, nil, "", nil)
	if err != nil {
		stopWaiting()
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q did not open its event stream at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
		return s.transportError("opening the event stream", err)
	}
	fail := func(err error) error {
		resp.Body.Close()
		stopWaiting()
		if ctx.Err() != nil {
			return fmt.Errorf("mcp server %q sent no endpoint event at %s: %w", s.name(), redactURL(s.h.url), ctx.Err())
		}
		return err
	}
	if err := s.checkStatus(resp, "the GET of its event stream", 0); err != nil {
		return fail(err)
	}
	if ct := mediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q answered the GET of its event stream with Content-Type %q; want text/event-stream", s.name(), ct))
	}
	sr := newSSEReader(resp.Body, s.h.opts.MaxResponseBytes, true)
	ev, err := sr.next()
	if err != nil {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q closed its event stream before sending the endpoint event (%v)", s.name(), streamEnd(err)))
	}
	if ev.name != "endpoint" || ev.oversize {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q began its event stream with a %q event; the HTTP+SSE transport begins with \"endpoint\"", s.name(), ev.name))
	}
	endpoint, err := s.h.url.Parse(strings.TrimSpace(string(ev.data)))
	if err != nil {
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q sent an invalid endpoint: %v", s.name(), netError(err)))
	}
	endpoint.Host = removeEmptyPort(endpoint.Host)
	if endpoint.Scheme != s.h.url.Scheme || endpoint.Host != s.h.url.Host {
		// The configured headers (credentials) must not go to another origin.
		return fail(newRemoteError([]error{ErrRemoteProtocol}, "mcp server %q sent an endpoint on another origin (%s); refused", s.name(), redactURL(endpoint)))
	}
	if !stopWaiting() {
		resp.Body.Close()
		return fmt.Errorf("mcp server %q: opening the event stream: %w", s.name(), ctx.Err())
	}
	s.endpoint = endpoint
	if !s.rpc.Go(func() { s.readLegacyStream(sr, resp.Body) }) {
		resp.Body.Close()
		return s.endError("initialize")
	}
	return nil
}

// readLegacyStream reads the HTTP+SSE event stream, the only way the server
// talks to the client; when it ends, the session is down.
func (s *session) readLegacyStream(sr *sseReader, body io.ReadCloser) {
	_, err := s.consume(sr, 0)
	body.Close()
	if s.ctx.Err() != nil {
		return
	}
	end := streamEnd(err)
	if s.stop(&sessionEnd{phrase: "closed its event stream (" + end + ")"}) {
		s.h.log.Warn(fmt.Sprintf("mcp server %q closed its event stream (%s); the next call reconnects", s.name(), end))
	}
}
