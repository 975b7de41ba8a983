package campaign_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/campaign"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
)

// faulty wraps a real memory backend to delay calls and fail releases, for
// regression tests of races found in review.
type faulty struct {
	*memory.Backend
	acquireDelay map[string]time.Duration // slept after the real Acquire returned
	openDelay    map[string]time.Duration // slept after the real Open returned
	failRelease  atomic.Int32             // Release calls that fail with ErrUnavailable
	// acquireDelayAll is slept after every real Acquire, in nanoseconds;
	// failKeepAlive fails every KeepAlive with ErrUnavailable.
	acquireDelayAll atomic.Int64
	failKeepAlive   atomic.Bool
	closedWatch     bool // Watch returns an already-closed channel
	holders         atomic.Int64
}

type faultySession struct {
	backends.Session
	f *faulty
}

func (f *faulty) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	s, err := f.Backend.Open(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	time.Sleep(f.openDelay[id])
	return &faultySession{s, f}, nil
}

func (f *faulty) Holder(ctx context.Context, name string) (backends.Holder, error) {
	f.holders.Add(1)
	return f.Backend.Holder(ctx, name)
}

func (f *faulty) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if f.closedWatch {
		ch := make(chan struct{})
		close(ch)
		return ch, nil
	}
	return f.Backend.Watch(ctx, name)
}

func (s *faultySession) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	tok, err := s.Session.Acquire(ctx, name, lease)
	time.Sleep(s.f.acquireDelay[s.ID()] + time.Duration(s.f.acquireDelayAll.Load()))
	return tok, err
}

func (s *faultySession) KeepAlive(ctx context.Context) error {
	if s.f.failKeepAlive.Load() {
		return fmt.Errorf("%w: injected", backends.ErrUnavailable)
	}
	return s.Session.KeepAlive(ctx)
}

func (s *faultySession) Release(ctx context.Context, name string, tok events.Token, hold time.Duration) error {
	if s.f.failRelease.Add(-1) >= 0 {
		return fmt.Errorf("%w: injected", backends.ErrUnavailable)
	}
	return s.Session.Release(ctx, name, tok, hold)
}

// a watch signal that arrives while an acquire is in flight is
// overwritten by the ErrHeld result: graceful handover waits a full retry.
func TestReleaseDuringAcquireStillWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New(), acquireDelay: map[string]time.Duration{"b": 50 * time.Millisecond}}
		a := start(t, f, "a")
		next(t, a.c.Events())
		b := start(t, f, "b")
		time.Sleep(10 * time.Millisecond) // b's first acquire is in flight (50ms)
		resigned := time.Now()
		a.stop(t) // graceful: releases at once, a no longer competes
		won := next(t, b.c.Events())
		if took := won.Time.Sub(resigned); took >= elector.DefaultRetry {
			t.Errorf("graceful handover took %v (>= one retry interval): the release signal was lost", took)
		}
		b.stop(t)
	})
}

// Observe re-establishes a closed watch without any pause: hot loop.
func TestObservePausesAfterBrokenWatch(t *testing.T) {
	f := &faulty{Backend: memory.New(), closedWatch: true}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := campaign.Observe(ctx, f, "lock", campaign.WithRetry(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	time.Sleep(100 * time.Millisecond)
	n := f.holders.Load()
	cancel()
	for range ch {
	}
	if n > 10 {
		t.Errorf("Observe read the holder %d times in 100ms with a 50ms retry: hot loop", n)
	}
}

// RunIfLeader swallows ctx's error when ctx ends during WithWait.
func TestRunIfLeaderReturnsContextErrorDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := b.Open(t.Context(), "holder", time.Hour)
		if _, err := s.Acquire(t.Context(), "x", 0); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		res, err := campaign.RunIfLeader(ctx, b, "x", answer, campaign.WithWait(time.Minute))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx ended during the wait: %+v, err=%v; want context.DeadlineExceeded", res, err)
		}
		s.Close(t.Context())
	})
}

// Run after a Run that ended with its ctx returns ErrInvalid.
func TestRunAfterEndedRunIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := campaign.New(memory.New(), "x")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		c.Run(ctx)
		if err := c.Run(t.Context()); !errors.Is(err, campaign.ErrClosed) {
			t.Errorf("second Run after the first ended = %v, want ErrClosed", err)
		}
		c.Close()
	})
}

// a failed Release leaves the lock held by the live session; the
// campaign re-elects itself with the SAME token and a subscriber that read
// Elected(t) never sees Revoked(t); other candidates are shut out.
func TestFailedReleaseNeverReusesToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New()}
		f.failRelease.Store(1)
		a := start(t, f, "a")
		won := next(t, a.c.Events())
		termCtx, _, done, _ := a.c.Term(won.Token)
		done()
		other := start(t, f, "b")
		a.c.Resign(t.Context()) // the release fails
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
		a.stop(t)
		other.stop(t)
	})
}

// A margin that puts the deadline (TTL less the margin) at or before the
// next renewal (a third of the TTL) could never renew a term in time: New
// rejects it.
func TestMarginMustLeaveRoomToRenew(t *testing.T) {
	if _, err := campaign.New(memory.New(), "x", campaign.WithSafetyMargin(7*time.Second)); !errors.Is(err, campaign.ErrInvalid) {
		t.Fatalf("margin 7s with TTL 10s (renewed every 3.3s): err = %v, want ErrInvalid", err)
	}
}

// RunIfLeader runs fn although the lease deadline already passed.
func TestRunIfLeaderNeverRunsWithSpentLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &faulty{Backend: memory.New(), openDelay: map[string]time.Duration{"a": 9500 * time.Millisecond}}
		var atStart error
		res, err := campaign.RunIfLeader(t.Context(), f, "x", func(ctx context.Context, tok events.Token) (int, error) {
			atStart = ctx.Err()
			return 0, nil
		}, campaign.WithID("a"), campaign.WithLease(10*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded || atStart != nil {
			t.Errorf("after a 9.5s Open on a 10s lease: %+v, %v, fn's context at start: %v; want a renewed lease", res, err, atStart)
		}
	})
}

// a waiting RunIfLeader whose lease is shorter than the retry pause
// lets its own session expire and fails with a backend error.
func TestRunIfLeaderWaitKeepsSessionAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		s, _ := b.Open(t.Context(), "holder", time.Hour)
		s.Acquire(t.Context(), "x", 0)
		time.AfterFunc(3*time.Second, func() { s.Close(context.Background()) })
		res, err := campaign.RunIfLeader(t.Context(), b, "x", answer, campaign.WithLease(time.Second), campaign.WithWait(10*time.Second))
		if err != nil || res.Outcome != campaign.Succeeded {
			t.Errorf("lock freed after 3s within a 10s wait: %+v, %v; want elected", res, err)
		}
	})
}
