package elector

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestLimiterBoundsAndOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(2, 0)
		ctx := context.Background()
		for range 2 {
			if err := l.wait(ctx, laneTake); err != nil {
				t.Fatal(err)
			}
		}
		var order []string
		start := func(name string, lane int) {
			go func() {
				if err := l.wait(ctx, lane); err != nil {
					t.Error(err)
					return
				}
				order = append(order, name) // one at a time: the slots are handed over one by one below
			}()
			synctest.Wait()
		}
		start("take-1", laneTake)
		start("take-2", laneTake)
		start("free-1", laneFree)
		if len(order) != 0 {
			t.Fatalf("%v got a slot while both were taken", order)
		}
		for range 3 {
			l.done(time.Time{})
			synctest.Wait()
		}
		want := []string{"free-1", "take-1", "take-2"}
		if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
			t.Errorf("served %v, want %v (releases first, then in order)", order, want)
		}
	})
}

func TestLimiterWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(1, 0)
		if err := l.wait(context.Background(), laneTake); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() { got <- l.wait(ctx, laneTake) }()
		synctest.Wait()
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("wait after cancel = %v, want context.Canceled", err)
		}
		l.done(time.Time{})
		// The cancelled waiter took nothing: the slot is free again.
		if err := l.wait(context.Background(), laneTake); err != nil {
			t.Fatal(err)
		}
		if l.inFlight != 1 || l.queued() != 0 {
			t.Errorf("in flight %d, queued %d; want 1 and 0", l.inFlight, l.queued())
		}
	})
}

// A call that queued longer than slow (beyond the quickest call) halves
// the bound once for the calls that waited in the same queue, again for a
// slow call started after the cut, and never below callsInFlightLeast;
// waiters are let in only below the bound.
func TestLimiterHalvesWhileCallsAreSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slow = 100 * time.Millisecond
		l := newLimiter(64, slow)
		ctx := context.Background()
		quick(t, l, slow/10)
		start := time.Now()
		for range 64 {
			if err := l.wait(ctx, laneTake); err != nil {
				t.Fatal(err)
			}
		}
		handed := make(chan time.Time, 10)
		for range 10 {
			l.start(ctx, laneTake, func(err error) {
				if err != nil {
					t.Error(err)
				}
				handed <- time.Now()
			})
		}
		time.Sleep(2 * slow)
		for i := range 64 {
			l.done(start)
			synctest.Wait()
			if i == 0 && len(handed) != 0 {
				t.Fatalf("a waiter was let in with %d calls in flight after a slow one; bound %d", l.inFlight, l.limit)
			}
		}
		if l.limit != 32 {
			t.Fatalf("bound %d after 64 slow calls that waited in one queue, want 32 (halved once)", l.limit)
		}
		if len(handed) != 10 || l.inFlight != 10 {
			t.Fatalf("%d waiters let in, %d in flight; want 10 and 10", len(handed), l.inFlight)
		}
		time.Sleep(2 * slow)
		for i := range 10 {
			l.done(<-handed)
			if l.limit != 16 {
				t.Fatalf("bound %d after %d slow calls started together after the first cut, want 16 (halved once more)", l.limit, i+1)
			}
		}
		for _, want := range []int{8, callsInFlightLeast, callsInFlightLeast} {
			if err := l.wait(ctx, laneTake); err != nil {
				t.Fatal(err)
			}
			started := time.Now()
			time.Sleep(2 * slow)
			l.done(started)
			if l.limit != want {
				t.Fatalf("bound %d after a slow call started after the last cut, want %d", l.limit, want)
			}
		}
	})
}

// While calls wait, fast calls raise the bound by one for every bound's
// worth of them, up to its most; with nobody waiting it stays.
func TestLimiterRisesWhileCallsAreFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slow = 100 * time.Millisecond
		l := newLimiter(8, slow)
		l.limit = callsInFlightLeast
		ctx := context.Background()
		for range 100 { // a steady queue: every call done is replaced by a waiter
			l.start(ctx, laneTake, func(err error) {})
		}
		synctest.Wait()
		calls := 0
		for l.limit < 8 && calls < 100 {
			l.done(time.Now())
			synctest.Wait()
			calls++
		}
		if want := 4 + 5 + 6 + 7; l.limit != 8 || calls != want {
			t.Fatalf("bound %d after %d fast calls, want 8 after %d", l.limit, calls, want)
		}
		if l.inFlight != 8 {
			t.Fatalf("%d calls in flight under a bound of 8 with waiters queued", l.inFlight)
		}
		for range 20 {
			l.done(time.Now())
			synctest.Wait()
		}
		if l.limit != 8 {
			t.Fatalf("bound %d rose above its most, 8", l.limit)
		}

		idle := newLimiter(8, slow)
		idle.limit = callsInFlightLeast
		for range 20 {
			quick(t, idle, 0)
		}
		if idle.limit != callsInFlightLeast {
			t.Fatalf("bound %d after 20 fast calls with nobody waiting, want %d (unchanged)", idle.limit, callsInFlightLeast)
		}
	})
}

// quick makes a call that takes d: the server's usual answer.
func quick(t *testing.T, l *limiter, d time.Duration) {
	t.Helper()
	if err := l.wait(context.Background(), laneTake); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(d)
	l.done(start)
}

// A far server answers slowly without queueing: calls that all take
// longer than slow, as long as the quickest, never lower the bound.
func TestLimiterKeepsItsBoundOnAFarServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const slow = 100 * time.Millisecond
		l := newLimiter(64, slow)
		for range 2 * baseWindow / (3 * slow) {
			quick(t, l, 3*slow)
		}
		if l.limit != 64 {
			t.Fatalf("bound %d after calls of 3×slow each, want 64", l.limit)
		}
	})
}
