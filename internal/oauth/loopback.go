package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Loopback is the gateway's redirect endpoint for a person's browser: an
// HTTP server on a loopback address taking one callback. A second callback
// (a replayed code) is refused.
type Loopback struct {
	ln   net.Listener
	srv  *http.Server
	path string

	mu      sync.Mutex
	results chan callback
	done    bool
}

type callback struct {
	res *auth.AuthorizationResult
	err error
}

// NewLoopback listens on addr ("127.0.0.1:0" for any port).
func NewLoopback(addr string) (*Loopback, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("the OAuth callback must listen on a loopback address, not %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the OAuth callback: %w", err)
	}
	l := &Loopback{ln: ln, path: "/callback", results: make(chan callback, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc(l.path, l.serve)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln) //nolint:errcheck // ends with Close
	return l, nil
}

// RedirectURL is the redirect_uri to register and send.
func (l *Loopback) RedirectURL() string { return "http://" + l.ln.Addr().String() + l.path }

// Close stops listening.
func (l *Loopback) Close() error { return l.srv.Close() }

func (l *Loopback) serve(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		http.Error(w, "This authorization was already completed; a callback is taken once. Start a new one with `mcp-gateway auth`.", http.StatusBadRequest)
		return
	}
	l.done = true
	l.mu.Unlock()
	q := r.URL.Query()
	var cb callback
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		cb.err = fmt.Errorf("the authorization server refused: %s", msg)
	} else if q.Get("code") == "" {
		cb.err = errors.New("the callback carries no code")
	} else {
		cb.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	l.results <- cb
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if cb.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<p>Authorization failed: %s</p>", html.EscapeString(cb.err.Error()))
		return
	}
	fmt.Fprint(w, "<p>mcp-gateway received the authorization. You may close this window.</p>")
}

// Fetcher shows the authorization URL with show and waits for the callback
// (or ctx's end).
func (l *Loopback) Fetcher(show func(authURL string)) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		show(args.URL)
		select {
		case cb := <-l.results:
			return cb.res, cb.err
		case <-ctx.Done():
			return nil, fmt.Errorf("no callback came: %w", ctx.Err())
		}
	}
}
