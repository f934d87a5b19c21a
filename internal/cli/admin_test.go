package cli

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseInterleaved(t *testing.T) {
	tests := []struct {
		args       []string
		positional []string
		url        string
		headers    []string
	}{
		{[]string{"name", "--url", "u"}, []string{"name"}, "u", nil},
		{[]string{"--url", "u", "name"}, []string{"name"}, "u", nil},
		{[]string{"name", "--header", "A: b", "--header", "C: d"}, []string{"name"}, "", []string{"A: b", "C: d"}},
		{[]string{"name", "--url", "u", "--", "--not-a-flag", "x"}, []string{"name", "--not-a-flag", "x"}, "u", nil},
		{[]string{"a", "b", "--url=u", "c"}, []string{"a", "b", "c"}, "u", nil},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		url := fs.String("url", "", "")
		var headers listFlag
		fs.Var(&headers, "header", "")
		pos, code, done := parseInterleaved(fs, tt.args, io.Discard)
		if done {
			t.Errorf("%v: stopped with code %d", tt.args, code)
			continue
		}
		if !slices.Equal(pos, tt.positional) || *url != tt.url || !slices.Equal(headers, tt.headers) {
			t.Errorf("%v: positional %q url %q headers %q; want %q %q %q", tt.args, pos, *url, headers, tt.positional, tt.url, tt.headers)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, code, done := parseInterleaved(fs, []string{"name", "--nope"}, io.Discard); !done || code != exitUsage {
		t.Errorf("an unknown flag after a positional argument: done %v code %d", done, code)
	}
}
