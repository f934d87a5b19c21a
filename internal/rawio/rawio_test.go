package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-accepted
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestTCP: bytes written with a Writer arrive whole, also more than the
// socket takes at once (the Writer waits for room); a Reader reads them and
// then io.EOF once the writer closes.
func TestTCP(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewWriter(a), NewReader(b)
	if w == nil || r == nil {
		t.Fatal("no Reader or Writer for a TCP connection")
	}
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB: past any socket buffer
	errc := make(chan error, 1)
	go func() {
		n, err := w.Write(msg)
		if err == nil && n != len(msg) {
			err = errors.New("short write")
		}
		a.Close()
		errc <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if werr := <-errc; werr != nil {
		t.Fatalf("write: %v", werr)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(msg))
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("after the end: %d, %v; want 0, io.EOF", n, err)
	}
}

// TestDeadlineAndClose: a Reader waiting for data returns when the
// connection's read deadline passes, and when the connection is closed.
func TestDeadlineAndClose(t *testing.T) {
	a, _ := tcpPair(t)
	r := NewReader(a)
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	a.SetReadDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("closed under the read: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read blocked on a closed connection")
	}
}

// TestPipe: os.Pipe's ends are non-blocking and get a Reader and Writer.
func TestPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	w, r := NewWriter(pw), NewReader(pr)
	if w == nil || r == nil {
		t.Fatal("no Reader or Writer for a pipe")
	}
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if got, err := io.ReadAll(r); err != nil || string(got) != "line\n" {
		t.Errorf("read %q, %v", got, err)
	}
}

// TestBlockingDescriptor: a descriptor in blocking mode gets no Reader: a
// raw read on it would hold its P while it waits.
func TestBlockingDescriptor(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "blocking") // not pollable: left blocking
	defer f.Close()
	syscall.Close(fds[1])
	if sc, err := f.SyscallConn(); err == nil {
		var flags uintptr
		sc.Control(func(fd uintptr) { flags, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0) })
		if flags&syscall.O_NONBLOCK != 0 {
			t.Skip("os.NewFile made the descriptor non-blocking")
		}
	}
	if NewReader(f) != nil || RawConn(f) != nil {
		t.Error("a blocking descriptor got a Reader")
	}
	if NewReader(struct{}{}) != nil {
		t.Error("a value without a RawConn got a Reader")
	}
}
