package campaign_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

// A release that fails leaves the lock held by the campaign's live
// session; the term still ends (Revoked under its token, its context
// done), the other candidate gets the lock, and the campaign never leads
// again under the ended term's token.
func TestFailedReleaseNeverReusesToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New()}
		f.failRelease.Store(1)
		a := start(t, f, "a")
		won := next(t, a.c.Events())
		termCtx, _, done, ok := a.c.Term(won.Token)
		if !ok {
			t.Fatalf("no term in force for %s", won)
		}
		done()
		other := start(t, f, "b")
		if err := a.c.Resign(t.Context()); err != nil { // the first release fails
			t.Errorf("Resign: %v", err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if e := next(t, a.c.Events()); e.Kind != events.Revoked || e.Token != won.Token || termCtx.Err() == nil {
			t.Errorf("after Resign got %s (term ctx err %v), want revoked(%d)", e, termCtx.Err(), won.Token)
		}
		if !other.c.State().Leader {
			t.Errorf("the other candidate never got the lock after the failed release: %+v; a: %+v", other.c.State(), a.c.State())
		}
		if s := a.c.State(); s.Leader && s.Token == won.Token {
			t.Errorf("a leads again with the same token %d after it was revoked", won.Token)
		}
		for _, n := range []*node{a, other} {
			n.stop(t)
		}
	})
}

// On a shared session, a release that fails at Close is retried: the lock
// is free within a minute though the session lives on, and a later
// campaign on the session is elected under a new token.
func TestSharedReleaseFailureIsRetriedByCandidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &faulty{Backend: memory.New()}
		cand := newSession(t, w, campaign.WithID("a"), campaign.WithTTL(ttl))
		runCandidate(t, cand)
		c1 := run(t, newCampaign(t, w, "lock", campaign.WithSession(cand)))
		e1 := next(t, c1.c.Events())
		w.failRelease.Store(1)
		c1.stop(t)
		time.Sleep(time.Minute)
		if h := holderOf(t, w, "lock"); h.ID != "" {
			t.Errorf("a minute after Close the lock is still held: %+v", h)
		}
		c2 := run(t, newCampaign(t, w, "lock", campaign.WithSession(cand)))
		e2 := next(t, c2.c.Events())
		if e2.Kind == events.Elected && e2.Token == e1.Token {
			t.Errorf("new term re-uses token %d of an ended term", e2.Token)
		}
		c2.stop(t)
	})
}

// On a shared session, a failed release is retried after the campaign's
// retry interval, not at the session's next renewal (a third of its TTL):
// Resign returns within a few retry intervals.
func TestSharedReleaseRetryWakesOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &faulty{Backend: memory.New()}
		cand := newSession(t, w, campaign.WithID("a"), campaign.WithTTL(60*time.Second))
		runCandidate(t, cand)
		c := run(t, newCampaign(t, w, "lock", campaign.WithSession(cand), campaign.WithRetry(time.Second)))
		next(t, c.c.Events())
		w.failRelease.Store(1)
		start := time.Now()
		if err := c.c.Resign(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Resign took %v after one failed release with a 1s retry", took)
		}
		c.stop(t)
	})
}
