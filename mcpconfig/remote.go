package mcpconfig

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Transports of a remote server, as Server.Transport holds them.
const (
	TransportHTTP = "http" // streamable HTTP
	TransportSSE  = "sse"  // the legacy HTTP+SSE transport
)

// ErrMissingSecret is wrapped by the *Error ResolveHeaders returns when a
// placeholder has no value.
var ErrMissingSecret = errors.New("header placeholder not set")

// remoteProps are the properties of a remote entry of the mcp object.
var remoteProps = []string{"url", "headers", "transport", "envs", "oauth", "discoverFirst"}

// reservedHeaders are set by the gateway's transport itself (or by Go's
// HTTP client); a configured value would be overridden or break the exchange.
var reservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Keep-Alive",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// resolveRemote turns an entry with "url" into a Server.
func resolveRemote(e *entry, envs map[string]string) (Server, []error) {
	s := Server{Name: e.name, Kind: KindRemote, Env: envs}
	var errs []error
	if e.has("runCmd") || e.has("run_cmd") {
		p := "runCmd"
		if !e.has(p) {
			p = "run_cmd"
		}
		errs = append(errs, &Error{Server: e.name, Property: p,
			Message: fmt.Sprintf(`properties "url" and %q cannot be given together; a server is remote (url) or a command (runCmd)`, p)})
	}
	u, err := remoteURL(e.name, "url", e.props["url"])
	errs = appendNonNil(errs, err)
	s.URL = u
	if raw, ok := e.props["headers"]; ok {
		h, errs1 := headerTemplates(e.name, "headers", raw)
		s.Headers = h
		errs = append(errs, errs1...)
	}
	if raw, ok := e.props["transport"]; ok {
		t, _ := jsonString(raw)
		switch t {
		case TransportHTTP, TransportSSE:
			s.Transport = t
		default:
			errs = append(errs, &Error{Server: e.name, Property: "transport",
				Message: fmt.Sprintf(`property "transport" must be "http" (streamable HTTP) or "sse" (HTTP+SSE), not %s`, quoteRaw(raw))})
		}
	}
	if raw, ok := e.props["discoverFirst"]; ok {
		switch string(raw) {
		case "null":
		case "true", "false":
			s.InitializeFirst = string(raw) == "false"
		default:
			errs = append(errs, &Error{Server: e.name, Property: "discoverFirst",
				Message: fmt.Sprintf(`property "discoverFirst" must be true or false, not %s`, quoteRaw(raw))})
		}
	}
	if raw, ok := e.props["oauth"]; ok {
		o, errs1 := parseOAuth(e.name, raw)
		s.OAuth = o
		errs = append(errs, errs1...)
		for h := range s.Headers {
			if o != nil && strings.EqualFold(h, "Authorization") {
				errs = append(errs, &Error{Server: e.name, Property: "oauth", Header: h,
					Message: `properties "oauth" and an Authorization header cannot be given together; the gateway sets Authorization from its OAuth token`})
			}
		}
	}
	return s, errs
}

// quoteRaw shows a JSON value in a message: a string quoted, anything else
// by its type.
func quoteRaw(raw []byte) string {
	if s, ok := jsonString(raw); ok {
		return fmt.Sprintf("%q", s)
	}
	return describe(raw)
}

// remoteURL validates a server's URL: http or https, with a host, without
// credentials or placeholders.
func remoteURL(server, prop string, raw []byte) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", &Error{Server: server, Property: prop, Message: fmt.Sprintf("property %q ", prop) + fmt.Sprintf(format, args...)}
	}
	s, ok := jsonString(raw)
	if !ok {
		return fail("must be a string, not %s", describe(raw))
	}
	if strings.TrimSpace(s) == "" {
		return fail("must be an http:// or https:// URL, not empty")
	}
	if strings.Contains(s, "${") {
		return fail(`holds a placeholder; placeholders are replaced only in "headers" (put the secret in a header)`)
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail("is not a valid URL: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fail("must be an http:// or https:// URL, not %q", s)
	case u.Host == "" || u.Hostname() == "":
		return fail("has no host: %q", s)
	case u.User != nil:
		return fail(`must not hold credentials (user:password@); send them in "headers", e.g. {"Authorization": "Basic ${CREDENTIALS}"}`)
	}
	return s, nil
}

// headerTemplates validates a headers object: names are HTTP field names
// the transport does not set itself, given once (names ignore case); values
// are strings whose placeholders are well formed.
func headerTemplates(server, prop string, raw []byte) (map[string]string, []error) {
	if kind(raw) != "object" {
		return nil, []error{&Error{Server: server, Property: prop,
			Message: fmt.Sprintf("property %q must be an object of header names to strings, not %s", prop, describe(raw))}}
	}
	ms, err := members(raw)
	if err != nil {
		return nil, []error{&Error{Server: server, Property: prop, Message: syntaxMessage(err), Err: err}}
	}
	var errs []error
	headers := make(map[string]string, len(ms))
	seen := map[string]string{} // lower-cased name → as given
	for _, m := range ms {
		fail := func(format string, args ...any) {
			errs = append(errs, &Error{Server: server, Property: prop, Header: m.key, Message: fmt.Sprintf(format, args...)})
		}
		lower := strings.ToLower(m.key)
		switch {
		case !isHeaderName(m.key):
			fail("header %q is not a valid header name; use letters, digits and !#$%%&'*+-.^_`|~", m.key)
			continue
		case slices.ContainsFunc(reservedHeaders, func(h string) bool { return strings.EqualFold(h, m.key) }):
			fail("header %q is set by the gateway itself; remove it", m.key)
			continue
		case seen[lower] != "":
			fail("header %q is given more than once (as %q too; header names ignore case)", m.key, seen[lower])
			continue
		}
		seen[lower] = m.key
		v, ok := jsonString(m.value)
		if !ok {
			fail("header %q must be a string, not %s", m.key, describe(m.value))
			continue
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			fail("header %q must not contain a line break or NUL character", m.key)
			continue
		}
		if _, err := expandPlaceholders(v, func(string) (string, bool) { return "", true }); err != nil {
			fail("header %q: %s", m.key, err.Error())
			continue
		}
		headers[m.key] = v
	}
	if len(headers) == 0 || len(errs) > 0 {
		return nil, errs
	}
	return headers, nil
}

// isHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// placeholderError is a malformed or unset placeholder; its text is
// completed by the caller.
type placeholderError struct {
	text    string
	name    string // the variable, for an unset one
	missing bool
}

func (e *placeholderError) Error() string { return e.text }

// expandPlaceholders replaces each ${NAME} (or ${env:NAME}, the spelling
// of VS Code and Cursor) in s by lookup(NAME). $${ writes a literal ${;
// any other $ is kept as it is.
func expandPlaceholders(s string, lookup func(name string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", &placeholderError{text: fmt.Sprintf("%q is not closed; write ${NAME}", s[i:])}
		}
		inner := s[i+2 : i+end]
		name := strings.TrimPrefix(inner, "env:")
		if strings.HasPrefix(inner, "input:") {
			return "", &placeholderError{text: fmt.Sprintf(`${%s}: input variables are not supported; put the value in the server's environment variables and write ${NAME}`, inner)}
		}
		if !isPlaceholderName(name) {
			return "", &placeholderError{text: fmt.Sprintf(`${%s} is not a valid placeholder; write ${NAME} with NAME made of letters, digits, "_", "-" and ".", starting with a letter or "_"`, inner)}
		}
		v, ok := lookup(name)
		if !ok {
			return "", &placeholderError{text: fmt.Sprintf("${%s} is not set", name), name: name, missing: true}
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// isPlaceholderName reports whether s matches ^[A-Za-z_][A-Za-z0-9_.-]*$:
// an environment variable's name, or a host secret's such as "api-key".
func isPlaceholderName(s string) bool {
	if s == "" || !(s[0] == '_' || s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c == '-' || c == '.' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Placeholders returns the names of the variables that Headers' values
// refer to (${NAME}), sorted, once each.
func (s *Server) Placeholders() []string {
	var names []string
	for _, v := range s.Headers {
		expandPlaceholders(v, func(name string) (string, bool) { //nolint:errcheck // validated by Parse
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
			return "", true
		})
	}
	slices.Sort(names)
	return names
}

// ResolveHeaders returns the headers of a remote server with every
// placeholder ${NAME} replaced by its value. lookup gives the value of a
// name; nil means the server's own Env (its "envs"), which is how the
// sandbox gateway resolves them. Serve mode can pass a lookup of its own
// (the environment, a secrets store).
//
// A placeholder without a value is an *Error wrapping ErrMissingSecret that
// names the server, the header and the placeholder, never a value; so is a
// value that would break the header (a line break or NUL). Servers without
// headers get nil.
func (s *Server) ResolveHeaders(lookup func(name string) (string, bool)) (map[string]string, error) {
	if len(s.Headers) == 0 {
		return nil, nil
	}
	hint := ""
	if lookup == nil {
		lookup = func(name string) (string, bool) { v, ok := s.Env[name]; return v, ok }
		hint = `; add it to the server's "envs"`
	}
	names := make([]string, 0, len(s.Headers))
	for n := range s.Headers {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make(map[string]string, len(s.Headers))
	var errs []error
	for _, n := range names {
		var bad string
		v, err := expandPlaceholders(s.Headers[n], func(name string) (string, bool) {
			v, ok := lookup(name)
			if ok && strings.ContainsAny(v, "\r\n\x00") && bad == "" {
				bad = name
			}
			return v, ok
		})
		var pe *placeholderError
		switch {
		case errors.As(err, &pe) && pe.missing:
			errs = append(errs, &Error{Server: s.Name, Property: "headers", Header: n, Env: pe.name, Err: ErrMissingSecret,
				Message: fmt.Sprintf("header %q needs ${%s}, which is not set%s", n, pe.name, hint)})
		case err != nil:
			errs = append(errs, &Error{Server: s.Name, Property: "headers", Header: n, Message: fmt.Sprintf("header %q: %v", n, err)})
		case bad != "":
			errs = append(errs, &Error{Server: s.Name, Property: "headers", Header: n, Env: bad,
				Message: fmt.Sprintf("header %q: the value of ${%s} contains a line break or NUL character, which a header cannot carry", n, bad)})
		default:
			out[n] = v
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return out, nil
}

// Expand replaces each ${NAME} placeholder in s by lookup(NAME), with the
// rules of header values ($${ writes a literal ${). An unset or malformed
// placeholder is an error naming it, never a value.
func Expand(s string, lookup func(name string) (string, bool)) (string, error) {
	return expandPlaceholders(s, lookup)
}

// PlaceholderNames returns the names of the placeholders in s, in order,
// once each, or an error for a malformed one.
func PlaceholderNames(s string) ([]string, error) {
	var names []string
	_, err := expandPlaceholders(s, func(name string) (string, bool) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return "", true
	})
	return names, err
}
