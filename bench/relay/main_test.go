package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The bytes go through both ways, and the client closing its connection
// closes the relay's connection to the server.
func TestServeRelaysBothWaysAndClosesBoth(t *testing.T) {
	server := listen(t)
	serverDone := make(chan []byte, 1)
	go func() {
		c, err := server.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var got bytes.Buffer
		buf := make([]byte, 1024)
		for {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if _, werr := c.Write(bytes.ToUpper(buf[:n])); werr != nil || err != nil {
				break
			}
		}
		serverDone <- got.Bytes()
	}()

	front := listen(t)
	go func() {
		for {
			c, err := front.Accept()
			if err != nil {
				return
			}
			go serve(c, server.Addr().String())
		}
	}()

	client, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	client.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 5)
	if _, err := io.ReadFull(client, back); err != nil {
		t.Fatal(err)
	}
	if string(back) != "HELLO" {
		t.Fatalf("got %q back, want %q", back, "HELLO")
	}
	client.Close()
	select {
	case got := <-serverDone:
		if string(got) != "hello" {
			t.Fatalf("the server got %q, want %q", got, "hello")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's connection was not closed after the client closed its own")
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
