package gateway

import "github.com/yosida95/uritemplate/v3"

// uriTemplate matches URIs against an RFC 6570 template, to route
// resources/read, subscriptions and completions to the server offering it.
// The matching is github.com/yosida95/uritemplate's, the one SDK servers
// use to decide which of their templates a URI belongs to, so the gateway
// sends a URI where the server itself would take it.
type uriTemplate struct{ t *uritemplate.Template }

// parseURITemplate compiles a template; one that is not RFC 6570 matches
// nothing (nil).
func parseURITemplate(s string) *uriTemplate {
	t, err := uritemplate.New(s)
	if err != nil {
		return nil
	}
	t.Regexp() // compiled once, here, not on the first read
	return &uriTemplate{t: t}
}

func (t *uriTemplate) matches(uri string) bool { return t != nil && t.t.Regexp().MatchString(uri) }
