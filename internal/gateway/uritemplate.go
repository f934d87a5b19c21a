package gateway

import (
	"regexp"
	"strings"
)

// uriTemplate matches URIs against an RFC 6570 template, far enough to route
// resources/read, subscriptions and completions to the server offering it.
type uriTemplate struct{ re *regexp.Regexp }

var templateExpr = regexp.MustCompile(`\{[^}]*\}`)

// parseURITemplate compiles a template: a simple {var} matches one path
// segment, a reserved {+var} or fragment {#var} anything, and the query
// forms {?a,b} / {&a} an optional query part.
func parseURITemplate(t string) *uriTemplate {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range templateExpr.FindAllStringIndex(t, -1) {
		b.WriteString(regexp.QuoteMeta(t[last:loc[0]]))
		expr := t[loc[0]+1 : loc[1]-1]
		switch {
		case strings.HasPrefix(expr, "+"), strings.HasPrefix(expr, "#"):
			b.WriteString(".*")
		case strings.HasPrefix(expr, "?"), strings.HasPrefix(expr, "&"):
			b.WriteString(`(?:[?&].*)?`)
		case strings.HasPrefix(expr, "/"):
			b.WriteString(`(?:/[^?#]*)?`)
		default:
			b.WriteString(`[^/?#]*`)
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(t[last:]))
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return &uriTemplate{re: re}
}

func (t *uriTemplate) matches(uri string) bool { return t != nil && t.re.MatchString(uri) }
