package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-gateway/mcp-gateway/internal/host/registry"
)

// SocketFile is the control socket's name in the state directory.
const SocketFile = "control.sock"

// ListenControl listens on the control socket of a state directory: a Unix
// socket only its owner may connect to (mode 0600, in a 0700 directory, and
// each connection's peer checked to be this user or root). A stale socket
// file left by a crash is replaced.
func ListenControl(dir string) (net.Listener, error) {
	path := filepath.Join(dir, SocketFile)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s is in use: another mcp-gateway host is running", path)
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return &ownerListener{Listener: ln, uid: os.Getuid()}, nil
}

// ownerListener drops connections from other users.
type ownerListener struct {
	net.Listener
	uid int
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uid, ok := peerUID(c); ok && (uid == l.uid || uid == 0) {
			return &peerConn{Conn: c, uid: uid}, nil
		}
		c.Close()
	}
}

// peerConn is a control connection with its peer's user id, read from the
// socket's credentials (SO_PEERCRED) when it was accepted.
type peerConn struct {
	net.Conn
	uid int
}

type peerKey struct{}

// ControlConnContext is the control server's http.Server.ConnContext: it
// gives each request the user id of the connection's peer, so what is
// done on the socket is recorded as done by the person who ran the
// command (an approval's approvedBy, an admin record's principal), not by
// the daemon's user.
func ControlConnContext(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*peerConn); ok {
		return context.WithValue(ctx, peerKey{}, pc.uid)
	}
	return ctx
}

// controlUser is "host:" and the name of the user on the other end of the
// control socket (its uid when the name is unknown); the daemon's own
// user when the request did not come through ListenControl.
func controlUser(ctx context.Context) string {
	uid, ok := ctx.Value(peerKey{}).(int)
	if !ok {
		uid = os.Getuid()
	}
	return "host:" + userName(uid)
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(uid)
}

func peerUID(c net.Conn) (int, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}

// ControlHandler serves the administration API the CLI speaks.
func (h *Host) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/servers", func(w http.ResponseWriter, r *http.Request) {
		var req ServerRequest
		if decode(w, r, &req) {
			answer(w, func() (any, error) { return h.AddServer(r.Context(), req) })
		}
	})
	mux.HandleFunc("GET /v1/servers", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Servers(), nil })
	})
	mux.HandleFunc("GET /v1/servers/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.InspectServer(r.PathValue("name")) })
	})
	mux.HandleFunc("DELETE /v1/servers/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.RemoveServer(r.PathValue("name")) })
	})
	mux.HandleFunc("PUT /v1/secrets/{name}", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Value string `json:"value"`
		}
		if decode(w, r, &req) {
			answer(w, func() (any, error) {
				warnings, err := h.SetSecret(r.Context(), r.PathValue("name"), req.Value)
				return map[string]any{"warnings": warnings}, err
			})
		}
	})
	mux.HandleFunc("GET /v1/secrets", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Secrets(), nil })
	})
	mux.HandleFunc("DELETE /v1/secrets/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return struct{}{}, h.RemoveSecret(r.PathValue("name")) })
	})
	mux.HandleFunc("POST /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var req SandboxRequest
		if decode(w, r, &req) {
			answer(w, func() (any, error) { return h.CreateSandbox(r.Context(), req) })
		}
	})
	mux.HandleFunc("GET /v1/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Sandboxes(), nil })
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.RemoveSandboxReport(r.PathValue("name")) })
	})
	mux.HandleFunc("POST /v1/sandboxes/{name}/servers/{server}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.Load(r.Context(), r.PathValue("server"), r.PathValue("name")) })
	})
	mux.HandleFunc("DELETE /v1/sandboxes/{name}/servers/{server}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return struct{}{}, h.Unload(r.PathValue("server"), r.PathValue("name")) })
	})
	mux.HandleFunc("POST /v1/auth/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) {
			q := r.URL.Query()
			u, err := h.AuthStartWith(r.Context(), r.PathValue("name"), q.Get("sandbox"), AuthOptions{Scopes: q["scope"], NoScope: q.Get("no_scope") == "1"})
			return map[string]string{"url": u}, err
		})
	})
	mux.HandleFunc("POST /v1/auth/{name}/wait", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) { return h.AuthWait(r.Context(), r.PathValue("name"), r.URL.Query().Get("sandbox")) })
	})
	mux.HandleFunc("GET /v1/auth", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) {
			if name := r.URL.Query().Get("server"); name != "" {
				return h.AuthStatusOf(r.Context(), name)
			}
			return h.AuthStatus()
		})
	})
	mux.HandleFunc("DELETE /v1/auth/{name}", func(w http.ResponseWriter, r *http.Request) {
		answer(w, func() (any, error) {
			removed, err := h.AuthRemove(r.PathValue("name"), r.URL.Query().Get("sandbox"), r.URL.Query().Get("all") == "1")
			return map[string]any{"removed": removed}, err
		})
	})
	h.governanceRoutes(mux)
	return h.audited(mux)
}

// apiError is the control API's error body.
type apiError struct {
	Error string `json:"error"`
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{fmt.Sprintf("malformed request: %v", err)})
		return false
	}
	return true
}

func answer(w http.ResponseWriter, do func() (any, error)) {
	v, err := do()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client speaks to a running host over its control socket.
type Client struct {
	dir    string
	socket string
	http   *http.Client
}

// ErrNotRunning: no host answers on the state directory's socket.
var ErrNotRunning = errors.New("mcp-gateway host is not running")

// NewClient returns a client of the host whose state directory is dir.
func NewClient(dir string) *Client {
	path := filepath.Join(dir, SocketFile)
	return &Client{dir: dir, socket: path, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
}

// Do sends one command; a refusal comes back as an error with the host's message.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://mcp-gateway"+path, body)
	if err != nil {
		return err
	}
	if err := c.waitStarted(ctx); err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("the host answered %s", resp.Status)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// startGrace is how long a command waits for a daemon that holds no lock
// yet: one started in the background just before (`mcp-gateway host &`)
// may not have run that far.
const startGrace = 2 * time.Second

// waitStarted returns once the control socket accepts a connection. While
// a daemon holds the state directory's lock it is starting (its servers
// start before its socket opens), so the command waits for it; when none
// does after startGrace, the host is not running.
func (c *Client) waitStarted(ctx context.Context) error {
	graceEnd := time.Now().Add(startGrace)
	for {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", c.socket)
		if err == nil {
			conn.Close()
			return nil
		}
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ECONNREFUSED) {
			return err
		}
		pid, held := registry.Holder(c.dir)
		if !held && time.Now().After(graceEnd) {
			return fmt.Errorf("%w (no control socket answers at %s): start it with `mcp-gateway host`, or pass the --state-dir it uses", ErrNotRunning, c.socket)
		}
		select {
		case <-ctx.Done():
			if held {
				return fmt.Errorf("mcp-gateway host (pid %s) holds %s but its control socket did not open: %w", pid, c.dir, ctx.Err())
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
