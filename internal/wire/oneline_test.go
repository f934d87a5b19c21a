package wire

import (
	"bytes"
	"testing"
)

func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"{\"a\":\n1}", `{"a":1}`},
		{"{\"a\":\r1,\r\n\"b\" : [ 1 ,\n2 ]}", `{"a":1,"b":[1,2]}`},
		{"{\"s\":\"x\\ny\"}", "{\"s\":\"x\\ny\"}"}, // an escaped newline is not a line break
	} {
		got, err := OneLine([]byte(tc.in))
		if err != nil {
			t.Fatalf("OneLine(%q): %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if bytes.ContainsAny(got, "\r\n") {
			t.Errorf("OneLine(%q) kept a line break", tc.in)
		}
	}
	if _, err := OneLine([]byte("{\"a\":\n}")); err == nil {
		t.Error("OneLine accepted invalid JSON with a line break")
	}
}
