package campaign_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// Two campaigns for one name on one candidate would both be told they hold
// it, with one token: the second one's Run is refused.
func TestSharedCandidateRefusesTheSameNameTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(context.Background()) }()
		c1, _ := campaign.New(b, "lock", campaign.WithSession(cand))
		c2, _ := campaign.New(b, "lock", campaign.WithSession(cand))
		go c1.Run(context.Background())
		next(t, c1.Events())
		if err := c2.Run(t.Context()); !errors.Is(err, campaign.ErrInvalid) {
			t.Errorf("second campaign for the same name on one candidate: Run = %v, want ErrInvalid", err)
		}
		c1.Close()
		c3, _ := campaign.New(b, "lock", campaign.WithSession(cand))
		go c3.Run(context.Background())
		if e := next(t, c3.Events()); e.Kind != events.Elected {
			t.Errorf("after the first closed, a new campaign for the name got %s", e)
		}
		c3.Close()
		cand.Close()
		<-cd
	})
}

// Found in review: the candidate and its campaigns stop on the same context (the usual
// signal.NotifyContext pattern). The candidate closes the session at once,
// freeing the lock while the work bound to the term is still running.
func TestCandidateStopWaitsForTermWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		ctx, cancel := context.WithCancel(context.Background())
		cand, _ := campaign.NewSession(b, campaign.WithID("a"), campaign.WithTTL(ttl))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(ctx) }()
		c, _ := campaign.New(b, "lock", campaign.WithSession(cand), campaign.WithGrace(5*time.Second))
		var workDone atomic.Bool
		wd := make(chan error, 1)
		go func() {
			wd <- campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
				<-ctx.Done()
				time.Sleep(2 * time.Second) // finishing a write, within the grace period
				workDone.Store(true)
				return nil
			})
		}()
		time.Sleep(time.Second)
		if !c.State().Leader {
			t.Fatal("not elected")
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
		o, _ := b.Open(t.Context(), "other", ttl)
		if tok, err := o.Acquire(t.Context(), "lock", 0); err == nil && !workDone.Load() {
			t.Errorf("another candidate took the lock (token %d) while the old term's work was still running (contract 5)", tok)
		}
		o.Close(t.Context())
		<-wd
		<-cd
	})
}

// Found in review: an acquire made on generation g of the shared session returns after
// the candidate replaced the session (g+2). The campaign elects with the
// deadline of the new session's renewal, though the lock was held by the
// dead session, and renews that term forever: two leaders.
func TestAcquireOnReplacedSessionIsNotElected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		w := &faulty{Backend: memory.New()}
		// B holds the lock first.
		bs, _ := w.Backend.Open(t.Context(), "b", time.Hour)
		btok, _ := bs.Acquire(t.Context(), "lock", 0)
		cand, _ := campaign.NewSession(w, campaign.WithID("a"), campaign.WithTTL(ttl))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(context.Background()) }()
		c, _ := campaign.New(w, "lock", campaign.WithSession(cand))
		go c.Run(context.Background())
		time.Sleep(500 * time.Millisecond)
		w.failKeepAlive.Store(true)                     // keep-alives stop reaching the backend
		w.acquireDelayAll.Store(int64(8 * time.Second)) // answers to acquires come late
		bs.Release(t.Context(), "lock", btok, 0)        // watch wakes a: acquire on gen 1
		time.Sleep(3500 * time.Millisecond)             // gen 1 expired at the backend
		w.failKeepAlive.Store(false)                    // next keep-alive: session lost -> gen 3
		w.acquireDelayAll.Store(0)
		e := next(t, c.Events())
		if e.Kind != events.Elected {
			t.Fatalf("got %s", e)
		}
		o, _ := w.Backend.Open(t.Context(), "c", time.Hour)
		if tok, err := o.Acquire(t.Context(), "lock", 0); err == nil {
			t.Errorf("campaign elected with token %d (deadline %v) on a dead session; an outsider took the lock with token %d", e.Token, e.Deadline, tok)
			time.Sleep(30 * time.Second)
			if c.State().Leader {
				t.Errorf("30s later the campaign still leads (deadline %v) while the outsider holds the lock", c.State().Deadline)
			}
		}
		o.Close(t.Context())
		c.Close()
		cand.Close()
		<-cd
	})
}

// Found in review: a release that fails at Close in shared mode is not retried: the lock
// stays held by the shared session for as long as the candidate lives, and a
// later campaign on the candidate is elected with the same token.
func TestSharedReleaseFailureIsRetriedByCandidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &faulty{Backend: memory.New()}
		cand, _ := campaign.NewSession(w, campaign.WithID("a"), campaign.WithTTL(ttl))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(context.Background()) }()
		c1, _ := campaign.New(w, "lock", campaign.WithSession(cand))
		go c1.Run(context.Background())
		e1 := next(t, c1.Events())
		w.failRelease.Store(1)
		c1.Close()
		time.Sleep(time.Minute)
		if h, _ := w.Holder(t.Context(), "lock"); h.ID != "" {
			t.Errorf("a minute after Close the lock is still held: %+v", h)
		}
		c2, _ := campaign.New(w, "lock", campaign.WithSession(cand))
		go c2.Run(context.Background())
		e2 := next(t, c2.Events())
		if e2.Kind == events.Elected && e2.Token == e1.Token {
			t.Errorf("new term re-uses token %d of an ended term", e2.Token)
		}
		c2.Close()
		cand.Close()
		<-cd
	})
}

// Found in review: in shared mode a failed release is retried at releaseAt, but
// startDue's default branch leaves the wake timer at keepAt (= never): the
// retry waits for the candidate's next tick (TTL/3), not a retry interval.
func TestSharedReleaseRetryWakesOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &faulty{Backend: memory.New()}
		cand, _ := campaign.NewSession(w, campaign.WithID("a"), campaign.WithTTL(60*time.Second))
		cd := make(chan error, 1)
		go func() { cd <- cand.Run(context.Background()) }()
		c, _ := campaign.New(w, "lock", campaign.WithSession(cand), campaign.WithRetry(time.Second))
		go c.Run(context.Background())
		next(t, c.Events())
		w.failRelease.Store(1)
		start := time.Now()
		if err := c.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Resign took %v after one failed release with a 1s retry", took)
		}
		c.Close()
		cand.Close()
		<-cd
	})
}
