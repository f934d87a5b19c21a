package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// batchRecorder is a SpanExporter keeping the size of each batch.
type batchRecorder struct {
	mu       sync.Mutex
	batches  []int
	names    map[string]int
	shutdown bool
	exported chan struct{} // a batch arrived (capacity 1000)
	fail     error
}

func newBatchRecorder() *batchRecorder {
	return &batchRecorder{names: map[string]int{}, exported: make(chan struct{}, 1000)}
}

func (r *batchRecorder) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	r.batches = append(r.batches, len(spans))
	for _, s := range spans {
		r.names[s.Name()]++
	}
	fail := r.fail
	r.mu.Unlock()
	r.exported <- struct{}{}
	return fail
}

func (r *batchRecorder) Shutdown(context.Context) error {
	r.mu.Lock()
	r.shutdown = true
	r.mu.Unlock()
	return nil
}

func (r *batchRecorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.batches...)
}

func batcherProvider(t *testing.T, env map[string]string, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *spanBatcher, *batchRecorder) {
	t.Helper()
	rec := newBatchRecorder()
	b := newSpanBatcher(rec, envOf(env))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, b, rec
}

func endSpans(tp *sdktrace.TracerProvider, name string, n int) {
	tr := tp.Tracer("test")
	for range n {
		_, s := tr.Start(context.Background(), name)
		s.End()
	}
}

// Full batches go out as they fill, without waiting for the schedule
// delay; the rest waits for it, or for a flush.
func TestSpanBatcherExportsFullBatches(t *testing.T) {
	tp, _, rec := batcherProvider(t, map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10", "OTEL_BSP_SCHEDULE_DELAY": "3600000"}, sdktrace.AlwaysSample())
	endSpans(tp, "call", 25)
	for range 2 {
		select {
		case <-rec.exported:
		case <-time.After(10 * time.Second):
			t.Fatalf("full batches not exported: %v", rec.sizes())
		}
	}
	if got := rec.sizes(); len(got) != 2 || got[0] != 10 || got[1] != 10 {
		t.Errorf("batches %v before the delay, want [10 10] (the last 5 wait)", got)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.sizes(); len(got) != 3 || got[2] != 5 {
		t.Errorf("batches %v after ForceFlush, want [10 10 5]", got)
	}
}

// A partial batch goes out once the schedule delay passes.
func TestSpanBatcherExportsAfterTheDelay(t *testing.T) {
	tp, _, rec := batcherProvider(t, map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "20"}, sdktrace.AlwaysSample())
	endSpans(tp, "call", 3)
	select {
	case <-rec.exported:
	case <-time.After(10 * time.Second):
		t.Fatal("a partial batch was not exported after OTEL_BSP_SCHEDULE_DELAY")
	}
	if got := rec.sizes(); len(got) != 1 || got[0] != 3 {
		t.Errorf("batches %v, want [3]", got)
	}
}

// Unsampled spans are not exported; a full queue drops spans rather than
// blocking the caller; Shutdown exports what is queued, shuts the exporter
// down, and drops what ends afterwards.
func TestSpanBatcherQueueAndShutdown(t *testing.T) {
	tp, b, _ := batcherProvider(t, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100", "OTEL_BSP_SCHEDULE_DELAY": "3600000"},
		sdktrace.NeverSample())
	endSpans(tp, "unsampled", 5)
	if b.queued != 0 {
		t.Errorf("%d unsampled spans queued, want 0", b.queued)
	}
	if b.maxBatch != 8 {
		t.Errorf("batch %d with a queue of 8, want 8 (a batch is at most the queue)", b.maxBatch)
	}

	tp2, b2, rec2 := batcherProvider(t, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8", "OTEL_BSP_SCHEDULE_DELAY": "3600000"},
		sdktrace.AlwaysSample())
	rec2.mu.Lock() // the exporter stalls: the queue fills
	done := make(chan struct{})
	go func() {
		defer close(done)
		endSpans(tp2, "call", 30)
	}()
	select {
	case <-done: // OnEnd never blocked on the stalled export
	case <-time.After(10 * time.Second):
		t.Fatal("ending spans blocked on a stalled exporter")
	}
	rec2.mu.Unlock()
	if d := b2.Dropped(); d == 0 {
		t.Errorf("no span dropped with a queue of 8 and a stalled exporter")
	}
	if err := tp2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec2.mu.Lock()
	exported, shut := rec2.names["call"], rec2.shutdown
	rec2.mu.Unlock()
	if exported+int(b2.Dropped()) != 30 {
		t.Errorf("%d exported + %d dropped, want 30", exported, b2.Dropped())
	}
	if !shut {
		t.Error("Shutdown did not shut the exporter down")
	}
	endSpans(tp2, "late", 3)
	_ = tp2.ForceFlush(context.Background())
	rec2.mu.Lock()
	late := rec2.names["late"]
	rec2.mu.Unlock()
	if late != 0 {
		t.Errorf("%d spans exported after Shutdown, want 0", late)
	}
}

// Export errors reach the caller of ForceFlush.
func TestSpanBatcherReportsExportErrors(t *testing.T) {
	tp, _, rec := batcherProvider(t, map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "3600000"}, sdktrace.AlwaysSample())
	rec.fail = errors.New("collector down")
	endSpans(tp, "call", 2)
	if err := tp.ForceFlush(context.Background()); err == nil || err.Error() != "collector down" {
		t.Errorf("ForceFlush = %v, want the exporter's error", err)
	}
}

// Many goroutines ending spans at once lose none (run with -race).
func TestSpanBatcherConcurrent(t *testing.T) {
	tp, _, rec := batcherProvider(t, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100000", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "7"}, sdktrace.AlwaysSample())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { endSpans(tp, "call", 500) })
	}
	wg.Wait()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	n := rec.names["call"]
	rec.mu.Unlock()
	if n != 4000 {
		t.Errorf("%d spans exported, want 4000", n)
	}
}
