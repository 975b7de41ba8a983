package campaign_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// watchCounter counts the watches set up on a memory backend.
type watchCounter struct {
	*memory.Backend
	n atomic.Int64
}

func (w *watchCounter) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	w.n.Add(1)
	return w.Backend.Watch(ctx, name)
}

// TestNoWatchForAFreeLock: a run or campaign that gets a free lock at once
// sets up no watch (on Redis a watch is a connection of its own); one that
// finds the lock held watches it, and is woken by the release, not by its
// retry interval.
func TestNoWatchForAFreeLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &watchCounter{Backend: memory.New()}
		res, err := campaign.RunIfLeader(t.Context(), b, "free", answer, campaign.WithWait(time.Minute))
		if err != nil || res.Outcome != campaign.Succeeded || b.n.Load() != 0 {
			t.Fatalf("RunIfLeader on a free lock: %+v, %v, %d watches; want elected, no watch", res, err, b.n.Load())
		}
		first := start(t, b, "first")
		if e := next(t, first.c.Events()); e.Kind != events.Elected || b.n.Load() != 0 {
			t.Fatalf("first campaign: %v after %d watches; want elected, no watch", e, b.n.Load())
		}

		began := time.Now()
		go func() {
			time.Sleep(100 * time.Millisecond)
			if err := first.c.Resign(context.Background()); err != nil {
				t.Errorf("Resign: %v", err)
			}
		}()
		res, err = campaign.RunIfLeader(t.Context(), b, "lock", answer, campaign.WithWait(time.Minute), campaign.WithRetry(10*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("waiting RunIfLeader: %+v, %v", res, err)
		}
		// The memory backend's watch is not of releases alone, so the run
		// does not yield: it tries the moment the release wakes it.
		if waited := time.Since(began); waited != 100*time.Millisecond || b.n.Load() != 1 {
			t.Fatalf("waited %v with %d watches; want woken by the release at 100ms, one watch", waited, b.n.Load())
		}
		first.stop(t)
	})
}

// A release that comes while a waiter's acquire is in flight still wakes
// the waiter: the acquire's answer (the lock is held) does not hide the
// watch's signal, so a graceful handover takes less than a retry interval.
func TestReleaseDuringAcquireStillWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New(), acquireDelay: map[string]time.Duration{"b": 50 * time.Millisecond}}
		a := start(t, f, "a")
		next(t, a.c.Events())
		b := start(t, f, "b")
		time.Sleep(10 * time.Millisecond) // b's first acquire is in flight (50ms)
		resigned := time.Now()
		a.stop(t) // graceful: releases at once, a no longer competes
		won := next(t, b.c.Events())
		if took := won.Time.Sub(resigned); took >= elector.DefaultRetry {
			t.Errorf("graceful handover took %v (>= one retry interval): the release signal was lost", took)
		}
		b.stop(t)
	})
}

// Observe pauses for its retry interval after a watch that the backend
// closes at once: it reads the holder a few times per interval, never in a
// loop without pause.
func TestObservePausesAfterBrokenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New(), closedWatch: true, hot: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := campaign.Observe(ctx, f, "lock", campaign.WithRetry(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		<-ch
		select {
		case <-time.After(100 * time.Millisecond):
		case <-f.hot: // the clock cannot move: the holder is read without pause
		}
		n := f.holders.Load()
		cancel()
		for range ch {
		}
		if n > 10 {
			t.Errorf("Observe read the holder %d times in 100ms with a 50ms retry: hot loop", n)
		}
	})
}
