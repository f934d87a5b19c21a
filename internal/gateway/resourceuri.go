package gateway

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// How a resource URI is decided.
//
// A forbid of a listed resource or of a resource template must hold for
// every URI the server could resolve to that resource or template, not only
// for the URI the gateway's own RFC 6570 matcher picks: servers read URIs
// more loosely than RFC 6570 (the Python SDK's FastMCP splits off the query,
// strips slashes and lets {id} take any run of characters but '/'; URL
// parsers in front of a server lowercase the scheme and remove dot
// segments). So a URI is compared in its canonical form (normalizeURI) with
// the canonical forms of the listed URIs, and matched against each template
// both strictly and under a loose reading (looseTemplate); every listed
// resource and template a server could take it for is a candidate, and a
// forbid of any candidate refuses it (see resourceCandidates and
// Gateway.decideCandidates).

// resourceCandidates are the listed resources and templates of a server
// the server could resolve a URI to, other than the URI itself: the
// listed URIs with its canonical form (in any of its readings) and the
// templates matching it strictly or under the loose reading, or having its
// canonical form (a completion refers to a template by its text). A URI listed
// as it is counts too: a server may try its templates first.
func (r *Router) resourceCandidates(server, uri string) []string {
	var out []string
	readings := uriReadings(uri)
	for _, it := range r.view(kindResources).items {
		if it.server.name == server && it.original != uri && containsString(readings, it.canon) {
			out = append(out, it.original)
		}
	}
	for _, it := range r.view(kindTemplates).items {
		if it.server.name != server || it.original == uri {
			continue
		}
		// The last: a completion's reference to the template, written another way.
		if it.match.matches(uri) || it.match.mayMatch(readings) || containsString(readings, it.canon) {
			out = append(out, it.original)
		}
	}
	return out
}

// normalizeURI returns the canonical form of a URI: what URI matchers
// commonly ignore taken out. The query and the fragment are cut off;
// percent-encoded unreserved characters are decoded (and the hex digits of
// the other escapes upper-cased); the scheme and the authority are
// lower-cased; empty path segments (so a trailing slash), "." segments and
// ".." segments with what they cancel are removed. It never fails: any string
// has a canonical form, and a canonical form is its own (normalizeURI is
// idempotent).
func normalizeURI(uri string) string { return normalizeCut(uri, "?#") }

// uriReadings returns the canonical forms of the ways a server may read a
// URI: with query and fragment cut off, with only one of them cut off (the
// other then being data, as for FastMCP, which splits off "?" only), and
// with neither. The first is normalizeURI's.
func uriReadings(uri string) []string {
	out := []string{normalizeURI(uri)}
	if !strings.ContainsAny(uri, "?#") {
		return out
	}
	for _, cut := range []string{"?", "#", ""} {
		if r := normalizeCut(uri, cut); !containsString(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normalizeCut is normalizeURI with what follows the first of the cut
// characters cut off ("" cuts nothing: '?' and '#' are then data).
func normalizeCut(uri, cut string) string {
	if i := strings.IndexAny(uri, cut); cut != "" && i >= 0 {
		uri = uri[:i]
	}
	// Decoding first: it can make a scheme ("%41:" is "A:") or a dot
	// segment ("%2E"), never a delimiter.
	s := decodeUnreserved(uri)
	var b strings.Builder
	b.Grow(len(s))
	scheme, rest := splitScheme(s)
	if scheme != "" {
		b.WriteString(lowerASCII(scheme))
		b.WriteByte(':')
	}
	hasAuthority := strings.HasPrefix(rest, "//")
	if hasAuthority {
		rest = rest[2:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		b.WriteString("//")
		b.WriteString(lowerASCII(rest[:end]))
		rest = rest[end:]
	}
	path := cleanPath(rest)
	if !hasAuthority && scheme == "" && !strings.HasPrefix(path, "/") {
		// A first segment with a colon would read as a scheme next time.
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ":") {
			b.WriteString("./")
		}
	}
	b.WriteString(path)
	return b.String()
}

// splitScheme splits "scheme:rest"; a string without a scheme is all rest.
func splitScheme(s string) (scheme, rest string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:]
		default:
			return "", s
		}
	}
	return "", s
}

// cleanPath drops a path's empty and "." segments and resolves its ".."
// segments; it keeps a leading '/', and leaves no trailing one.
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	abs := p[0] == '/'
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, seg)
		}
	}
	if len(segs) == 0 {
		return ""
	}
	joined := strings.Join(segs, "/")
	if abs {
		return "/" + joined
	}
	return joined
}

// decodeUnreserved decodes the percent-encoded unreserved characters of s
// (ALPHA, DIGIT, '-', '.', '_', '~') and upper-cases the hex digits of the
// escapes it keeps. It decodes to a fixed point: an escape that decoding
// forms ("%6%45" is "%6E", "n") is decoded too, so the result has none left.
func decodeUnreserved(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, s[i])
		for {
			n := len(out)
			if n < 3 || out[n-3] != '%' || !isHex(out[n-2]) || !isHex(out[n-1]) {
				break
			}
			c := unhex(out[n-2])<<4 | unhex(out[n-1])
			if !isUnreserved(c) {
				out[n-2], out[n-1] = upperHex(out[n-2]), upperHex(out[n-1])
				break
			}
			out = append(out[:n-3], c)
		}
	}
	return string(out)
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

// lowerASCII lower-cases ASCII letters, except the hex digits of escapes
// (upper-cased by decodeUnreserved, and kept so).
func lowerASCII(s string) string {
	b := []byte(nil)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			i += 2
			continue
		}
		if 'A' <= c && c <= 'Z' {
			if b == nil {
				b = []byte(s)
			}
			b[i] = c + 'a' - 'A'
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// Placeholders of a template's variables while its literal text is
// normalised: bytes normalisation leaves alone and a URI template cannot
// hold (RFC 6570 literals exclude control characters).
const (
	holeSegment = '\x00' // a simple {var}: any run of characters but '/'
	holeAny     = '\x01' // a reserved, path or typed expression: anything
)

// looseTemplate is the loose reading of a URI template: its literal text in
// canonical form, a simple variable ({var}, {x,y}) taking any run of
// characters but '/' (also empty, and also those RFC 6570 would have
// percent-encoded), an expression that may take a '/' ({+var}, {/var},
// {.var}, {;var}, FastMCP's {var:path}) taking anything, and query and
// fragment expressions ({?q}, {&q}, {#f}) nothing (normalizeURI cuts the
// query and fragment off). It is matched against a URI's readings
// (uriReadings). A template it cannot read this way (one that begins with
// a variable, so a variable scheme, or one holding a control character
// the reading uses as a placeholder) matches every URI: a forbid of it then
// refuses every URI of its server.
type looseTemplate struct {
	re  *regexp.Regexp
	all bool // matches every URI
}

func parseLooseTemplate(tmpl string) *looseTemplate {
	var b strings.Builder
	holes := 0
	for i := 0; i < len(tmpl); {
		if tmpl[i] != '{' {
			b.WriteByte(tmpl[i])
			i++
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}')
		if end < 0 { // not an expression: literal text
			b.WriteString(tmpl[i:])
			break
		}
		expr := tmpl[i+1 : i+end]
		i += end + 1
		if hole, ok := holeOf(expr); ok {
			b.WriteByte(hole)
			holes++
		}
	}
	if strings.HasPrefix(tmpl, "{") || strings.ContainsAny(tmpl, "\x00\x01") {
		return &looseTemplate{all: true} // a variable scheme, or a placeholder's byte: no sure reading
	}
	text := b.String()
	if cut := strings.IndexAny(text, "?#"); cut >= 0 {
		holes = countHoles(text[:cut]) // what follows a literal '?' is query
	}
	canon := normalizeURI(text)
	if countHoles(canon) != holes {
		return &looseTemplate{all: true} // a ".." took a variable away: no sure reading
	}
	var re strings.Builder
	re.WriteString(`^(?s:`)
	lit := 0
	for i := 0; i < len(canon); i++ {
		switch canon[i] {
		case holeSegment, holeAny:
			re.WriteString(quoteLiteral(canon[lit:i]))
			if canon[i] == holeSegment {
				re.WriteString(`[^/]*`)
			} else {
				re.WriteString(`.*`)
			}
			lit = i + 1
		}
	}
	re.WriteString(quoteLiteral(canon[lit:]))
	re.WriteString(`)$`)
	compiled, err := regexp.Compile(re.String())
	if err != nil { // not expected: every literal is quoted
		return &looseTemplate{all: true}
	}
	return &looseTemplate{re: compiled}
}

// quoteLiteral quotes literal text for a regexp, an invalid UTF-8 byte as
// U+FFFD (which is how the regexp reads such a byte of a URI).
func quoteLiteral(s string) string {
	if utf8.ValidString(s) {
		return regexp.QuoteMeta(s)
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte ranges as utf8.RuneError
		b.WriteRune(r)
	}
	return regexp.QuoteMeta(b.String())
}

func countHoles(s string) int {
	return strings.Count(s, string(rune(holeSegment))) + strings.Count(s, string(rune(holeAny)))
}

// holeOf is the placeholder of an expression's values; ok is false for a
// query or fragment expression (cut off with the query and fragment).
func holeOf(expr string) (hole byte, ok bool) {
	if expr == "" {
		return holeSegment, true
	}
	switch expr[0] {
	case '?', '&', '#':
		return 0, false
	case '+', '/', '.', ';':
		return holeAny, true
	}
	// FastMCP's {name:type} (path: anything); RFC 6570's {var:3} is a prefix.
	for _, v := range strings.Split(expr, ",") {
		if _, mod, found := strings.Cut(v, ":"); found && strings.TrimLeft(mod, "0123456789") != "" {
			return holeAny, true
		}
	}
	return holeSegment, true
}

// matches reports whether any of a URI's readings fits the template.
func (t *looseTemplate) matches(readings []string) bool {
	if t == nil {
		return false
	}
	if t.all {
		return true
	}
	for _, r := range readings {
		if t.re.MatchString(r) {
			return true
		}
	}
	return false
}
