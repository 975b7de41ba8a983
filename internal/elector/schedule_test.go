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
		rang := make(chan time.Time, 1)
		al := alarm{f: func() { rang <- time.Now() }}
		w.arm(&al)
		if waited := (<-rang).Sub(now); waited != time.Second {
			t.Errorf("the alarm went off after %v, want the earliest noted, 1s", waited)
		}
		idle := waker{now: time.Now(), next: never}
		al.set(time.Minute)
		idle.arm(&al)
		select {
		case <-rang:
			t.Error("a waker with nothing noted left the alarm set")
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
// backend, on a session that is open and will not renew, with no term
// and every call due. It has not begun: the test drives it, holding its
// lock around what it calls directly.
func newTestActor(t *testing.T, ctx context.Context) *actor {
	t.Helper()
	b := memory.New()
	e, err := New(b, "lock", OptionFunc(func(c *Config) { c.ID = "a" }))
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(b, e.cfg)
	bs, err := b.Open(ctx, "a", e.cfg.TTL)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.cur = shared{sess: bs, renewed: now, gen: 1}
	a := newActor(e, ctx, s, false)
	if err := s.join(a); err != nil {
		t.Fatal(err)
	}
	e.started, e.act = true, a
	a.on.sess, a.on.gen, a.on.renewed, a.at.try = bs, 1, now, now
	a.end.stopCtx = func() bool { return true }
	return a
}

// stopTestActor stops a and waits for its campaign to finish.
func stopTestActor(a *actor) {
	a.do(func() { a.stop(events.ErrCanceled, nil) })
	<-a.e.finished()
}

// startDue starts one call at a time: a release waiting for the op slot
// before a try that is due; when the release's result is in, the try
// starts by itself.
func TestStartDueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		tm := newTerm(events.Event{Kind: events.Elected, Name: "lock", Token: 1}, nil, 0, 0)
		a.e.end(tm) // no work bound to it: the release need not wait
		a.mu.Lock()
		a.releases = []release{{term: tm, sess: a.on.sess}} // an expired term's: no pause follows
		a.startDue()
		if a.op == nil || a.op.kind != opRelease {
			t.Fatalf("with a release pending and a try due: op %+v, want the release", a.op)
		}
		a.startDue() // the op slot is taken: nothing else starts
		if a.op.kind != opRelease {
			t.Fatalf("a second call started beside the release: %v", a.op.kind)
		}
		a.mu.Unlock()
		synctest.Wait()
		a.mu.Lock()
		if a.term == nil {
			t.Error("after the release, the acquire of the free lock started no term")
		}
		a.mu.Unlock()
		stopTestActor(a)
	})
}

// After a Resign the campaign tries again no sooner than its backoff:
// startDue starts nothing and sets the wake alarm for that moment, which
// starts the acquire.
func TestStartDueWaitsOutTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		start := time.Now()
		a.mu.Lock()
		a.at.notBefore = start.Add(700 * time.Millisecond)
		a.startDue()
		if a.op != nil {
			t.Fatalf("a %v started before the backoff ended", a.op.kind)
		}
		a.mu.Unlock()
		time.Sleep(699 * time.Millisecond)
		synctest.Wait()
		if a.e.State().Leader {
			t.Fatal("elected before the backoff ended")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		st := a.e.State()
		if !st.Leader || st.LastEvent.Time.Sub(start) != 700*time.Millisecond {
			t.Errorf("state %+v; want elected at the end of the backoff (700ms)", st)
		}
		stopTestActor(a)
	})
}

// A try after one that found every slot held with the watch up asks only
// for the slots whose watch signalled since; any other try asks for every
// slot, and starting a try forgets the signals before it.
func TestWaitingAsksForTheSlotsThatSignalled(t *testing.T) {
	var w waiting
	w.fired.Store(1 << 2)
	if got := w.asks(); got != 0 {
		t.Fatalf("a first try asks for slots %b, want every slot (0)", got)
	}
	w.held() // no watch yet: nothing is marked for the slots not asked
	w.fired.Store(1 << 1)
	if got := w.asks(); got != 0 {
		t.Fatalf("after a try with no watch up, the next asks for %b, want every slot (0)", got)
	}
	w.watch.Set(make(chan struct{}), func() {})
	w.held()
	if !w.lost {
		t.Fatal("a try that found the lock held does not make the campaign watch")
	}
	w.fired.Or(1 << 2)
	w.woken = true
	if got := w.asks(); got != 1<<2 {
		t.Fatalf("woken after a sweep, the try asks for %b, want only slot 2 (%b)", got, 1<<2)
	}
	if w.woken || w.fired.Load() != 0 {
		t.Fatal("starting a try kept the signals that came before it")
	}
	if got := w.asks(); got != 0 {
		t.Fatalf("a try whose answer has not come is no sweep: the next asks for %b, want every slot", got)
	}
}
