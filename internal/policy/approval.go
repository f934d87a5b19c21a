package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
)

// ApprovalRequest is a call waiting for a person's approval.
type ApprovalRequest struct {
	ID        string          `json:"id"`
	Time      time.Time       `json:"time"`
	Principal string          `json:"principal"`
	Server    string          `json:"server,omitempty"`
	Name      string          `json:"name"`
	Method    string          `json:"method"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason"`
	Policies  []string        `json:"policies,omitempty"`
}

// Approver asks a person whether a call may run.
type Approver interface {
	// Ask waits for the answer until ctx ends, and returns it with who gave it.
	Ask(ctx context.Context, a *ApprovalRequest) (approved bool, by string, err error)
}

// Queue holds the calls waiting for approval on the host; a person
// answers with `mcp-gateway approval allow|deny ID`.
type Queue struct {
	mu      sync.Mutex
	next    uint64
	pending map[string]*waiting
	// OnAnswer, when set, is told of every answer and timeout (audit).
	OnAnswer func(a *ApprovalRequest, outcome, by string)
}

type waiting struct {
	req    *ApprovalRequest
	answer chan answer
}

type answer struct {
	ok bool
	by string
}

// MaxPendingPerPrincipal bounds the calls of one principal (a sandbox)
// waiting for approval at once: beyond it a call is denied at once, so one
// sandbox cannot bury the others' requests in `approval ls` (nor hold a
// goroutine per call it makes).
const MaxPendingPerPrincipal = 32

// Ask queues the request and waits for its answer.
func (q *Queue) Ask(ctx context.Context, a *ApprovalRequest) (bool, string, error) {
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[string]*waiting{}
	}
	n := 0
	for _, w := range q.pending {
		if w.req.Principal == a.Principal {
			n++
		}
	}
	if n >= MaxPendingPerPrincipal {
		q.mu.Unlock()
		return false, "", fmt.Errorf("%d calls of %q already wait for approval; answer them (`mcp-gateway approval ls`) before more are queued", n, a.Principal)
	}
	q.next++
	a.ID = strconv.FormatUint(q.next, 10)
	a.Time = time.Now().UTC()
	w := &waiting{req: a, answer: make(chan answer, 1)}
	q.pending[a.ID] = w
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.pending, a.ID)
		q.mu.Unlock()
	}()
	select {
	case ans := <-w.answer:
		return ans.ok, ans.by, nil
	case <-ctx.Done():
		if q.OnAnswer != nil {
			q.OnAnswer(a, "timeout", "")
		}
		return false, "", ctx.Err()
	}
}

// List returns the waiting requests, oldest first.
func (q *Queue) List() []ApprovalRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]ApprovalRequest, 0, len(q.pending))
	for _, w := range q.pending {
		out = append(out, *w.req)
	}
	slices.SortFunc(out, func(a, b ApprovalRequest) int {
		ai, _ := strconv.ParseUint(a.ID, 10, 64)
		bi, _ := strconv.ParseUint(b.ID, 10, 64)
		return int(ai) - int(bi)
	})
	return out
}

// Answer approves or denies a waiting request.
func (q *Queue) Answer(id string, ok bool, by string) error {
	q.mu.Lock()
	w := q.pending[id]
	delete(q.pending, id)
	q.mu.Unlock()
	if w == nil {
		return fmt.Errorf("no call is waiting for approval with id %q (run `mcp-gateway approval ls`)", id)
	}
	if q.OnAnswer != nil {
		outcome := "denied"
		if ok {
			outcome = "granted"
		}
		q.OnAnswer(w.req, outcome, by)
	}
	w.answer <- answer{ok, by}
	return nil
}

// Describe renders a request on one line for `approval ls`.
func (a ApprovalRequest) Describe() string {
	subject := a.Name
	if a.Server != "" {
		subject = a.Server + "/" + a.Name
	}
	return strings.Join([]string{a.ID, a.Time.Format(time.RFC3339), a.Principal, a.Method, subject, shownJSON(a.Arguments), a.Reason}, "\t")
}

// shownJSON renders a call's arguments for the person who approves it:
// compact (the arguments are the caller's bytes, and whitespace between
// their tokens, newlines included, could push a part out of sight or make
// a line that reads as another request) and with every character that
// does not print (a bidirectional override reorders what is shown) as a
// \u escape, which JSON reads as the same string.
func shownJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return strconv.Quote(string(raw))
	}
	var b strings.Builder
	for _, r := range buf.String() {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, "\\u%04x", u)
		}
	}
	return b.String()
}
