package upstream

import (
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// A JSON answer is read into a buffer of its Content-Length when it has
// one, within the limit either way.
func TestReadBody(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"result":{}}`
	for _, tc := range []struct {
		name    string
		length  int64
		in      string
		limit   int
		want    string
		wantErr error
	}{
		{name: "with its length", length: int64(len(body)), in: body, limit: 100, want: body},
		{name: "at the limit", length: int64(len(body)), in: body, limit: len(body), want: body},
		{name: "length over the limit", length: int64(len(body)), in: body, limit: len(body) - 1, wantErr: errTooLarge},
		{name: "shorter than its length", length: int64(len(body)) + 5, in: body, limit: 100, wantErr: io.ErrUnexpectedEOF},
		{name: "no length", length: -1, in: body, limit: 100, want: body},
		{name: "no length, over the limit", length: -1, in: body, limit: len(body) - 1, wantErr: errTooLarge},
	} {
		resp := &http.Response{ContentLength: tc.length, Body: io.NopCloser(strings.NewReader(tc.in))}
		got, err := readBody(resp, tc.limit)
		if string(got) != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
		if err == nil && cap(got) != len(tc.want) && tc.length >= 0 {
			t.Errorf("%s: a buffer of %d bytes for %d", tc.name, cap(got), len(got))
		}
	}
}

// A body declaring a large length is read as it comes: the declaration
// alone (a server that then sends little, or stalls) does not make the
// gateway allocate it.
func TestReadBodyDoesNotTrustALargeLength(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp := &http.Response{ContentLength: 8 << 20, Body: io.NopCloser(io.MultiReader(strings.NewReader(`{"jsonrpc"`), iotest.ErrReader(io.ErrUnexpectedEOF)))}
	_, err := readBody(resp, 16<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body cut short: %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew >= 1<<20 {
		t.Errorf("reading 10 bytes of a body declaring 8 MiB allocated %d bytes", grew)
	}
}
