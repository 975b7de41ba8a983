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
			first.c.Resign(context.Background())
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
