package campaign_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
)

func TestWhileLeaderReleasesOnlyAfterWorkReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a, err := campaign.New(b, "lock", campaign.WithID("a"), campaign.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		var stoppedAt time.Time
		started := make(chan events.Event, 1)
		done := make(chan error, 1)
		go func() {
			done <- campaign.WhileLeader(t.Context(), a, func(ctx context.Context, term events.Event) error {
				started <- term
				<-ctx.Done()
				time.Sleep(2 * time.Second) // cleanup after the term ended
				stoppedAt = time.Now()
				return nil
			})
		}()
		term := <-started
		other := start(t, b, "b")
		synctest.Wait()
		closed := make(chan struct{})
		go func() { closeOK(t, a); close(closed) }()
		won := next(t, other.c.Events())
		if won.Time.Before(stoppedAt) || stoppedAt.IsZero() {
			t.Fatalf("b elected at %v, before a's work stopped at %v", won.Time, stoppedAt)
		}
		if won.Token <= term.Token {
			t.Fatalf("token %d not above %d", won.Token, term.Token)
		}
		<-closed
		if err := <-done; !errors.Is(err, campaign.ErrClosed) {
			t.Fatalf("WhileLeader = %v, want ErrClosed", err)
		}
		other.stop(t)
	})
}

func TestWhileLeaderGraceBoundsStuckWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		grace := 3 * time.Second
		a, err := campaign.New(b, "lock", campaign.WithID("a"), campaign.WithGrace(grace))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- campaign.WhileLeader(t.Context(), a, func(ctx context.Context, term events.Event) error {
				<-release // ignores its context
				return nil
			})
		}()
		synctest.Wait()
		stop := time.Now()
		go closeOK(t, a)
		synctest.Wait()
		time.Sleep(grace)
		synctest.Wait()
		if h := holderOf(t, b, "lock"); h.ID != "" {
			t.Fatalf("lock still held %v after the grace period: %+v", time.Since(stop), h)
		}
		close(release)
		<-done
	})
}

func TestWhileLeaderResignsWhenWorkFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		var calls atomic.Int32
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(t.Context())
		for _, id := range []string{"a", "b"} {
			c, err := campaign.New(b, "lock", campaign.WithID(id))
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				err := campaign.WhileLeader(ctx, c, func(ctx context.Context, term events.Event) error {
					calls.Add(1)
					return errors.New("boom")
				})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("WhileLeader = %v, want context.Canceled", err)
				}
			})
		}
		time.Sleep(10 * time.Second)
		if n := calls.Load(); n < 4 {
			t.Fatalf("work ran %d times in 10s; failing work should hand the lead over", n)
		}
		cancel()
		wg.Wait()
	})
}

func TestTermBindsNothingWithoutATerm(t *testing.T) {
	c, err := campaign.New(memory.New(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := c.Term(0); ok {
		t.Fatal("Term returned a term before any election")
	}
	closeOK(t, c)
}

// The Revoked of a graceful stop reaches the Events reader at once, while
// the stop still waits for the term's work, not after the release.
func TestRevokedIsDeliveredBeforeWorkReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		c, err := campaign.New(b, "lock", campaign.WithID("a"))
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- campaign.WhileLeader(t.Context(), c, func(ctx context.Context, term events.Event) error {
				<-ctx.Done()
				<-release // cleanup that takes a while
				return nil
			})
		}()
		if e := <-c.Events(); e.Kind != events.Elected {
			t.Fatalf("got %s", e)
		}
		go closeOK(t, c)
		synctest.Wait()
		select {
		case e := <-c.Events():
			if e.Kind != events.Revoked {
				t.Fatalf("got %s, want revoked", e)
			}
		default:
			t.Fatal("no Revoked on the channel while the stop waits for the work")
		}
		close(release)
		<-done
	})
}

// A panic in the work goes on up to WhileLeader's caller at once, and the
// campaign stops and lets the lock go: the next candidate is elected
// without waiting for the lease to run out.
func TestWhileLeaderPanicStopsTheCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		a, err := campaign.New(b, "lock", campaign.WithID("a"), campaign.WithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer closeOK(t, a)
		recovered := make(chan any, 1)
		go func() {
			defer func() { recovered <- recover() }()
			campaign.WhileLeader(t.Context(), a, func(ctx context.Context, term events.Event) error {
				panic("boom")
			})
		}()
		var panicked time.Time
		select {
		case r := <-recovered:
			if r != "boom" {
				t.Fatalf("recovered %v, want the work's panic", r)
			}
			panicked = time.Now()
		case <-time.After(time.Hour):
			t.Fatal("WhileLeader had not returned an hour after its work panicked")
		}
		other := start(t, b, "b")
		won := next(t, other.c.Events())
		if d := won.Time.Sub(panicked); d >= ttl {
			t.Errorf("b elected %v after a's work panicked; want the lock let go at once, not after its lease (%v)", d, ttl)
		}
		other.stop(t)
	})
}
