package upstream

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

type wantEvent struct {
	name, data string
	oversize   bool
	id         string // the scanned JSON-RPC id of an oversize event
}

func readAllEvents(t *testing.T, r io.Reader, limit int, findID bool) ([]wantEvent, *sseReader, error) {
	t.Helper()
	sr := newSSEReader(r, limit, findID)
	var got []wantEvent
	for {
		ev, err := sr.next()
		if err != nil {
			return got, sr, err
		}
		got = append(got, wantEvent{name: ev.name, data: string(ev.data), oversize: ev.oversize, id: string(ev.id)})
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		in     string
		limit  int
		findID bool
		want   []wantEvent
		lastID string
		retry  time.Duration
	}{
		{name: "one event", in: "data: {\"a\":1}\n\n", want: []wantEvent{{data: `{"a":1}`}}},
		{name: "named with id", in: "event: message\nid: 7\ndata: x\n\n", want: []wantEvent{{name: "message", data: "x"}}, lastID: "7"},
		{name: "no space after colon", in: "data:x\n\n", want: []wantEvent{{data: "x"}}},
		{name: "only one space dropped", in: "data:  x\n\n", want: []wantEvent{{data: " x"}}},
		{name: "multi-line data", in: "data: a\ndata: b\ndata:\n\n", want: []wantEvent{{data: "a\nb\n"}}},
		{name: "CRLF", in: "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", want: []wantEvent{{data: "a\nb"}, {data: "c"}}},
		{name: "lone CR", in: "data: a\rdata: b\r\rdata: c\r\r", want: []wantEvent{{data: "a\nb"}, {data: "c"}}},
		{name: "comments and unknown fields", in: ": ping\nfoo: bar\ndata: x\n\n: keepalive\n\n", want: []wantEvent{{data: "x"}}},
		{name: "priming event without data", in: "id: p1\ndata:\n\nid: p2\n\ndata: x\n\n", want: []wantEvent{{data: ""}, {data: "x"}}, lastID: "p2"},
		{name: "retry", in: "retry: 1500\ndata: x\n\nretry: nope\n\n", want: []wantEvent{{data: "x"}}, retry: 1500 * time.Millisecond},
		{name: "event cut by the end is dropped", in: "data: x\n\ndata: partial", want: []wantEvent{{data: "x"}}},
		{name: "endpoint", in: "event: endpoint\ndata: /message?sessionId=abc\n\n", want: []wantEvent{{name: "endpoint", data: "/message?sessionId=abc"}}},
		{name: "event name reset", in: "event: endpoint\ndata: a\n\ndata: b\n\n", want: []wantEvent{{name: "endpoint", data: "a"}, {data: "b"}}},
		{name: "id with NUL ignored", in: "id: a\x00b\ndata: x\n\n", want: []wantEvent{{data: "x"}}},

		{name: "at the limit", in: "data: " + long + "\n\n", limit: 100, want: []wantEvent{{data: long}}},
		{name: "over the limit, one line", in: "data: " + long + "y\n\ndata: ok\n\n", limit: 100, want: []wantEvent{{oversize: true}, {data: "ok"}}},
		{name: "over the limit, far", in: "data: " + strings.Repeat(long, 50) + "\n\ndata: ok\n\n", limit: 100, want: []wantEvent{{oversize: true}, {data: "ok"}}},
		{name: "over the limit, several lines", in: "data: " + long[:60] + "\ndata: " + long[:60] + "\ndata: more\n\ndata: ok\n\n", limit: 100, want: []wantEvent{{oversize: true}, {data: "ok"}}},
		{
			name:  "oversize response: id found at the end",
			in:    `data: {"result":{"content":[{"type":"text","text":"` + strings.Repeat("z", 500) + `"}]},"jsonrpc":"2.0","id":42}` + "\n\n",
			limit: 100, findID: true,
			want: []wantEvent{{oversize: true, id: "42"}},
		},
		{
			name:  "oversize response: id first, nested ids ignored",
			in:    `data: {"jsonrpc":"2.0","id":"s-1","result":{"id":99,"text":"` + strings.Repeat("\\\"}{", 100) + `"}}` + "\n\n",
			limit: 50, findID: true,
			want: []wantEvent{{oversize: true, id: `"s-1"`}},
		},
		{
			name:  "oversize over several data lines",
			in:    "data: {\"jsonrpc\":\"2.0\",\ndata: \"result\":\"" + strings.Repeat("q", 300) + "\",\ndata:  \"id\" : 7 }\n\n",
			limit: 100, findID: true,
			want: []wantEvent{{oversize: true, id: "7"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 20
			}
			for _, reader := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tc.in)},
				{"byte by byte", iotest.OneByteReader(strings.NewReader(tc.in))},
				{"in halves", iotest.HalfReader(strings.NewReader(tc.in))},
			} {
				got, sr, err := readAllEvents(t, reader.r, limit, tc.findID)
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%s: error %v, want EOF", reader.name, err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("%s: events %+v, want %+v", reader.name, got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("%s: event %d = %+v, want %+v", reader.name, i, got[i], tc.want[i])
					}
				}
				if sr.lastID != tc.lastID || sr.retry != tc.retry {
					t.Errorf("%s: lastID, retry = %q, %v; want %q, %v", reader.name, sr.lastID, sr.retry, tc.lastID, tc.retry)
				}
			}
		})
	}
}

// FuzzSSEReader: how the stream arrives in reads does not change the
// events, and a recycled reader reads as a new one does.
func FuzzSSEReader(f *testing.F) {
	f.Add("event: message\nid: 7\ndata: {\"a\":1}\n\n", 20)
	f.Add("data: a\r\ndata: b\r\n\r\ndata: c\rretry: 5\r\r", 8)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		limit = 1 + int(uint(limit)%200)
		read := func(sr *sseReader) []wantEvent {
			var got []wantEvent
			for {
				ev, err := sr.next()
				if err != nil {
					return append(got, wantEvent{name: "end", data: sr.lastID + " " + sr.retry.String()})
				}
				got = append(got, wantEvent{name: ev.name, data: string(ev.data), oversize: ev.oversize})
			}
		}
		want := read(newSSEReader(iotest.OneByteReader(strings.NewReader(in)), limit, false))
		for _, r := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
			sr := getResponseReader(r, limit)
			got := read(sr)
			putResponseReader(sr)
			if len(got) != len(want) {
				t.Fatalf("%q: events %+v, want %+v", in, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q: event %d = %+v, want %+v", in, i, got[i], want[i])
				}
			}
		}
	})
}

func TestIDScanner(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "1"},
		{`{"result":{"id":5},"id":"abc"}`, `"abc"`},
		{`{"a":"id","id":-3}`, "-3"},
		{`{"a":["id",{"id":1}],"id" : 12 }`, "12"},
		{`{"s":"\"id\":9","id":10}`, "10"},
		{`{"id":{"x":1}}`, ""},
		{`{"method":"x"}`, ""},
		{`{"id":"` + strings.Repeat("a", 300) + `"}`, ""},
	}
	for _, tc := range tests {
		var s idScanner
		s.write([]byte(tc.in))
		if string(s.id) != tc.want {
			t.Errorf("scan(%s) = %q, want %q", tc.in, s.id, tc.want)
		}
	}
}

// An event whose lines come whole with a read costs one allocation, its
// data's: its lines are read where they are in the reader's buffer, also
// the first one after a read.
func TestSSEReaderCopiesOnlyTheData(t *testing.T) {
	event := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	sr := newSSEReader(eventPerRead(event), 1<<20, false)
	if allocs := testing.AllocsPerRun(100, func() {
		if _, err := sr.next(); err != nil {
			t.Fatal(err)
		}
	}); allocs != 1 {
		t.Errorf("%v allocations an event, want 1 (its data)", allocs)
	}
}

// eventPerRead is a stream that gives one event per read, forever.
type eventPerRead []byte

func (e eventPerRead) Read(p []byte) (int, error) { return copy(p, e), nil }

// ended reports the end of the stream once a read has returned it: with
// the last event when the stream gives its end with its data (as net/http
// does when the end is already in), after it otherwise.
func TestSSEReaderEnded(t *testing.T) {
	const in = "data: a\n\ndata: b\n\n"
	for _, tc := range []struct {
		name     string
		r        io.Reader
		afterTwo bool // ended once the second event is read
	}{
		{"end with the data", iotest.DataErrReader(strings.NewReader(in)), true},
		{"end apart", strings.NewReader(in), false},
	} {
		sr := getResponseReader(tc.r, 100)
		if sr.ended() {
			t.Errorf("%s: ended before a read", tc.name)
		}
		for i := range 2 {
			if _, err := sr.next(); err != nil {
				t.Fatalf("%s: event %d: %v", tc.name, i, err)
			}
		}
		if sr.ended() != tc.afterTwo {
			t.Errorf("%s: ended after the last event = %v, want %v", tc.name, sr.ended(), tc.afterTwo)
		}
		if _, err := sr.next(); err != io.EOF || !sr.ended() {
			t.Errorf("%s: after the end: %v, ended %v; want EOF, true", tc.name, err, sr.ended())
		}
		putResponseReader(sr)
	}
}
