package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A request whose caller goes leaves the queue at once, frees its place,
// and a late answer is told it is gone; the bound per principal is
// MaxPerPrincipal, and the refusal names its flag.
func TestQueueWithdrawsGoneCallers(t *testing.T) {
	var outcomes []string
	q := &Queue{MaxPerPrincipal: 1, OnAnswer: func(a *ApprovalRequest, outcome, by string) { outcomes = append(outcomes, a.Name+":"+outcome) }}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := q.Ask(ctx, &ApprovalRequest{Name: "gone", Principal: "sb"})
		errc <- err
	}()
	var id string
	for id == "" {
		if l := q.List(); len(l) == 1 {
			id = l[0].ID
		}
		time.Sleep(time.Millisecond)
	}
	if _, _, err := q.Ask(context.Background(), &ApprovalRequest{Name: "more", Principal: "sb"}); err == nil || !strings.Contains(err.Error(), "--max-pending-approvals 1") {
		t.Fatalf("a second call of the sandbox: %v, want refused naming --max-pending-approvals", err)
	}
	if p, r := q.Pending(); p["sb"] != 1 || r["sb"] != 1 {
		t.Errorf("Pending %v, refused %v", p, r)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the withdrawn call: %v", err)
	}
	if l := q.List(); len(l) != 0 {
		t.Errorf("still listed: %v", l)
	}
	err := q.Answer(id, true, "me")
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "its caller went away") || !strings.Contains(err.Error(), "nothing was run") {
		t.Errorf("allow of a withdrawn call: %v", err)
	}
	// Its place is free.
	go func() {
		ok, _, err := q.Ask(context.Background(), &ApprovalRequest{Name: "next", Principal: "sb"})
		if !ok || err != nil {
			errc <- errors.New("the next call was not granted")
			return
		}
		errc <- nil
	}()
	for id == "" || len(q.List()) == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := q.Answer(q.List()[0].ID, true, "me"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if strings.Join(outcomes, ",") != "gone:cancelled,next:granted" {
		t.Errorf("outcomes %v", outcomes)
	}
}

// An answer that comes once the caller's context has ended never lets the call run.
func TestQueueAnswerAfterCallerEnded(t *testing.T) {
	q := &Queue{}
	ctx, cancel := context.WithCancel(context.Background())
	w := &waiting{req: &ApprovalRequest{ID: "1", Name: "x"}, ctx: ctx, answer: make(chan answer, 1)}
	q.pending = map[string]*waiting{"1": w}
	cancel()
	if err := q.Answer("1", true, "me"); !errors.Is(err, ErrGone) {
		t.Fatalf("answer after the caller ended: %v", err)
	}
	select {
	case <-w.answer:
		t.Fatal("the answer reached the call")
	default:
	}
}
