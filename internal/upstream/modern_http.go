package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

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
	params := modernMeta(nil, s.h.opts.ClientInfo, s.h.opts.Capabilities)
	resp, err := s.call(ctx, "server/discover", params)
	if err == nil && versionRejected(resp) {
		// -32022: the server refused the version, and names 2026-07-28
		// among those it supports: ask once more (SEP-2575).
		resp, err = s.call(ctx, "server/discover", params)
	}
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

// codeUnsupportedVersion is the error of a request whose protocol version
// the server does not support (SEP-2575); its data lists the supported.
const codeUnsupportedVersion = -32022

// versionRejected reports an answer refusing the request's protocol
// version while naming 2026-07-28 among the supported ones.
func versionRejected(resp wire.Response) bool {
	if resp.Error == nil {
		return false
	}
	var e struct {
		Code int `json:"code"`
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	}
	return json.Unmarshal(resp.Error, &e) == nil && e.Code == codeUnsupportedVersion && slices.Contains(e.Data.Supported, ModernVersion)
}

// initializeRefused reports whether an initialize failure may be a server
// of the 2026-07-28 era refusing it: a JSON-RPC error or an HTTP 400.
func initializeRefused(err error, resp wire.Response) bool {
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

// ParamHeaders remembers, per tool, the arguments a server's tools/list
// designates for Mcp-Param-* headers (an "x-mcp-header" name on a property
// of the input schema, SEP-2243), so that its tools/call requests carry
// them. One is shared by every upstream session of a server
// (HTTPOptions.ParamHeaders); safe for concurrent use.
type ParamHeaders struct {
	m sync.Map // tool name → []paramHeader
}

type paramHeader struct{ param, header string }

// learn records the designated parameters of the tools of a tools/list
// result. An annotation that is not a valid header name is ignored.
func (p *ParamHeaders) learn(result json.RawMessage) {
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &list) != nil {
		return
	}
	for _, t := range list.Tools {
		var hs []paramHeader
		seen := map[string]bool{}
		for param, schema := range t.InputSchema.Properties {
			name, ok := wire.GetString(schema, "x-mcp-header")
			if !ok || !validHeaderName(name) || seen[strings.ToLower(name)] {
				continue
			}
			seen[strings.ToLower(name)] = true
			hs = append(hs, paramHeader{param: param, header: "Mcp-Param-" + name})
		}
		if len(hs) == 0 {
			p.m.Delete(t.Name)
			continue
		}
		p.m.Store(t.Name, hs)
	}
}

// add sets the Mcp-Param-* headers of a tools/call on hdr: each designated
// argument that is a string, number or boolean (null and absent ones are
// left out), Base64-encoded as =?base64?...?= when it is not plain
// printable ASCII without surrounding spaces.
func (p *ParamHeaders) add(hdr http.Header, params json.RawMessage) {
	name, _ := wire.GetString(params, "name")
	v, ok := p.m.Load(name)
	if !ok {
		return
	}
	args := wire.Get(params, "arguments")
	for _, ph := range v.([]paramHeader) {
		raw := wire.Get(args, ph.param)
		var value string
		switch {
		case raw == nil || string(raw) == "null":
			continue
		case raw[0] == '"':
			if json.Unmarshal(raw, &value) != nil {
				continue
			}
		case raw[0] == '{' || raw[0] == '[':
			continue
		default:
			value = string(raw) // a number or a boolean, as written
		}
		hdr.Set(ph.header, headerValue(value))
	}
}

// headerValue is value as an Mcp-Param-* header carries it.
func headerValue(value string) string {
	plain := value == strings.TrimSpace(value)
	for i := 0; plain && i < len(value); i++ {
		plain = value[i] >= 0x20 && value[i] <= 0x7e
	}
	if plain {
		return value
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(value)) + "?="
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
