package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The call path's shape, measured: which of the package's files one
// tools/call enters, in order, from the front's entry into the gateway
// (Session.Handle, Gateway.HandleStateless) to the upstream's Call. A fake
// upstream records the stack at its Call; consecutive frames in one file
// are one entry into it. Run with
//
//	go test -count=1 -v -run TestCallPathFiles ./internal/gateway/
//
// to print each era's sequence. One call enters each file once (issue 18);
// the test fails when a file is entered again.

// pathRecorder is an upstream whose Call records the gateway's frames.
type pathRecorder struct {
	fakeUpstream
	files []string // the entries, outermost first
}

func (p *pathRecorder) Call(ctx context.Context, method string, params json.RawMessage) (*wire.Response, error) {
	if method != "tools/call" {
		return p.fakeUpstream.Call(ctx, method, params)
	}
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var stack []string
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/mcp-gateway/mcp-gateway/internal/gateway.") && !strings.HasSuffix(f.File, "_test.go") {
			stack = append(stack, filepath.Base(f.File))
		}
		if !more {
			break
		}
	}
	slices.Reverse(stack)
	p.files = p.files[:0]
	for _, f := range stack {
		if len(p.files) == 0 || p.files[len(p.files)-1] != f {
			p.files = append(p.files, f)
		}
	}
	return &wire.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
}

// admitAll is a guard that lets everything through, so the path passes it.
type admitAll struct{}

func (admitAll) Visible(GuardItem) bool { return true }
func (admitAll) Version() uint64        { return 1 }
func (admitAll) Admit(context.Context, *GuardCall) (func(Reply), *wire.Error) {
	return func(Reply) {}, nil
}

// entries counts the entries per file, in order of first entry.
func entries(files []string) string {
	count := map[string]int{}
	var order []string
	for _, f := range files {
		if count[f] == 0 {
			order = append(order, f)
		}
		count[f]++
	}
	parts := make([]string, len(order))
	for i, f := range order {
		parts[i] = fmt.Sprintf("%s×%d", f, count[f])
	}
	return strings.Join(parts, " ")
}

func TestCallPathFiles(t *testing.T) {
	rec := &pathRecorder{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("echo")}}}
	g := gatewayWith(t, RouterOptions{}, rec)
	g.Guard, g.Observer = admitAll{}, &recordingObserver{}
	call := `{"name":"echo","arguments":{}}`
	m := &wire.Message{ID: json.RawMessage(`1`), Method: "tools/call", Params: json.RawMessage(call)}

	s := sessionWith(t, g, `{}`)
	if r := s.Handle(context.Background(), m, nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	session := slices.Clone(rec.files)

	m.Params = json.RawMessage(`{"name":"echo","arguments":{},"_meta":{"` + MetaProtocolVersion + `":"` + StatelessVersion +
		`","` + MetaClientInfo + `":{"name":"c","version":"1"},"` + MetaClientCapabilities + `":{}}}`)
	if r := g.HandleStateless(context.Background(), m, nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	stateless := slices.Clone(rec.files)

	// A 2026-07-28 client a server may ask for input: its call runs on a
	// goroutine of its own (input.go), whose frames start there.
	m.Params = json.RawMessage(`{"name":"echo","arguments":{},"_meta":{"` + MetaProtocolVersion + `":"` + StatelessVersion +
		`","` + MetaClientInfo + `":{"name":"c","version":"1"},"` + MetaClientCapabilities + `":{"elicitation":{}}}}`)
	if r := g.HandleStateless(context.Background(), m, nil); r.Error != nil {
		t.Fatal(string(r.Error))
	}
	background := slices.Clone(rec.files)

	for _, era := range []struct {
		name  string
		files []string
	}{{"2025-11-25", session}, {StatelessVersion, stateless}, {StatelessVersion + " (asked for input, on its own goroutine)", background}} {
		t.Logf("%s tools/call: %s", era.name, strings.Join(era.files, " → "))
		t.Logf("%s entries:    %s", era.name, entries(era.files))
		if len(era.files) == 0 {
			t.Errorf("%s: no gateway frame recorded", era.name)
		}
		seen := map[string]bool{}
		for _, f := range era.files {
			if seen[f] {
				t.Errorf("%s: the call path enters %s more than once: one concern per file, each entered once (see doc.go)", era.name, f)
			}
			seen[f] = true
		}
	}
}
