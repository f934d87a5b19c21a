// Command relay is the benchmark's byte relay: it accepts TCP connections and
// copies their bytes to and from a server, parsing nothing. In front of the
// echo server it measures the floor of any proxy's CPU per call: the reads
// and writes of the bytes, without HTTP, JSON or routing.
//
//	relay -listen 127.0.0.1:0 -to 127.0.0.1:PORT -path /mcp
//
// It prints "listening on http://ADDR/mcp" on standard output once it
// accepts connections, as the echo server does in HTTP mode (-path only
// names the path in that line; the bytes go through as they are).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/rawio"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "accept connections on this `address` (127.0.0.1:0 picks a port)")
	to := flag.String("to", "", "relay each connection to this `host:port`")
	path := flag.String("path", "/mcp", "the path printed in the listening line")
	flag.Parse()
	log.SetPrefix("relay: ")
	log.SetFlags(0)
	if *to == "" {
		log.Fatal("-to is required: the host:port to relay to")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	fmt.Fprintf(os.Stdout, "listening on http://%s%s\n", ln.Addr(), *path)
	for {
		client, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				// Returning ends the process and with it the open connections.
				return
			}
			log.Fatal(err)
		}
		go serve(client, *to)
	}
}

// serve relays one connection: the server's bytes to the client on a second
// goroutine, the client's to the server on this one. When either side ends,
// both connections are closed, which ends the other direction too.
func serve(client net.Conn, to string) {
	server, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
		log.Printf("dialing %s: %v", to, err)
		client.Close()
		return
	}
	back := make(chan struct{})
	go func() {
		defer close(back)
		pump(client, server)
		client.Close()
		server.Close()
	}()
	pump(server, client)
	client.Close()
	server.Close()
	<-back
}

// pump copies src to dst until either fails or src ends. It reads into a
// buffer and writes from it on purpose: io.Copy between two TCP connections
// splices (splice(2)) and the bytes never reach user space, while a gateway
// has to read them to route them. It reads and writes with raw system calls
// (internal/rawio), as the gateway does, so that the floor is the floor of
// the same way of doing I/O.
func pump(dst, src net.Conn) {
	var r io.Reader = src
	if rr := rawio.NewReader(src); rr != nil {
		r = rr
	}
	var w io.Writer = dst
	if rw := rawio.NewWriter(dst); rw != nil {
		w = rw
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
