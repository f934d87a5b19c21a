package procs

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// recorder is a Governor whose changes of Ps are recorded, not made.
func recorder() (*Governor, *[]bool) {
	var got []bool
	return &Governor{setOne: func(one bool) { got = append(got, one) }}, &got
}

func TestStep(t *testing.T) {
	g, got := recorder()
	// One client at a time: the default stays.
	for range 20 {
		g.step(1)
	}
	if len(*got) != 0 {
		t.Fatalf("one request at a time changed the Ps: %v", *got)
	}
	// Several in flight: one P, once.
	g.step(2)
	if len(*got) != 0 {
		t.Fatalf("two in flight changed the Ps: %v", *got)
	}
	g.step(busy)
	g.step(16)
	if want := []bool{true}; !slices.Equal(*got, want) {
		t.Fatalf("after a busy window: %v, want %v", *got, want)
	}
	// Calm, but not for long enough; then busy again; then calm.
	for range calmWindows - 1 {
		g.step(1)
	}
	g.step(busy)
	for range calmWindows - 1 {
		g.step(0)
	}
	if want := []bool{true}; !slices.Equal(*got, want) {
		t.Fatalf("the default came back before %d calm windows: %v", calmWindows, *got)
	}
	if !g.step(0) {
		t.Fatal("the watch stopped on one P")
	}
	if want := []bool{true, false}; !slices.Equal(*got, want) {
		t.Fatalf("after %d calm windows: %v, want %v", calmWindows, *got, want)
	}
	// Idle on the default: the watch stops after idleWindows.
	stopped := 0
	for i := range idleWindows + 1 {
		if !g.step(0) {
			stopped = i + 1
			break
		}
	}
	if stopped == 0 {
		t.Fatalf("the watch did not stop after %d idle windows", idleWindows)
	}
}

func TestWrapCountsPOSTs(t *testing.T) {
	g, _ := recorder()
	release := make(chan struct{})
	var entered sync.WaitGroup
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Done()
		<-release
	}))
	var done sync.WaitGroup
	serve := func(method string) {
		entered.Add(1)
		done.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, "/mcp", nil)) })
	}
	serve(http.MethodGet) // a stream: not counted
	serve(http.MethodPost)
	serve(http.MethodPost)
	entered.Wait()
	if n, p := g.inflight.Load(), g.peak.Load(); n != 2 || p != 2 {
		t.Errorf("in flight %d, peak %d; want 2 and 2 (the GET not counted)", n, p)
	}
	close(release)
	done.Wait()
	if n := g.inflight.Load(); n != 0 {
		t.Errorf("in flight %d after the requests ended", n)
	}
	if !g.watching.Load() {
		t.Error("no watch started by the first POST")
	}
}

func TestOffWhenSetByEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	g := New()
	if !g.off {
		t.Error("a Governor is on although GOMAXPROCS is set in the environment")
	}
	h := http.NotFoundHandler()
	if w := g.Wrap(h); w == nil || g.watching.Load() {
		t.Error("Wrap of a Governor that is off returned nothing or started watching")
	}
}
