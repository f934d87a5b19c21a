// Package httpfield checks and reads HTTP/1.1 header fields (RFC 9110),
// as net/http does: for the gateway's own HTTP server (internal/httpd),
// which must read exactly what net/http would, and its own HTTP client
// (internal/httpc), which must not write what net/http would refuse.
package httpfield

import "strings"

// ValidName reports whether s is a token (RFC 9110): a header name, or a
// request method.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar[s[i]] {
			return false
		}
	}
	return true
}

// ValidValue reports whether s may be a header value: no control character
// but tab (no CR or LF that would start another field).
func ValidValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// HasToken reports whether the comma-separated lists of a field's values
// (as in Connection: keep-alive, close) name token, in any case.
func HasToken(values []string, token string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

var isTokenChar [256]bool

func init() {
	for c := '0'; c <= '9'; c++ {
		isTokenChar[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		isTokenChar[c], isTokenChar[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		isTokenChar[c] = true
	}
}
