package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	// MaxPerPrincipal bounds the calls of one principal (a sandbox)
	// waiting at once: beyond it a call is denied at once, so one sandbox
	// cannot bury the others' requests in `approval ls` (nor hold a
	// goroutine per call it makes). 0: MaxPendingPerPrincipal.
	MaxPerPrincipal int

	mu      sync.Mutex
	next    uint64
	pending map[string]*waiting
	gone    map[string]string // recently withdrawn requests: why, by id
	goneIDs []string          // their ids, oldest first
	refused map[string]uint64 // calls refused at MaxPerPrincipal, by principal
	// OnAnswer, when set, is told of every answer, timeout and withdrawal
	// (audit): outcome "granted", "denied", "timeout" or "cancelled".
	OnAnswer func(a *ApprovalRequest, outcome, by string)
}

type waiting struct {
	req    *ApprovalRequest
	ctx    context.Context // the caller's: once done, nobody may answer
	answer chan answer
}

// ErrGone is the error of Answer for a request whose caller went away.
var ErrGone = errors.New("the call is gone")

// maxGone bounds how many withdrawn requests Answer still recognises.
const maxGone = 1024

type answer struct {
	ok bool
	by string
}

// MaxPendingPerPrincipal is Queue.MaxPerPrincipal's default.
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
	if max := q.max(); n >= max {
		if q.refused == nil {
			q.refused = map[string]uint64{}
		}
		q.refused[a.Principal]++
		q.mu.Unlock()
		return false, "", fmt.Errorf("%d calls of %q already wait for approval (--max-pending-approvals %d); answer them (`mcp-gateway approval ls`) before more are queued", n, a.Principal, max)
	}
	q.next++
	a.ID = strconv.FormatUint(q.next, 10)
	a.Time = time.Now().UTC()
	w := &waiting{req: a, ctx: ctx, answer: make(chan answer, 1)}
	q.pending[a.ID] = w
	q.mu.Unlock()
	select {
	case ans := <-w.answer:
		if ctx.Err() != nil { // the caller went as the answer came: it must not run
			return false, "", ctx.Err()
		}
		return ans.ok, ans.by, nil
	case <-ctx.Done():
	}
	outcome := "timeout"
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		outcome = "cancelled" // the caller went away: cancelled, disconnected, its session ended
	}
	q.mu.Lock()
	_, still := q.pending[a.ID]
	delete(q.pending, a.ID)
	if still {
		q.forget(a.ID, outcome)
	}
	q.mu.Unlock()
	if !still { // answered meanwhile; Answer saw ctx done and said so
		return false, "", ctx.Err()
	}
	if q.OnAnswer != nil {
		q.OnAnswer(a, outcome, "")
	}
	return false, "", ctx.Err()
}

func (q *Queue) max() int {
	if q.MaxPerPrincipal > 0 {
		return q.MaxPerPrincipal
	}
	return MaxPendingPerPrincipal
}

// forget remembers a request that left the queue unanswered, so that a
// late answer is told it is gone. Called with q.mu held.
func (q *Queue) forget(id, why string) {
	if q.gone == nil {
		q.gone = map[string]string{}
	}
	q.gone[id] = why
	q.goneIDs = append(q.goneIDs, id)
	if len(q.goneIDs) > maxGone {
		delete(q.gone, q.goneIDs[0])
		q.goneIDs = q.goneIDs[1:]
	}
}

// Pending counts the waiting requests by principal, and the calls refused
// at MaxPerPrincipal since the start (the metrics).
func (q *Queue) Pending() (pending map[string]int, refused map[string]uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending, refused = map[string]int{}, map[string]uint64{}
	for _, w := range q.pending {
		pending[w.req.Principal]++
	}
	for p, n := range q.refused {
		refused[p] = n
	}
	return pending, refused
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
	why, gone := q.gone[id]
	if w != nil && w.ctx.Err() != nil { // its caller went as this answer came: never run it
		why, gone = "cancelled", true
		if errors.Is(w.ctx.Err(), context.DeadlineExceeded) {
			why = "timeout"
		}
		q.forget(id, why)
		if q.OnAnswer != nil {
			defer q.OnAnswer(w.req, why, "")
		}
		w = nil // Ask finds it gone and returns its ctx's error
	}
	q.mu.Unlock()
	switch {
	case gone && why == "timeout":
		return fmt.Errorf("approval %s: %w: nobody answered in time (--approval-timeout) and the call was denied; nothing was run", id, ErrGone)
	case gone:
		return fmt.Errorf("approval %s: %w: its caller went away (cancelled, disconnected or its session ended) before an answer; nothing was run", id, ErrGone)
	case w == nil:
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
