package host

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/user"
	"testing"

	"golang.org/x/sys/unix"
)

// socketPair is two connected Unix sockets as net.Conns.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns[0], conns[1]
}

// The peer's user comes from the socket's credentials (SO_PEERCRED): a
// socketpair's peer is this process, so its uid is ours.
func TestPeerUIDFromCredentials(t *testing.T) {
	a, _ := socketPair(t)
	uid, ok := peerUID(a)
	if !ok || uid != os.Getuid() {
		t.Fatalf("peerUID = %d, %v; want %d from SO_PEERCRED", uid, ok, os.Getuid())
	}
	if _, ok := peerUID(&net.TCPConn{}); ok {
		t.Fatal("a TCP connection has no peer credentials")
	}
}

// Through the control socket a request carries its peer's user; the
// recorded name is the peer's (os/user), and a connection accepted for
// another uid (root here) is recorded as that user, not the daemon's.
func TestControlUserIsThePeer(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenControl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	srv := &http.Server{ConnContext: ControlConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- controlUser(r.Context())
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", ln.Addr().String())
	}}}
	resp, err := c.Get("http://control/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if u := <-got; u != "host:"+me.Username {
		t.Fatalf("control user %q, want host:%s", u, me.Username)
	}

	a, _ := socketPair(t)
	ctx := ControlConnContext(context.Background(), &peerConn{Conn: a, uid: 0})
	if u := controlUser(ctx); u != "host:root" {
		t.Fatalf("peer uid 0 recorded as %q, want host:root", u)
	}
	t.Setenv("USER", "somebody-else")
	if u := controlUser(ControlConnContext(context.Background(), &peerConn{Conn: a, uid: os.Getuid()})); u != "host:"+me.Username {
		t.Fatalf("with the daemon's $USER changed: %q, want the peer's name host:%s", u, me.Username)
	}
}
