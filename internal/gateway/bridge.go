package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// maxInputRounds bounds the input requests of one call.
const maxInputRounds = 16

func isInputRequired(result json.RawMessage) bool {
	t, _ := wire.GetString(result, "resultType")
	return t == "input_required"
}

// callAcrossEras sends a call to up, bridging the eras when the client's
// and the upstream's differ: the request's _meta is adapted (bridgeMeta),
// and a 2026-07-28 server's input-required result for a session-era client
// is answered by asking the client the old way, then retried with its
// answers. giveUp is the client's error when the server asks too often.
func (s *Session) callAcrossEras(ctx context.Context, c *call, up Upstream, method string, params json.RawMessage) (resp *wire.Response, giveUp *wire.Error, err error) {
	statelessServer := isStateless(up)
	params = s.bridgeMeta(params, statelessServer)
	resp, err = up.Call(ctx, method, params)
	for round := 0; err == nil && statelessServer && !s.stateless && isInputRequired(resp.Result); round++ {
		if round == maxInputRounds {
			return nil, wire.Errorf(wire.CodeInternalError, "mcp server %q asked for input %d times in a row; giving up", c.server.name, round), nil
		}
		var retry json.RawMessage
		if retry, err = s.fulfil(ctx, c, params, resp.Result); err != nil {
			break
		}
		resp, err = up.Call(ctx, method, retry)
	}
	return resp, nil, err
}

// bridgeMeta adapts a request's _meta to the era of the upstream it goes
// to, when the client's differs.
func (s *Session) bridgeMeta(params json.RawMessage, statelessServer bool) json.RawMessage {
	switch {
	case statelessServer && !s.stateless:
		return s.requestMeta(params)
	case s.stateless && !statelessServer:
		return stripStatelessMeta(params)
	}
	return params
}

// requestMeta gives a session-era client's request the _meta a 2026-07-28
// server expects: the client's own identity, capabilities and log level.
func (s *Session) requestMeta(params json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	set := func(key string, v json.RawMessage) {
		if v != nil && wire.Get(meta, key) == nil {
			if m, err := wire.Set(meta, key, v); err == nil {
				meta = m
			}
		}
	}
	set(MetaProtocolVersion, json.RawMessage(`"`+StatelessVersion+`"`))
	set(MetaClientInfo, s.clientInfo)
	caps := s.capabilities
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	set(MetaClientCapabilities, caps)
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	if level >= 0 {
		set(MetaLogLevel, wire.AppendString(nil, logLevels[level]))
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// fulfil asks the session-era client each input request of a 2026-07-28
// server's input-required result, and returns the params of the retry.
func (s *Session) fulfil(ctx context.Context, c *call, params, result json.RawMessage) (json.RawMessage, error) {
	var requests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(wire.Get(result, "inputRequests"), &requests); err != nil {
		return nil, fmt.Errorf("mcp server %q: malformed inputRequests: %w", c.server.name, err)
	}
	answers := map[string]json.RawMessage{}
	for key, req := range requests {
		if capability, ok := clientCapabilityFor[req.Method]; ok && !s.hasCapability(capability) {
			return nil, fmt.Errorf("mcp server %q needs the client capability %q for %s, which the client did not declare", c.server.name, capability, req.Method)
		}
		res, werr := s.request(ctx, c.stream, req.Method, req.Params)
		if werr != nil {
			return nil, werr
		}
		answers[key] = res
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	if params, err = wire.Set(params, "inputResponses", b); err != nil {
		return nil, err
	}
	if state := wire.Get(result, "requestState"); state != nil {
		return wire.Set(params, "requestState", state)
	}
	return params, nil
}

// statelessMetaKeys are the _meta members of the 2026-07-28 era a
// session-era server must not see: the protocol version makes a request one
// of that era to a dual-era server (the Go and TypeScript SDKs decide on it
// alone), and the client's identity and log level are the session's there.
// The client's capabilities stay: they are what the calling client
// declared, where the session's are the gateway's offer to all its clients
// (SharedClientCapabilities), and a server that reads them per request (the
// Go SDK's ServerRequest.ClientCapabilities does, in either era) then asks
// a 2026-07-28 client only for what it can answer and refuses it with
// -32021 where it would refuse it directly.
var statelessMetaKeys = []string{MetaProtocolVersion, MetaClientInfo, MetaLogLevel}

// stripStatelessMeta removes those members, keeping the rest of _meta
// (the client's capabilities, progressToken and any of the client's own).
func stripStatelessMeta(params json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	if meta == nil {
		return params
	}
	stripped, removed := wire.Delete(meta, statelessMetaKeys...)
	if !removed {
		return params
	}
	out, err := wire.Set(params, "_meta", stripped)
	if err != nil {
		return params
	}
	return out
}
