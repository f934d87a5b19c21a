// Package httpc is the HTTP/1.1 client transport of the gateway's remote
// upstreams.
//
// It sits at the far end of the path of a call:
//
//	agent ──▶ front ──▶ session ──▶ router ──▶ upstream ──HTTP──▶ MCP server
//	                                              └─ httpc.Transport
//
// An HTTP upstream (internal/upstream) builds each request by hand and hands
// it to an http.Client whose Transport is a [Transport]. For a plain http://
// URL the Transport does the whole exchange on the caller's goroutine: it
// takes an idle keep-alive connection (or dials one through its Dial func,
// which the gateway gives netguard's checked dialer), writes the request
// line, headers and body with one Write, and reads the response head — a
// plain one itself (head.go), any other with [http.ReadResponse]; the
// caller then reads the body straight from the
// connection, which goes back to the idle pool when the body reaches its end
// — or when the caller releases it (Release, on the body): the end of an
// SSE response stream after the response, which the server writes at once,
// is then read by the connection's next request, without waiting, instead
// of by a goroutine waiting for it.
// No goroutine runs per connection or per request: a request's context
// ending closes its connection through [context.AfterFunc].
//
// A caller sending many requests with the same headers (an MCP session's
// POSTs) can encode their head once with [Prepare] and send each body with
// [Transport.Send]: the same bytes on the wire as RoundTrip's, without an
// http.Request per message. Connections are read and written with raw
// system calls (internal/rawio).
//
// Everything else goes to Fallback (the gateway's http.Transport): https,
// where HTTP/2 is negotiated, CONNECT and protocol upgrades, bodies of
// unknown length or over 1 MiB, trailers, Expect: 100-continue, and requests
// net/http would reject (invalid header names or values), so that net/http
// says what is wrong with them.
//
// Why it exists: profiled under 16 concurrent tools/call to an HTTP upstream,
// net/http's client Transport took a large share of the gateway's ~108 µs per
// call — persistConn.readLoop 18.7 %, writeLoop 14 %, Request.write 5.7 %,
// ReadResponse 5 % — plus the scheduler wake-ups of handing every request and
// response between the caller's goroutine and the connection's two. The
// upstreams' traffic needs none of that machinery: small in-memory bodies,
// one request at a time per connection, cancellation by context.
package httpc
