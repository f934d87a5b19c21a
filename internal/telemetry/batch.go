package telemetry

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanBatcher is the gateway's span processor (sdktrace.SpanProcessor): it
// gathers the ended, sampled spans into batches under a lock, and wakes the
// goroutine that exports them only when a batch is full or the schedule
// delay has passed. The SDK's batch span processor hands every span to its
// goroutine through a channel instead: under load, a wake-up and a switch
// of goroutines per span, two per traced call. It reads the OTEL_BSP_*
// variables as the SDK's does.
type spanBatcher struct {
	exp      sdktrace.SpanExporter
	maxBatch int
	maxQueue int
	delay    time.Duration // OTEL_BSP_SCHEDULE_DELAY
	timeout  time.Duration // OTEL_BSP_EXPORT_TIMEOUT

	mu      sync.Mutex
	cur     []sdktrace.ReadOnlySpan   // the batch being filled
	full    [][]sdktrace.ReadOnlySpan // full batches waiting for the exporter
	queued  int                       // spans in cur and full
	stopped bool
	dropped int64 // spans not queued because the queue was full

	exportMu sync.Mutex // one export at a time, as SpanExporter requires

	wake chan struct{} // a batch is full (capacity 1)
	stop chan struct{} // closed by Shutdown
	done chan struct{} // closed when the export goroutine has ended
	once sync.Once
}

// The SDK's defaults for the OTEL_BSP_* variables.
const (
	defaultScheduleDelay = 5 * time.Second
	defaultExportTimeout = 30 * time.Second
	defaultMaxQueueSize  = 2048
)

// newSpanBatcher starts a span batcher exporting to exp, configured by the
// OTEL_BSP_* variables getenv reads (the gateway's batch of
// DefaultExportBatch spans when OTEL_BSP_MAX_EXPORT_BATCH_SIZE is unset).
func newSpanBatcher(exp sdktrace.SpanExporter, getenv func(string) string) *spanBatcher {
	b := &spanBatcher{
		exp:      exp,
		maxBatch: envInt(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", DefaultExportBatch),
		maxQueue: envInt(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", defaultMaxQueueSize),
		delay:    envMillis(getenv, "OTEL_BSP_SCHEDULE_DELAY", defaultScheduleDelay),
		timeout:  envMillis(getenv, "OTEL_BSP_EXPORT_TIMEOUT", defaultExportTimeout),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	b.maxBatch = min(b.maxBatch, b.maxQueue) // as the SDK's processor does
	b.cur = make([]sdktrace.ReadOnlySpan, 0, b.maxBatch)
	go b.run()
	return b
}

// envInt reads a positive integer variable; unset or invalid gives def.
func envInt(getenv func(string) string, name string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(getenv(name)))
	if err != nil || n <= 0 {
		return def
	}
	return n
}

// envMillis reads a variable of milliseconds; unset or invalid gives def.
func envMillis(getenv func(string) string, name string, def time.Duration) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(getenv(name)))
	if err != nil || n < 0 {
		return def
	}
	return time.Duration(n) * time.Millisecond
}

func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span; a full queue drops it.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	if b.queued >= b.maxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.cur = append(b.cur, s)
	b.queued++
	filled := len(b.cur) >= b.maxBatch
	if filled {
		b.full = append(b.full, b.cur)
		b.cur = make([]sdktrace.ReadOnlySpan, 0, b.maxBatch)
	}
	b.mu.Unlock()
	if filled {
		select {
		case b.wake <- struct{}{}:
		default: // already woken
		}
	}
}

// run exports the full batches when woken, and whatever is queued once the
// schedule delay passes without a full batch.
func (b *spanBatcher) run() {
	defer close(b.done)
	t := time.NewTimer(b.delay)
	defer t.Stop()
	for {
		partial := false
		select {
		case <-b.stop:
			return
		case <-b.wake:
		case <-t.C:
			partial = true
		}
		b.export(context.Background(), partial)
		t.Reset(b.delay)
	}
}

// export sends the full batches, and the one being filled too if partial,
// each under the export timeout.
func (b *spanBatcher) export(ctx context.Context, partial bool) error {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	b.mu.Lock()
	if partial && len(b.cur) > 0 {
		b.full = append(b.full, b.cur)
		b.cur = make([]sdktrace.ReadOnlySpan, 0, b.maxBatch)
	}
	batches := b.full
	b.full = nil
	b.mu.Unlock()
	var first error
	for _, batch := range batches {
		ectx, cancel := ctx, context.CancelFunc(func() {})
		if b.timeout > 0 {
			ectx, cancel = context.WithTimeout(ctx, b.timeout)
		}
		err := b.exp.ExportSpans(ectx, batch)
		cancel()
		b.mu.Lock()
		b.queued -= len(batch)
		b.mu.Unlock()
		if err != nil {
			otel.Handle(err) // the SDK's error handler, as its own processor reports
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// ForceFlush exports every span queued.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	return b.export(ctx, true)
}

// Shutdown exports what is queued, stops, and shuts the exporter down;
// spans ended afterwards are dropped.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		if ferr := b.export(ctx, true); ferr != nil {
			err = ferr
		}
		if serr := b.exp.Shutdown(ctx); serr != nil && err == nil {
			err = serr
		}
	})
	return err
}

// Dropped counts the spans dropped for a full queue.
func (b *spanBatcher) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
