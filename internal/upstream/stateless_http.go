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

// Stateless reports whether the server's current session is of the
// 2026-07-28 era (the gateway then bridges input-required results for
// session-era clients, as for stdio servers of that era).
func (h *HTTP) Stateless() bool {
	s := h.sess.Load()
	return s != nil && s.stateless.Load()
}

// discoverStateless asks a server that refused initialize whether it speaks
// 2026-07-28; if so the session becomes a stateless one with a synthesized
// initialize result, and it returns true.
func (s *session) discoverStateless(ctx context.Context) bool {
	if s.sse {
		return false
	}
	s.stateless.Store(true)
	s.setVersion(StatelessVersion)
	params := statelessMeta(nil, s.h.opts.ClientInfo, s.h.opts.Capabilities)
	resp, err := s.call(ctx, "server/discover", params)
	if err == nil && versionRejected(resp) {
		// -32022: the server refused the version, and names 2026-07-28
		// among those it supports: ask once more (SEP-2575).
		resp, err = s.call(ctx, "server/discover", params)
	}
	init, ok := discovered(resp)
	if err != nil || !ok {
		s.stateless.Store(false)
		s.setVersion("")
		return false
	}
	s.initResult = init
	s.jsonAnswers = false
	s.h.log.Debug(fmt.Sprintf("mcp server %q speaks %s", s.name(), StatelessVersion))
	return true
}

// statelessParams returns params with the 2026-07-28 request _meta filled
// in (statelessMeta): for params without a _meta, the one built once.
func (h *HTTP) statelessParams(params json.RawMessage) json.RawMessage {
	if wire.Get(params, "_meta") == nil {
		h.metaOnce.Do(func() { h.requestMeta = requestMeta(h.opts.ClientInfo, h.opts.Capabilities) })
		if out, err := wire.Set(params, "_meta", h.requestMeta); err == nil {
			return out
		}
	}
	return statelessMeta(params, h.opts.ClientInfo, h.opts.Capabilities)
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
	return json.Unmarshal(resp.Error, &e) == nil && e.Code == codeUnsupportedVersion && slices.Contains(e.Data.Supported, StatelessVersion)
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

// messageHeaders are the headers of one message of its own, beside the
// session's: Mcp-Method, and for a request naming a tool, prompt or
// resource Mcp-Name, and the Mcp-Param-* headers of a tools/call.
type messageHeaders struct {
	method string       // Mcp-Method; "" sends none
	name   string       // Mcp-Name; "" sends none
	params []paramValue // Mcp-Param-*
}

// paramValue is one Mcp-Param-* header of a call.
type paramValue struct{ header, value string }

// requestHeaders are the headers of a request of method with params.
func requestHeaders(method string, params json.RawMessage, p *ParamHeaders) messageHeaders {
	mh := messageHeaders{method: method}
	switch method {
	case "tools/call", "prompts/get":
		mh.name, _ = wire.GetString(params, "name")
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		mh.name, _ = wire.GetString(params, "uri")
	}
	if method == "tools/call" {
		mh.params = p.values(mh.name, params)
	}
	return mh
}

// count is the number of headers mh adds.
func (mh *messageHeaders) count() int {
	n := len(mh.params)
	if mh.method != "" {
		n++
	}
	if mh.name != "" {
		n++
	}
	return n
}

// addTo sets mh's headers on header, a map of the request's own: they
// override any of the same name among the configured ones.
func (mh *messageHeaders) addTo(header http.Header) {
	if mh.method == "" && mh.name == "" && len(mh.params) == 0 {
		return
	}
	// One backing array for the values: a request's headers are read-only
	// once built, and net/http copies them before any change.
	values := make([]string, 0, mh.count())
	add := func(key, value string) {
		values = append(values, value)
		header[key] = values[len(values)-1 : len(values) : len(values)]
	}
	if mh.method != "" {
		add("Mcp-Method", mh.method)
	}
	if mh.name != "" {
		add("Mcp-Name", mh.name)
	}
	for _, pv := range mh.params {
		add(pv.header, pv.value)
	}
}

// ParamHeaders remembers, per tool, the arguments a server's tools/list
// designates for Mcp-Param-* headers (an "x-mcp-header" name on a property
// of the input schema, SEP-2243), so that its tools/call requests carry
// them. One is shared by every upstream session of a server
// (HTTPOptions.ParamHeaders); safe for concurrent use.
type ParamHeaders struct {
	m sync.Map // tool name → []paramHeader
}

// paramHeader is one designated argument: its parameter and its header
// (Mcp-Param-<name>, canonical).
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
			hs = append(hs, paramHeader{param: param, header: http.CanonicalHeaderKey("Mcp-Param-" + name)})
		}
		if len(hs) == 0 {
			p.m.Delete(t.Name)
			continue
		}
		p.m.Store(t.Name, hs)
	}
}

// values returns the Mcp-Param-* headers of a tools/call of the tool name:
// each designated argument that is a string, number or boolean (null and
// absent ones are left out), Base64-encoded as =?base64?...?= when it is
// not plain printable ASCII without surrounding spaces. Nil when the tool
// has none.
func (p *ParamHeaders) values(name string, params json.RawMessage) []paramValue {
	v, ok := p.m.Load(name)
	if !ok {
		return nil
	}
	args := wire.Get(params, "arguments")
	var out []paramValue
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
		out = append(out, paramValue{header: ph.header, value: headerValue(value)})
	}
	return out
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
