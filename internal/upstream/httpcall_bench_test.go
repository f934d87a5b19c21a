package upstream_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/mcp-gateway/mcp-gateway/internal/netguard"
	"github.com/mcp-gateway/mcp-gateway/internal/upstream"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// BenchmarkRemoteCallLean measures what the gateway's side of one forwarded
// call over streamable HTTP costs: against a server that does next to
// nothing (net/http's server and a fixed answer, where the SDK's server
// costs several times the client), so that -benchmem's objects and bytes
// per call are mostly the upstream's and net/http's client's. The answer
// comes as an event stream the way the Go SDK writes it (headers and the
// event flushed together, the stream's end apart), or as plain JSON; the
// server speaks the session era or 2026-07-28.
func BenchmarkRemoteCallLean(b *testing.B) {
	for _, c := range []struct {
		name            string
		json, stateless bool
	}{
		{name: "sse"},
		{name: "json", json: true},
		{name: "stateless-sse", stateless: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv := httptest.NewServer(leanServer(c.json, c.stateless))
			b.Cleanup(srv.Close)
			up := upstream.NewHTTP(upstream.HTTPOptions{
				Name: "bench", URL: srv.URL, Transport: upstream.TransportStreamable,
				Guard: &netguard.Policy{AllowAll: true}, DiscoverFirst: c.stateless, NoListen: true,
			})
			defer up.Close()
			// As the gateway calls: a context with the call's timeout.
			ctx, cancel := context.WithTimeout(context.Background(), 1<<40)
			defer cancel()
			if err := up.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if up.Stateless() != c.stateless {
				b.Fatalf("stateless = %v", up.Stateless())
			}
			params := toolParams("echo", `{"text":"hi"}`)
			b.ReportAllocs()
			for b.Loop() {
				callCtx, cancel := context.WithTimeout(ctx, 1<<40)
				resp, err := up.Call(callCtx, "tools/call", params)
				cancel()
				if err != nil || resp.Error != nil {
					b.Fatal(err, resp)
				}
			}
		})
	}
}

// leanServer answers initialize (or, stateless, refuses it and answers
// server/discover), accepts notifications, and answers every other request
// with one text result.
func leanServer(asJSON, stateless bool) http.HandlerFunc {
	const result = `{"content":[{"type":"text","text":"hi"}]}`
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		msg, err := wire.Parse(body)
		switch {
		case err != nil:
			w.WriteHeader(http.StatusBadRequest)
			return
		case msg.ID == nil:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var answer []byte
		switch {
		case msg.Method == "initialize" && stateless:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(wire.AppendError(nil, msg.ID, wire.Errorf(wire.CodeMethodNotFound, "no initialize"))) //nolint:errcheck // the client reads it
			return
		case msg.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			answer = wire.AppendResult(nil, msg.ID, []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"lean","version":"1"}}`))
		case msg.Method == "server/discover" && stateless:
			answer = wire.AppendResult(nil, msg.ID, []byte(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`))
		default:
			answer = wire.AppendResult(nil, msg.ID, []byte(result))
		}
		if asJSON || msg.Method != "tools/call" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer) //nolint:errcheck // the client reads it
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message\ndata: ") //nolint:errcheck // the client reads it
		w.Write(answer)                             //nolint:errcheck // the client reads it
		io.WriteString(w, "\n\n")                   //nolint:errcheck // the client reads it
		w.(http.Flusher).Flush()
	}
}

// BenchmarkRemoteSessionHeld reports the heap one more session holds
// (held-B/session, live after a collection) once it has made a call, as the
// gateway's per-client sessions of one server do, on a shared client.
func BenchmarkRemoteSessionHeld(b *testing.B) {
	srv := httptest.NewServer(leanServer(false, false))
	b.Cleanup(srv.Close)
	client := upstream.NewHTTPClient("bench", &netguard.Policy{AllowAll: true})
	defer client.CloseIdleConnections()
	ctx := context.Background()
	params := toolParams("echo", `{"text":"hi"}`)
	var ups []*upstream.HTTP
	defer func() {
		for _, up := range ups {
			up.Close()
		}
	}()
	open := func() {
		up := upstream.NewHTTP(upstream.HTTPOptions{Name: "bench", URL: srv.URL, Transport: upstream.TransportStreamable, Client: client, NoListen: true})
		ups = append(ups, up)
		if _, err := up.Call(ctx, "tools/call", params); err != nil {
			b.Fatal(err)
		}
	}
	open() // the client's connection and the pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		open()
		n++
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "held-B/session")
}
