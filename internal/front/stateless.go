package front

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/telemetry"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Header names of the 2026-07-28 era.
const (
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	headerParamPrefix = "Mcp-Param-"
)

// Errors of the 2026-07-28 specification.
const (
	codeHeaderMismatch                    = -32020 // headers do not match the body
	codeMissingRequiredClientCapabilities = -32021
)

// serveStateless serves one request of the 2026-07-28 era: no session; its
// version, identity and capabilities ride in its _meta, mirrored in headers
// that must match the body. Closing the response stream cancels it.
func (h *Handler) serveStateless(w http.ResponseWriter, r *http.Request, gw *gateway.Gateway, m *wire.Message) {
	switch {
	case m.IsResponse():
		writeRPCError(w, http.StatusBadRequest, nil, wire.Errorf(wire.CodeInvalidRequest, "a %s client sends no JSON-RPC responses", gateway.StatelessVersion))
		return
	case m.IsNotification():
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if werr := h.validateStateless(r, gw, m); werr != nil {
		if werr.Code == wire.CodeUnsupportedProtocolVersion {
			h.refuseVersion(w, m, r.Header.Get(headerProtocolVersion))
			return
		}
		writeRPCError(w, http.StatusBadRequest, m.ID, werr)
		return
	}
	// Closing the stream, the client's doing or the gateway's (a client too
	// slow to read it), cancels the request.
	ctx, done := h.Telemetry.StartRequest(r.Context(), telemetry.Request{Era: "stateless", Method: m.Method, ID: m.ID, Params: m.Params,
		ProtocolVersion: gateway.StatelessVersion, Header: r.Header})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &stream{h: h, w: w, ctx: r.Context(), cancel: cancel, reqID: m.ID}
	var reply gateway.Reply
	if m.Method == "subscriptions/listen" {
		reply = gw.Listen(ctx, m, st)
		if reply.Result == nil && reply.Error == nil {
			st.close() // the client went away: nothing more to write
			done(reply)
			return
		}
	} else {
		reply = gw.HandleStateless(ctx, m, st)
	}
	if reply.Error != nil {
		switch wire.DecodeError(reply.Error).Code {
		case wire.CodeMethodNotFound:
			st.status = http.StatusNotFound
		case codeMissingRequiredClientCapabilities:
			st.status = http.StatusBadRequest
		}
	}
	st.reply(m.ID, reply)
	done(reply)
}

// validateStateless checks a stateless request's version and its headers against its body.
func (h *Handler) validateStateless(r *http.Request, gw *gateway.Gateway, m *wire.Message) *wire.Error {
	headerVersion := r.Header.Get(headerProtocolVersion)
	meta := wire.Get(m.Params, "_meta")
	metaVersion, _ := wire.GetString(meta, gateway.MetaProtocolVersion)
	switch {
	case headerVersion == "":
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: the %s header is required with _meta %q", headerProtocolVersion, gateway.MetaProtocolVersion)
	case metaVersion == "":
		return wire.Errorf(wire.CodeInvalidParams, "missing _meta %q: a %s request carries its protocol version in _meta", gateway.MetaProtocolVersion, headerVersion)
	case headerVersion != metaVersion:
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s header value '%s' does not match body value '%s'", headerProtocolVersion, headerVersion, metaVersion)
	case headerVersion != gateway.StatelessVersion:
		return &wire.Error{Code: wire.CodeUnsupportedProtocolVersion}
	}
	if v := wire.Get(meta, gateway.MetaClientCapabilities); v == nil || v[0] != '{' {
		return wire.Errorf(wire.CodeInvalidParams, "missing or invalid _meta %q: every %s request carries its client's capabilities", gateway.MetaClientCapabilities, gateway.StatelessVersion)
	}
	method := r.Header.Get(headerMethod)
	if method == "" {
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: missing required %s header", headerMethod)
	}
	if method != m.Method {
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s header value '%s' does not match body value '%s'", headerMethod, method, m.Method)
	}
	var bodyName string
	switch m.Method {
	case "tools/call", "prompts/get":
		bodyName, _ = wire.GetString(m.Params, "name")
	case "resources/read":
		bodyName, _ = wire.GetString(m.Params, "uri")
	case "tasks/get", "tasks/update", "tasks/cancel":
		// The tasks extension (SEP-2663) names the task in Mcp-Name; a
		// value that differs from params.taskId is refused, a missing one
		// tolerated (clients written before the extension routed by it).
		id, _ := wire.GetString(m.Params, "taskId")
		if got := r.Header.Get(headerName); got != "" {
			if name, err := decodeHeaderValue(got); err != nil || name != id {
				return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s header value '%s' does not match body value '%s' (params.taskId)", headerName, got, id)
			}
		}
		return nil
	default:
		return nil
	}
	name, err := decodeHeaderValue(r.Header.Get(headerName))
	if err != nil {
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s header: %v", headerName, err)
	}
	if r.Header.Get(headerName) == "" {
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: missing required %s header for %s", headerName, m.Method)
	}
	if name != bodyName {
		return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s header value '%s' does not match body value '%s'", headerName, name, bodyName)
	}
	if m.Method == "tools/call" {
		return h.validateParamHeaders(r, gw, m)
	}
	return nil
}

// validateParamHeaders checks the Mcp-Param-* headers the tool's schema
// asks for against its arguments.
func (h *Handler) validateParamHeaders(r *http.Request, gw *gateway.Gateway, m *wire.Message) *wire.Error {
	params := gw.CallParamHeaders(m.Params) // the tool's, or for an app's call its own server's
	if len(params) == 0 {
		return nil
	}
	args := wire.Get(m.Params, "arguments")
	for _, p := range params {
		v := args
		for _, key := range p.Path {
			v = wire.Get(v, key)
		}
		if v == nil || string(v) == "null" {
			continue
		}
		// Present with an empty value is not missing: an empty string
		// argument is mirrored as an empty header.
		values := r.Header.Values(headerParamPrefix + p.Name)
		if len(values) == 0 {
			return wire.Errorf(codeHeaderMismatch, "Header mismatch: missing %s%s header for argument %s", headerParamPrefix, p.Name, strings.Join(p.Path, "."))
		}
		header := values[0]
		got, err := decodeHeaderValue(header)
		if err != nil {
			return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s%s header: %v", headerParamPrefix, p.Name, err)
		}
		if !sameValue(got, v) {
			return wire.Errorf(codeHeaderMismatch, "Header mismatch: %s%s header value '%s' does not match body value %s", headerParamPrefix, p.Name, got, v)
		}
	}
	return nil
}

// sameValue compares a header value with the JSON value it mirrors:
// strings as they are, integers numerically, booleans as true/false.
func sameValue(header string, v json.RawMessage) bool {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return header == s
	}
	if a, err := strconv.ParseFloat(header, 64); err == nil {
		if b, err := strconv.ParseFloat(string(v), 64); err == nil {
			return a == b
		}
	}
	return header == string(v)
}

// decodeHeaderValue undoes the "=?base64?...?=" sentinel encoding; a value
// without both markers is plain.
func decodeHeaderValue(v string) (string, error) {
	if !strings.HasPrefix(v, "=?base64?") || !strings.HasSuffix(v, "?=") || len(v) < len("=?base64??=") {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-len("?=")])
	if err != nil {
		return "", fmt.Errorf("malformed base64 value: %w", err)
	}
	return string(b), nil
}
