package campaign_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Found in review: WithFailOpen runs fn while another candidate holds the lock, if a
// keep-alive fails while waiting on contention.
func TestFailOpenNeverRunsAfterContentionThenFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New()}
		s, _ := f.Backend.Open(t.Context(), "holder", time.Hour)
		if _, err := s.Acquire(t.Context(), "x", 0); err != nil {
			t.Fatal(err)
		}
		f.failKeepAlive.Store(true) // one flaky keep-alive on the waiter's session
		ran := false
		res, err := campaign.RunIfLeader(t.Context(), f, "x", func(ctx context.Context, tok events.Token) (int, error) {
			ran = true
			return 0, nil
		}, campaign.WithID("a"), campaign.WithLease(2*time.Second), campaign.WithWait(10*time.Second),
			campaign.WithFailOpen())
		h, _ := f.Backend.Holder(context.Background(), "x")
		if ran {
			t.Errorf("fn ran without the lock while %q holds it (token %d): %+v, %v", h.ID, h.Token, res, err)
		}
		s.Close(context.Background())
	})
}

// Found in review: a waiting RunIfLeader whose KeepAlive hangs never returns: the
// keep-alive is not bounded by the lease, so the failure mode never applies.
func TestOpsWaitKeepAliveIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := b.Open(t.Context(), "holder", time.Hour)
		s.Acquire(t.Context(), "x", 0)
		time.AfterFunc(500*time.Millisecond, func() { b.Partition("a") })
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		start := time.Now()
		res, err := campaign.RunIfLeader(ctx, b, "x", answer, campaign.WithID("a"),
			campaign.WithLease(2*time.Second), campaign.WithWait(10*time.Second), campaign.WithSkipOnFailure())
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("RunIfLeader (lease 2s, wait 10s, Skip) returned after %v: %+v, %v; want a backend failure within the wait + lease", took, res, err)
		}
		b.HealAll()
		s.Close(context.Background())
	})
}
