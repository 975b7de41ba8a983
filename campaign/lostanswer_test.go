package campaign_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// runCandidate runs cand until the test's end closes it; Run must then
// return ErrClosed.
func runCandidate(t *testing.T, cand *campaign.Session) {
	done := make(chan error, 1)
	go func() { done <- cand.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := cand.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if err := <-done; !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("the session's Run = %v, want ErrClosed", err)
		}
	})
}

// An acquire the server applied after the client gave up on it is the
// campaign's: the next try adopts it, under the token the server gave.
func TestAcquireWithLostAnswerIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(1)
		cand := newSession(t, b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c := run(t, newCampaign(t, b, "lock", campaign.WithSession(cand)))
		e := next(t, c.c.Events())
		if e.Kind != events.Elected || e.Token != b.lost("lock") {
			t.Errorf("after a lost answer: %v, want Elected under the token the server gave (%d)", e, b.lost("lock"))
		}
		c.stop(t)
	})
}

// An acquire the server applied after the client gave up on it is
// released when the campaign ends before it could adopt it: the shared
// session lives on, and would otherwise hold the lock for nobody.
func TestAcquireWithLostAnswerIsReleasedOnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(1)
		mem := b.Backend
		cand := newSession(t, b, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c := run(t, newCampaign(t, b, "lock", campaign.WithSession(cand), campaign.WithRetry(time.Hour)))
		synctest.Wait()
		if s := c.c.State(); s.Leader || s.Err == nil {
			t.Fatalf("after a lost answer: state %+v, want no term and the error", s)
		}
		c.stop(t)
		if h, err := mem.Holder(t.Context(), "lock"); err != nil || h.ID != "" {
			t.Errorf("campaign closed, its session alive: the lock is held by %+v (%v), want free", h, err)
		}
	})
}

// An acquire whose answer comes after the session it was made on expired
// and the candidate replaced it elects the campaign only with the lock
// held by the live session: no outsider can take the lock while the
// campaign says it leads.
func TestAcquireOnReplacedSessionIsNotElected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		w := &faulty{Backend: memory.New()}
		bs, btok := holding(t, w.Backend, "b", "lock") // b holds the lock first
		cand := newSession(t, w, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c := run(t, newCampaign(t, w, "lock", campaign.WithSession(cand)))
		time.Sleep(500 * time.Millisecond)
		w.failKeepAlive.Store(true)                     // keep-alives stop reaching the backend
		w.acquireDelayAll.Store(int64(8 * time.Second)) // answers to acquires come late
		// The watch wakes a: an acquire on the first session.
		if err := bs.Release(t.Context(), "lock", btok, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3500 * time.Millisecond) // the first session expired at the backend
		w.failKeepAlive.Store(false)        // the next keep-alive finds the session lost: a new one opens
		w.acquireDelayAll.Store(0)
		e := next(t, c.c.Events())
		if e.Kind != events.Elected {
			t.Fatalf("got %s", e)
		}
		o, err := w.Backend.Open(t.Context(), "c", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := o.Acquire(t.Context(), "lock", 0); err == nil {
			t.Errorf("campaign elected with token %d (deadline %v) on a dead session; an outsider took the lock with token %d", e.Token, e.Deadline, tok)
			time.Sleep(30 * time.Second)
			if c.c.State().Leader {
				t.Errorf("30s later the campaign still leads (deadline %v) while the outsider holds the lock", c.c.State().Deadline)
			}
		}
		for _, s := range []backends.Session{o, bs} {
			if err := s.Close(t.Context()); err != nil {
				t.Error(err)
			}
		}
		c.stop(t)
	})
}
