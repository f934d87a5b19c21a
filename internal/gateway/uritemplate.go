package gateway

import "github.com/yosida95/uritemplate/v3"

// uriTemplate matches URIs against a server's resource template, to route
// resources/read, subscriptions and completions to the server offering it
// and to decide them by the template's policies. It has two readings:
//
//   - strict: github.com/yosida95/uritemplate's RFC 6570 matching, the one
//     the Go SDK's servers use to decide which of their templates a URI
//     belongs to; a template that is not RFC 6570 matches nothing this way;
//   - loose (looseTemplate): what a lenient server may take for the template
//     (FastMCP's {id} is any run of characters but '/', and it ignores the
//     query and trailing slashes). A forbid of the template covers both.
type uriTemplate struct {
	t     *uritemplate.Template // nil: not RFC 6570
	loose *looseTemplate
}

// parseURITemplate compiles both readings of a template.
func parseURITemplate(s string) *uriTemplate {
	u := &uriTemplate{loose: parseLooseTemplate(s)}
	if t, err := uritemplate.New(s); err == nil {
		t.Regexp() // compiled once, here, not on the first read
		u.t = t
	}
	return u
}

// matches is the strict reading: RFC 6570.
func (t *uriTemplate) matches(uri string) bool {
	return t != nil && t.t != nil && t.t.Regexp().MatchString(uri)
}

// mayMatch is the loose reading, of a URI's readings (uriReadings).
func (t *uriTemplate) mayMatch(readings []string) bool {
	return t != nil && t.loose.matches(readings)
}
