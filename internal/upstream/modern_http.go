package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// A remote server of the 2026-07-28 era has no initialize and no session.
// When a server refuses initialize (a JSON-RPC error or HTTP 400), the new
// session asks it server/discover; if it speaks 2026-07-28, every request
// then carries the era's request _meta (version, the gateway's identity and
// capabilities) in its params and the MCP-Protocol-Version header; else
// the session starts with initialize as before. Every POST carries the
// Mcp-Method header, and Mcp-Name for a tool, prompt or resource (SEP-2243),
// in both eras. The session object stays (it owns the streams of calls)
// but holds no session id.

// Modern reports whether the server's current session is of the
// 2026-07-28 era (the gateway then bridges input-required results for
// session-era clients, as for stdio servers of that era).
func (h *HTTP) Modern() bool {
	s := h.sess.Load()
	return s != nil && s.modern.Load()
}

// modernHeadersKey carries a modern request's own headers from the session's
// call to send.
type modernHeadersKey struct{}

// discoverModern asks a server that refused initialize whether it speaks
// 2026-07-28; if so the session becomes a modern one with a synthesized
// initialize result, and it returns true.
func (s *session) discoverModern(ctx context.Context) bool {
	if s.sse {
		return false
	}
	s.modern.Store(true)
	s.setVersion(ModernVersion)
	resp, err := s.call(ctx, "server/discover", modernMeta(nil, s.h.opts.ClientInfo, s.h.opts.Capabilities))
	var res struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err != nil || resp.Error != nil || json.Unmarshal(resp.Result, &res) != nil || !slices.Contains(res.SupportedVersions, ModernVersion) {
		s.modern.Store(false)
		s.setVersion("")
		return false
	}
	init := map[string]any{"protocolVersion": ModernVersion, "capabilities": res.Capabilities}
	if res.Meta.ServerInfo != nil {
		init["serverInfo"] = res.Meta.ServerInfo
	}
	if res.Instructions != "" {
		init["instructions"] = res.Instructions
	}
	s.initResult, _ = json.Marshal(init)
	s.jsonAnswers = false
	s.h.log.Debug(fmt.Sprintf("mcp server %q speaks %s", s.name(), ModernVersion))
	return true
}

// initializeRefused reports whether an initialize failure may be a server
// of the 2026-07-28 era refusing it: a JSON-RPC error or an HTTP 400.
func initializeRefused(err error, resp Response) bool {
	if err == nil {
		return resp.Error != nil
	}
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusBadRequest
}

// modernHeaders are the Mcp-Method and Mcp-Name headers of a request.
func modernHeaders(method string, params json.RawMessage) http.Header {
	hdr := http.Header{"Mcp-Method": {method}}
	var name string
	switch method {
	case "tools/call", "prompts/get":
		name, _ = wire.GetString(params, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		name, _ = wire.GetString(params, "uri")
	}
	if name != "" {
		hdr.Set("Mcp-Name", name)
	}
	return hdr
}

// withModernHeaders returns req with the per-request headers its context
// carries, if any (on a copy of its shared headers).
func withModernHeaders(req *http.Request) *http.Request {
	extra, _ := req.Context().Value(modernHeadersKey{}).(http.Header)
	if extra == nil {
		return req
	}
	r := *req
	r.Header = req.Header.Clone()
	for k, v := range extra {
		r.Header[k] = v
	}
	return &r
}

// modernMeta returns params with the 2026-07-28 request _meta filled in
// where the caller left it out (a 2026-07-28 client's request has it all
// and is sent as it is).
func modernMeta(params, clientInfo, capabilities json.RawMessage) json.RawMessage {
	meta := wire.Get(params, "_meta")
	changed := false
	for _, kv := range [...]struct {
		key   string
		value json.RawMessage
	}{
		{"io.modelcontextprotocol/protocolVersion", modernVersionJSON},
		{"io.modelcontextprotocol/clientInfo", clientInfo},
		{"io.modelcontextprotocol/clientCapabilities", capabilities},
	} {
		if wire.Get(meta, kv.key) == nil {
			m, err := wire.Set(meta, kv.key, kv.value)
			if err != nil {
				return params
			}
			meta, changed = m, true
		}
	}
	if !changed {
		return params
	}
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	out, err := wire.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}
