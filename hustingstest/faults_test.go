package hustingstest_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/hustingstest"
)

// replicas runs reconcile under campaign.WhileLeader on candidates a and
// b over the in-memory backend, a elected first, and calls fault once a
// has led for a little over a second. It returns the next term, how long after the
// fault it began, and the Recorder's verdict on the whole history.
func replicas(t *testing.T, fault func(b *memory.Backend, a *hustingstest.Crashable, rec *hustingstest.Recorder)) (events.Event, time.Duration, error) {
	b := memory.New()
	hosts := map[string]*hustingstest.Crashable{
		"a": hustingstest.NewCrashable(b),
		"b": hustingstest.NewCrashable(b),
	}
	rec := hustingstest.NewRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	terms := make(chan events.Event, 4)
	for _, id := range []string{"a", "b"} {
		c, err := campaign.New(hosts[id], "reconcile", campaign.WithID(id),
			campaign.WithTTL(2*time.Second), campaign.WithRetry(250*time.Millisecond), rec.Option())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_ = campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
				terms <- term
				return reconcile(ctx, term, func(tok events.Token) { rec.Wrote("reconcile", tok) })
			})
		})
		if id == "a" {
			<-terms
		}
	}
	// The fault lands between two of a's writes (every 100 ms from its
	// election): a write in the fault's own instant races the tamper, and
	// only a fence at the resource could refuse it.
	time.Sleep(time.Second + 50*time.Millisecond)
	at := time.Now()
	fault(b, hosts["a"], rec)
	next := <-terms
	took := time.Since(at)
	time.Sleep(time.Second)
	hosts["a"].Refuse() // tear a down at once, whatever the fault left
	cancel()
	wg.Wait()
	return next, took, rec.Check()
}

// TestReconcileStopsWhenItsSessionExpires: the store ends the leader's
// session (memory.Expire, as a server whose TTL ran out does, recorded
// with Tampered); the leader is told at once, its loop stops writing —
// no write of its term after the next term's first —, and a new term (of
// either replica: a may open a new session first) begins under a larger
// token without waiting out the 2 s TTL.
func TestReconcileStopsWhenItsSessionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next, took, err := replicas(t, func(b *memory.Backend, _ *hustingstest.Crashable, rec *hustingstest.Recorder) {
			rec.Tampered("reconcile")
			b.Expire("a")
		})
		if next.Token <= 1 {
			t.Fatalf("the term after a's session expired has token %d, want above the first term's 1", next.Token)
		}
		if took >= 2*time.Second {
			t.Fatalf("the next term began %v after a's session expired, want before a TTL (2s) passed", took)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestReconcileStopsWhenItsCallsAreSlow: the leader's calls take longer
// than its TTL (Slow), so no renewal lands in time: its term ends by its
// own deadline, its loop stops writing, and the other replica takes over
// once the session expired on the store.
func TestReconcileStopsWhenItsCallsAreSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next, _, err := replicas(t, func(_ *memory.Backend, a *hustingstest.Crashable, _ *hustingstest.Recorder) {
			a.Slow(5 * time.Second)
		})
		if next.Holder != "b" {
			t.Fatalf("after a's calls slowed %s was elected, want b", next.Holder)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestSlow: a slow call takes the delay, then goes through; one whose
// context ends first fails and never reaches the backend; Slow(0) undoes.
func TestSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		c := hustingstest.NewCrashable(b)
		s, err := c.Open(t.Context(), "a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c.Slow(300 * time.Millisecond)
		start := time.Now()
		if _, err := s.Acquire(t.Context(), "lock", 0); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Fatalf("a slow Acquire took %v, want 300ms", took)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := s.Release(ctx, "lock", 1, 0); err == nil {
			t.Fatal("a Release whose context ended while slowed = nil, want an error")
		}
		if h, err := b.Holder(t.Context(), "lock"); err != nil || h.ID != "a" {
			t.Fatalf("Holder after the timed-out Release = %+v, %v; want still a's", h, err)
		}
		c.Slow(0)
		start = time.Now()
		if err := s.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("Close after Slow(0) took %v, want none", took)
		}
	})
}
