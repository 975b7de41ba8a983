package etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// TestEveryShortPeriod: campaign.Every with the shortest period etcd can
// keep apart (2 s: leases of whole seconds, at least 2, freed up to half a
// second late) runs every window exactly once across three replicas: a
// window's hold spills past its end, but not onto the next window's lock.
func TestEveryShortPeriod(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 7 windows of 2 s")
	}
	cli := etcdtest.Start(t).Client(t)
	b := newBackend(t, cli)
	const period, windows = 2 * time.Second, 6
	var mu sync.Mutex
	runs := map[time.Time]int{}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			err := campaign.Every(ctx, b, "every", period, func(ctx context.Context, tok events.Token) error {
				mu.Lock()
				defer mu.Unlock()
				runs[time.Now().Round(period)]++
				return nil
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Every returned %v, want context.Canceled", err)
			}
		})
	}
	first := time.Now().Truncate(period).Add(period)
	// Kept as a sleep: Every runs on the wall clock's windows, and that
	// each of them ran once and only once is what is tested; stop 3/4
	// into the last.
	time.Sleep(time.Until(first.Add(windows*period - period/4)))
	cancel()
	wg.Wait()
	for i := range windows {
		w := first.Add(time.Duration(i) * period)
		if n := runs[w]; n != 1 {
			t.Errorf("window %v ran %d times, want once (all runs: %v)", w.Format("15:04:05.000"), n, runs)
		}
	}
	if err := campaign.Every(t.Context(), b, "every", time.Second, func(context.Context, events.Token) error { return nil }); !errors.Is(err, campaign.ErrInvalid) {
		t.Errorf("Every with a 1 s period on etcd: %v, want ErrInvalid", err)
	}
}
