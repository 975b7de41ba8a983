package campaign_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/group"
)

// runSession starts a session on b and returns it; the test's end closes
// it.
func runSession(t *testing.T, b backends.Backend, id string) *campaign.Session {
	t.Helper()
	s, err := campaign.NewSession(b, campaign.WithID(id), campaign.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	runCandidate(t, s)
	return s
}

// On a session, a run is an acquire and a release: no session is opened
// or closed for it, fn gets the token, and the lock is free after.
func TestRunIfLeaderOnSessionIsAcquireAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(0)
		mem := b.Backend
		s := runSession(t, b, "a")
		synctest.Wait() // the session is open
		opens := b.opens.Load()
		var got events.Token
		res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, tok events.Token) (int, error) {
			got = tok
			if h, err := mem.Holder(ctx, "job"); err != nil || h.ID != "a" || h.Token != tok {
				t.Errorf("while fn runs the holder is %+v (%v), want a under token %d", h, err, tok)
			}
			return 7, nil
		}, campaign.WithSession(s))
		if err != nil || res.Outcome != campaign.Succeeded || res.Value != 7 || res.Token != got || got == 0 {
			t.Fatalf("RunIfLeader = %+v, %v; want Elected, 7, under fn's token %d", res, err, got)
		}
		if n, a, r, c := b.opens.Load()-opens, b.acquires.Load(), b.releases.Load(), b.closes.Load(); n != 0 || a != 1 || r != 1 || c != 0 {
			t.Errorf("the run made %d opens, %d acquires, %d releases, %d closes; want 0, 1, 1, 0", n, a, r, c)
		}
		if h := holderOf(t, mem, "job"); h.ID != "" {
			t.Errorf("after the run the lock is held by %+v, want free", h)
		}
	})
}

// On a session, a run skips a lock another session holds, and one that a
// campaign or another run on the same session already claims: the session
// would be told it holds it, under the same token, twice.
func TestRunIfLeaderOnSessionSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		holding(t, b, "other", "held")
		c := run(t, newCampaign(t, b, "mine", campaign.WithSession(s)))
		next(t, c.c.Events())

		ran := atomic.Int64{}
		fn := func(ctx context.Context, _ events.Token) (struct{}, error) {
			ran.Add(1)
			return struct{}{}, nil
		}
		for _, name := range []string{"held", "mine"} {
			res, err := campaign.RunIfLeader(t.Context(), b, name, fn, campaign.WithSession(s))
			if err != nil || res.Outcome != campaign.Skipped || res.Err != nil {
				t.Errorf("%s: RunIfLeader = %+v, %v; want Skipped for contention", name, res, err)
			}
		}
		if ran.Load() != 0 {
			t.Fatalf("fn ran %d times, want 0", ran.Load())
		}

		// Two runs at once for one name on one session: one runs.
		release := make(chan struct{})
		var wg sync.WaitGroup
		outcomes := make([]campaign.Outcome, 2)
		for i := range outcomes {
			wg.Go(func() {
				res, err := campaign.RunIfLeader(t.Context(), b, "once", func(ctx context.Context, _ events.Token) (struct{}, error) {
					ran.Add(1)
					<-release
					return struct{}{}, nil
				}, campaign.WithSession(s))
				if err != nil {
					t.Errorf("RunIfLeader: %v", err)
				}
				outcomes[i] = res.Outcome
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if ran.Load() != 1 || outcomes[0] == outcomes[1] {
			t.Errorf("two runs at once on one session: fn ran %d times, outcomes %v; want once, one Elected and one Skipped", ran.Load(), outcomes)
		}
	})
}

// fn's context on a session ends when the session's deadline passes
// without a renewal (the backend unreachable), not only at the lease's.
func TestRunIfLeaderOnSessionEndsWithTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		synctest.Wait()
		res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, _ events.Token) (time.Duration, error) {
			start := time.Now()
			b.Partition("a")
			<-ctx.Done()
			b.Heal("a")
			return time.Since(start), ctx.Err()
		}, campaign.WithSession(s), campaign.WithTTL(time.Hour))
		if err != nil || res.Outcome != campaign.ActionFailed || !errors.Is(res.Err, context.Canceled) {
			t.Fatalf("RunIfLeader = %+v, %v; want ActionFailed with context.Canceled", res, err)
		}
		if res.Value > ttl {
			t.Errorf("fn's context ended %v after the partition, want within the session's TTL %v", res.Value, ttl)
		}
	})
}

// A group's one-shot run on a session takes one slot.
func TestGroupRunIfLeaderOnSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		res, err := group.RunIfLeader(t.Context(), b, "g", 2, func(ctx context.Context, tok events.Token) (events.Token, error) {
			return tok, nil
		}, campaign.WithSession(s))
		if err != nil || res.Outcome != campaign.Succeeded || res.Value == 0 {
			t.Fatalf("group.RunIfLeader = %+v, %v; want Elected with a token", res, err)
		}
	})
}

// A session on another backend is refused.
func TestRunIfLeaderOnSessionOfAnotherBackend(t *testing.T) {
	s := newSession(t, memory.New(), campaign.WithID("a"))
	_, err := campaign.RunIfLeader(t.Context(), memory.New(), "job", func(context.Context, events.Token) (int, error) { return 0, nil }, campaign.WithSession(s))
	if !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("RunIfLeader with a session on another backend: %v, want ErrInvalid", err)
	}
}

// Without a session, a run opens one, acquires, and closes it, which
// frees the lock: three round trips, no release. With a minimum hold left
// it releases with the hold first, so the lock outlives the session.
func TestRunIfLeaderWithoutSessionClosesInsteadOfReleasing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newCalls(0)
		mem := b.Backend
		fn := func(context.Context, events.Token) (int, error) { return 1, nil }
		if res, err := campaign.RunIfLeader(t.Context(), b, "job", fn); err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("RunIfLeader = %+v, %v", res, err)
		}
		if o, a, r, c := b.opens.Load(), b.acquires.Load(), b.releases.Load(), b.closes.Load(); o != 1 || a != 1 || r != 0 || c != 1 {
			t.Errorf("the run made %d opens, %d acquires, %d releases, %d closes; want 1, 1, 0, 1", o, a, r, c)
		}
		if h := holderOf(t, mem, "job"); h.ID != "" {
			t.Errorf("after the run the lock is held by %+v, want free", h)
		}
		if _, err := campaign.RunIfLeader(t.Context(), b, "held", fn, campaign.WithMinHold(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if b.releases.Load() != 1 {
			t.Errorf("a run with a minimum hold made %d releases, want 1", b.releases.Load())
		}
		if h := holderOf(t, mem, "held"); h.ID == "" {
			t.Error("the minimum hold did not outlive the run's session")
		}
	})
}

// fn's context on a healthy session outlives the session's TTL: each
// renewal moves the session's deadline on.
func TestRunIfLeaderOnSessionOutlivesTheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, _ events.Token) (error, error) {
			time.Sleep(3 * ttl)
			return ctx.Err(), nil
		}, campaign.WithSession(s), campaign.WithTTL(time.Hour))
		if err != nil || res.Outcome != campaign.Succeeded || res.Value != nil {
			t.Fatalf("RunIfLeader = %+v, %v; want Succeeded with fn's context still live after 3 TTLs", res, err)
		}
	})
}

// A panic in fn goes on up to the caller, but not before the run has let
// the lock go: on a session the name would otherwise stay claimed, and
// renewed, for as long as the session lives; without one, held until its
// TTL. The ops hooks see the work end too.
func TestRunIfLeaderPanicReleasesTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		synctest.Wait()
		for how, opts := range map[string][]campaign.Option{"on a session": {campaign.WithSession(s)}, "without one": {campaign.WithID("a")}} {
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Errorf("%s: recovered %v, want fn's panic to reach the caller", how, r)
					}
				}()
				campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, _ events.Token) (int, error) {
					panic("boom")
				}, opts...)
			}()
			res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, tok events.Token) (int, error) {
				return 1, nil
			}, campaign.WithID("b"))
			if err != nil || res.Outcome != campaign.Succeeded {
				t.Errorf("%s: after a run that panicked, another candidate's run = %+v, %v; want Succeeded: the lock is still held", how, res, err)
			}
		}
	})
}

// On a session, a run that waited for the lock gets a whole TTL for fn,
// counted from when it got the lock, not from when it began to wait.
func TestRunOnSessionAfterAWaitGetsItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s := runSession(t, b, "a")
		holder, tok := holding(t, b, "holder", "job")
		const waited, runTTL = 20 * time.Second, 10 * time.Second
		time.AfterFunc(waited, func() {
			if err := holder.Release(context.Background(), "job", tok, 0); err != nil {
				t.Error(err)
			}
		})
		start := time.Now()
		res, err := campaign.RunIfLeader(t.Context(), b, "job", func(ctx context.Context, _ events.Token) (time.Duration, error) {
			dl, ok := ctx.Deadline()
			if !ok {
				return 0, errors.New("fn's context has no deadline")
			}
			return time.Until(dl), ctx.Err()
		}, campaign.WithSession(s), campaign.WithWait(time.Minute), campaign.WithTTL(runTTL))
		if err != nil || res.Outcome != campaign.Succeeded {
			t.Fatalf("RunIfLeader = %+v, %v after %v; want it to run once the holder let go", res, err, time.Since(start))
		}
		if left := res.Value; left < runTTL/2 {
			t.Errorf("fn began with %v left of its TTL %v after a wait of %v; want the TTL less the margin", left, runTTL, waited)
		}
		if err := holder.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
