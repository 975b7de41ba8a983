package elector

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

func TestLimiterBoundsAndOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(2)
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
			l.done()
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
		l := newLimiter(1)
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
		l.done()
		// The cancelled waiter took nothing: the slot is free again.
		if err := l.wait(context.Background(), laneTake); err != nil {
			t.Fatal(err)
		}
		if l.free != 0 || l.queued() != 0 {
			t.Errorf("free %d, queued %d; want 0 and 0", l.free, l.queued())
		}
	})
}
