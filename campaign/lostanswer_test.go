package campaign_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// runCandidate runs cand until the test's bubble ends it with Close.
func runCandidate(t *testing.T, cand *campaign.Session) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = cand.Run(context.Background())
	}()
	t.Cleanup(func() {
		cand.Close()
		<-done
	})
}

// An acquire the server applied after the client gave up on it is the
// campaign's: the next try adopts it, under the token the server gave.
func TestAcquireWithLostAnswerIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(1)
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c, _ := campaign.New(b, "lock", campaign.WithSession(cand))
		go c.Run(context.Background())
		defer c.Close()
		e := next(t, c.Events())
		if e.Kind != events.Elected || e.Token != b.lost("lock") {
			t.Errorf("after a lost answer: %v, want Elected under the token the server gave (%d)", e, b.lost("lock"))
		}
	})
}

// An acquire the server applied after the client gave up on it is
// released when the campaign ends before it could adopt it: the shared
// session lives on, and would otherwise hold the lock for nobody.
func TestAcquireWithLostAnswerIsReleasedOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(1)
		mem := b.Backend
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c, _ := campaign.New(b, "lock", campaign.WithSession(cand), campaign.WithRetry(time.Hour))
		go c.Run(context.Background())
		synctest.Wait()
		if s := c.State(); s.Leader || s.Err == nil {
			t.Fatalf("after a lost answer: state %+v, want no term and the error", s)
		}
		c.Close()
		if h, err := mem.Holder(t.Context(), "lock"); err != nil || h.ID != "" {
			t.Errorf("campaign closed, its session alive: the lock is held by %+v (%v), want free", h, err)
		}
	})
}
