package elector

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// The waker arms the timer for the earliest time not yet due, and stops
// it when nothing is waiting.
func TestWakerArmsForTheEarliest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		w := waker{now: now, next: never}
		if !w.due(now) || !w.due(now.Add(-time.Second)) {
			t.Fatal("a time that has come is not due")
		}
		if w.due(now.Add(3*time.Second)) || w.due(now.Add(time.Second)) || w.due(now.Add(2*time.Second)) {
			t.Fatal("a future time is due")
		}
		timer := stoppedTimer()
		w.arm(timer)
		<-timer.C
		if waited := time.Since(now); waited != time.Second {
			t.Errorf("the timer fired after %v, want the earliest noted, 1s", waited)
		}
		idle := waker{now: time.Now(), next: never}
		idle.arm(timer)
		select {
		case <-timer.C:
			t.Error("a waker with nothing noted armed the timer")
		case <-time.After(time.Hour):
		}
	})
}

// Backoff: the retry pause with jitter after one failure; then doubling,
// between half and all of the doubled interval, up to 8 intervals.
func TestBackoffGrowsAndIsBounded(t *testing.T) {
	c := NewConfig([]Option{OptionFunc(func(c *Config) { c.Retry = time.Second })})
	for failures, want := range map[int][2]time.Duration{
		0:  {time.Second, time.Second + c.Jitter},
		1:  {time.Second, time.Second + c.Jitter},
		2:  {time.Second, 2 * time.Second},
		3:  {2 * time.Second, 4 * time.Second},
		4:  {4 * time.Second, 8 * time.Second},
		40: {4 * time.Second, 8 * time.Second},
	} {
		for range 200 {
			if d := c.Backoff(failures); d < want[0] || d > want[1] {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", failures, d, want[0], want[1])
			}
		}
	}
}

// newTestActor returns an actor of a campaign for "lock" on a memory
// backend, with a session of its own open, no term, and every call due.
func newTestActor(t *testing.T, ctx context.Context) *actor {
	t.Helper()
	b := memory.New()
	e, err := New(b, "lock", OptionFunc(func(c *Config) { c.ID = "a" }))
	if err != nil {
		t.Fatal(err)
	}
	a := newActor(e, ctx)
	s, err := b.Open(ctx, "a", e.cfg.TTL)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a.sess, a.renewed, a.keepAt, a.tryAt = s, now, now.Add(e.cfg.KeepAlive), now
	return a
}

// finishOp waits for the op in flight and hands its result over.
func finishOp(a *actor) { a.finish(<-a.op.done) }

// startDue starts one call at a time, in order: a release waiting for
// the op slot before a renewal that is due, and a renewal before a try.
func TestStartDueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		tm := newTerm(ctx, events.Event{Kind: events.Elected, Name: "lock", Token: 1})
		a.e.end(tm) // no work bound to it: the release need not wait
		a.releases = []release{{term: tm, sess: a.sess, reply: make(chan error, 1)}}
		a.keepAt = time.Now()

		a.startDue()
		if a.op == nil || a.op.kind != opRelease {
			t.Fatalf("with a release pending and a renewal and a try due: op %+v, want the release", a.op)
		}
		a.startDue() // the op slot is taken: nothing else starts
		if a.op.kind != opRelease {
			t.Fatalf("a second call started beside the release: %v", a.op.kind)
		}
		finishOp(a)
		a.startDue()
		if a.op == nil || a.op.kind != opKeepAlive {
			t.Fatalf("after the release: op %+v, want the renewal", a.op)
		}
		finishOp(a)
		a.startDue()
		if a.op == nil || a.op.kind != opAcquire {
			t.Fatalf("after the renewal: op %+v, want the acquire", a.op)
		}
		finishOp(a)
		if a.term == nil {
			t.Fatal("the acquire of a free lock started no term")
		}
		a.shutdown(events.ErrCanceled)
		a.wg.Wait()
	})
}

// After a Resign the campaign tries again no sooner than its backoff:
// startDue starts nothing and arms the wake timer for that moment.
func TestStartDueWaitsOutTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		start := time.Now()
		a.backoffUntil = start.Add(700 * time.Millisecond)
		a.startDue()
		if a.op != nil {
			t.Fatalf("a %v started before the backoff ended", a.op.kind)
		}
		<-a.wake.C
		if woke := time.Since(start); woke != 700*time.Millisecond {
			t.Errorf("woken after %v, want at the end of the backoff (700ms)", woke)
		}
		a.startDue()
		if a.op == nil || a.op.kind != opAcquire {
			t.Fatalf("at the end of the backoff: op %+v, want the acquire", a.op)
		}
		finishOp(a)
		a.shutdown(events.ErrCanceled)
		a.wg.Wait()
	})
}
