package main

import (
	"context"
	"runtime"
	"time"
)

// settleQuiet and settleMax bound how long a measurement waits for the
// process to settle: until its goroutine count has held still for
// settleQuiet (goroutines of the previous point, and calls of the start-up,
// winding down), at most settleMax.
const (
	settleQuiet = 500 * time.Millisecond
	settleMax   = 10 * time.Second
)

// footprint is the process's live heap and goroutine stacks, and its
// goroutines, after garbage collection.
type footprint struct {
	heap, stacks int64
	goroutines   int
}

// measure collects garbage until the stacks in use stop changing (each
// GC halves the stack of a goroutine that uses under a quarter of it, and
// frees a stack span only once every stack in it is free), at least twice
// and at most six times, then reads the footprint.
func measure() footprint {
	var m runtime.MemStats
	stacks := int64(-1)
	for i := 0; i < 6; i++ {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if i > 0 && int64(m.StackInuse) == stacks {
			break
		}
		stacks = int64(m.StackInuse)
	}
	return footprint{heap: int64(m.HeapAlloc), stacks: int64(m.StackInuse), goroutines: runtime.NumGoroutine()}
}

// settledFootprint waits until the goroutine count has held still for settleQuiet
// (at most settleMax), then measures; settled is false when the count was
// still changing. Each point is measured against a settled footprint
// taken just before it starts, so what the previous point or workload left
// winding down does not count against it.
func settledFootprint(ctx context.Context) (f footprint, settled bool) {
	deadline := time.Now().Add(settleMax)
	n, still := runtime.NumGoroutine(), time.Now()
	for time.Since(still) < settleQuiet && ctx.Err() == nil {
		if time.Now().After(deadline) {
			return measure(), false
		}
		sleep(ctx, 50*time.Millisecond)
		if m := runtime.NumGoroutine(); m != n {
			n, still = m, time.Now()
		}
	}
	return measure(), true
}

// settle returns the settled footprint, and logs one that did not settle
// or took long (what, "before" or "holding", names it).
func (b *bench) settle(ctx context.Context, what string) footprint {
	start := time.Now()
	f, settled := settledFootprint(ctx)
	if took := time.Since(start).Round(time.Millisecond); !settled || took > 5*time.Second {
		b.logf("  footprint %s: taken after %v, goroutines settled: %v", what, took, settled)
	}
	return f
}
