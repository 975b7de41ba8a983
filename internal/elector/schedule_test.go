package elector

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/memory"
	"github.com/hustings/hustings/events"
)

// startDue starts nothing before its time and returns when the first
// concern not yet due becomes due; settle sets the alarm for that moment,
// and stops it when nothing is due.
func TestStartDueArmsForTheEarliest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		now := time.Now()
		a.e.mu.Lock()
		a.at.notBefore = now.Add(3 * time.Second) // a try in 3s
		a.audit.at = now.Add(time.Second)         // losing: an audit in 1s
		a.at.disown = now.Add(2 * time.Second)    // nothing in doubt: nothing to disown
		if next := a.startDue(now); !next.Equal(now.Add(time.Second)) || a.op != nil {
			t.Fatalf("startDue = %v, op %+v; want nothing started and the audit's time, 1s", next.Sub(now), a.op)
		}
		rang := make(chan time.Time, 1)
		a.alarm.f = func() { rang <- time.Now() }
		a.settle()
		a.e.mu.Unlock()
		if waited := (<-rang).Sub(now); waited != time.Second {
			t.Errorf("the alarm went off after %v, want the earliest due, 1s", waited)
		}
		a.e.mu.Lock()
		a.on.sess = nil // without a session nothing is due
		a.alarm.set(time.Minute)
		a.settle()
		a.e.mu.Unlock()
		select {
		case <-rang:
			t.Error("with nothing due the alarm was left set")
		case <-time.After(time.Hour):
		}
		stopTestActor(a)
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
	e.cfg.Session = s // not the campaign's private session: finish leaves it open
	bs, err := b.Open(ctx, "a", e.cfg.TTL)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.cur = shared{sess: bs, renewed: now, gen: 1}
	a := newActor(e, ctx, s)
	if err := s.join(a); err != nil {
		t.Fatal(err)
	}
	e.act = a
	a.on.sess, a.on.gen, a.on.renewed, a.at.try = bs, 1, now, now
	a.end.stopCtx = func() bool { return true }
	return a
}

// stopTestActor stops a and waits for its campaign to finish.
func stopTestActor(a *actor) {
	a.do(func() { a.stop(events.ErrResigned, nil) })
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
		a.e.mu.Lock()
		tm := &term{event: events.Event{Kind: events.Elected, Name: "lock", Token: 1}, on: a.on.Session}
		tm.end(time.Now())                                  // no work bound to it: the release need not wait
		a.releases = []release{{term: tm, sess: a.on.sess}} // an expired term's: no pause follows
		a.startDue(time.Now())
		if a.op == nil || a.op.kind != opRelease {
			t.Fatalf("with a release pending and a try due: op %+v, want the release", a.op)
		}
		a.startDue(time.Now()) // the op slot is taken: nothing else starts
		if a.op.kind != opRelease {
			t.Fatalf("a second call started beside the release: %v", a.op.kind)
		}
		a.e.mu.Unlock()
		synctest.Wait()
		a.e.mu.Lock()
		if a.term == nil {
			t.Error("after the release, the acquire of the free lock started no term")
		}
		a.e.mu.Unlock()
		stopTestActor(a)
	})
}

// After a Resign the campaign tries again no sooner than its backoff:
// settle starts nothing and sets the alarm for that moment, which starts
// the acquire.
func TestStartDueWaitsOutTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newTestActor(t, ctx)
		start := time.Now()
		a.e.mu.Lock()
		a.at.notBefore = start.Add(700 * time.Millisecond)
		a.settle()
		if a.op != nil {
			t.Fatalf("a %v started before the backoff ended", a.op.kind)
		}
		a.e.mu.Unlock()
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
	w.fired.Or(1 << 2)
	if got := w.asks(); got != 1<<2 {
		t.Fatalf("woken after a sweep, the try asks for %b, want only slot 2 (%b)", got, 1<<2)
	}
	if w.fired.Load() != 0 {
		t.Fatal("starting a try kept the signals that came before it")
	}
	if got := w.asks(); got != 0 {
		t.Fatalf("a try whose answer has not come is no sweep: the next asks for %b, want every slot", got)
	}
}

// A try that finds the lock held makes the campaign watch the lock before
// its next try, and a watch signal that comes while it asks makes that
// try due at once.
func TestHeldLockIsWatched(t *testing.T) {
	a := newTestActor(t, t.Context())
	a.e.mu.Lock()
	now := time.Now()
	a.at.try = never // an acquire in flight
	a.acquired(0, 0, nil, backends.ErrHeld)
	watch := a.needWatch(now)
	a.at.try = never
	a.watchFired(nil, true) // no watch yet: a nil channel is the one up
	woken := !now.Add(time.Minute).Before(a.at.try)
	a.e.mu.Unlock()
	if !watch {
		t.Error("a try that found the lock held does not make the campaign watch")
	}
	if !woken {
		t.Error("a watch signal left the next try to its pause")
	}
	stopTestActor(a)
}
