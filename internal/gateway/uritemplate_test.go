package gateway

import "testing"

func TestURITemplateMatches(t *testing.T) {
	for _, tc := range []struct {
		template, uri string
		want          bool
	}{
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/42", true},
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/4/2", false}, // {var} is one segment
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/42", false},
		{"file:///{+path}", "file:///etc/hosts", true}, // {+var} takes reserved characters
		{"file:///{path}", "file:///etc/hosts", false},
		{"search://q{?term,limit}", "search://q?term=go&limit=3", true},
		{"search://q{?term,limit}", "search://q", true},
		{"users://{id}/profile", "users://7/profile", true},
		{"users://{id}/profile", "users://7/settings", false},
		{"a{b", "a{b", false}, // not RFC 6570: matches nothing
	} {
		if got := parseURITemplate(tc.template).matches(tc.uri); got != tc.want {
			t.Errorf("%s matches %s = %v, want %v", tc.template, tc.uri, got, tc.want)
		}
	}
}
