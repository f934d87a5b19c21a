package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Loopback is the gateway's redirect endpoint for a person's browser: an
// HTTP server on a loopback address taking one callback: a GET carrying the
// state of the authorization it waits for. Anything else (another local
// process or a web page guessing the port, a request before the
// authorization began, a wrong state) is refused and changes nothing, so it
// can neither end the authorization nor use it up. A second callback (a
// replayed code) is refused.
type Loopback struct {
	ln   net.Listener
	srv  *http.Server
	path string

	mu      sync.Mutex
	results chan callback
	state   string // the awaited authorization's; "" before Fetcher is called
	done    bool
	refused int // callbacks refused for a state not the awaited one
}

// ErrStateMismatch: the wait for the person's consent ended and the only
// callbacks that came carried a state the authorization did not send.
var ErrStateMismatch = errors.New("the callback's state is not the one sent")

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
	if r.Method != http.MethodGet {
		http.Error(w, "The OAuth callback is a GET.", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		http.Error(w, "This authorization was already completed; a callback is taken once. Start a new one with `mcp-gateway auth`.", http.StatusBadRequest)
		return
	}
	if l.state == "" || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(l.state)) != 1 {
		l.refused++
		l.mu.Unlock()
		http.Error(w, "This is not the callback of the authorization in progress (its state does not match); it was ignored.", http.StatusBadRequest)
		return
	}
	l.done = true
	l.mu.Unlock()
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
		u, err := url.Parse(args.URL)
		if err != nil || u.Query().Get("state") == "" {
			return nil, errors.New("the authorization URL carries no state")
		}
		l.mu.Lock()
		l.state = u.Query().Get("state")
		l.mu.Unlock()
		show(args.URL)
		select {
		case cb := <-l.results:
			return cb.res, cb.err
		case <-ctx.Done():
			l.mu.Lock()
			refused := l.refused
			l.mu.Unlock()
			if refused > 0 {
				return nil, fmt.Errorf("%w: %d callback(s) came with a state this authorization did not send and were refused, and none with its own (%v)", ErrStateMismatch, refused, ctx.Err())
			}
			return nil, fmt.Errorf("no callback came: %w", ctx.Err())
		}
	}
}
