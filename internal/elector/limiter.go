package elector

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// callsInFlight is how many backend calls a session has in flight at
// most, besides its keep-alive, so that a storm of campaigns queues here,
// in order, rather than in the client, where the keep-alive would wait
// behind it, or at the server, which answers overload with errors and
// timeouts. Fewer would starve a backend whose acquire is several round
// trips on one connection (ZooKeeper). The limiter lowers it while calls
// are slow (see limiter).
const callsInFlight = 64

// callsInFlightLeast is the least the limiter lowers it to.
const callsInFlightLeast = 4

// Lanes of a limiter: calls that free locks go before calls that take
// them, since they lower the load and let waiters in.
const (
	laneFree = iota // releases, leaving lines
	laneTake        // acquires, watches, ranks, registrations, audits
	lanes
)

// limiter bounds the backend calls in flight on one session. Waiters are
// served in order, lane by lane. A waiter is a goroutine blocked in wait,
// or a function given to start, which costs no goroutine until its turn
// comes: a storm of campaigns queues as closures. Safe for concurrent use.
//
// The bound adapts to how long calls queue beyond the server's usual
// answer. A server that applies writes one at a time answers each call
// after the calls ahead of it, and the keep-alive waits there too: a call
// that took more than slow beyond the quickest call of the last
// baseWindow or two halves the bound (once for the calls started before
// the cut, which all waited in the same queue), and while calls wait
// here, each call within slow/2 of it raises the bound by 1/bound, up to
// its most. slow is a quarter of the time a renewal may take before the
// session's leaders revoke. A far server is slow but not queueing: its
// round trip is in the quickest call.
type limiter struct {
	mu       sync.Mutex
	limit    int // calls allowed in flight now
	most     int // the most limit rises to
	inFlight int
	grown    int              // fast calls since limit last rose
	slow     time.Duration    // queueing longer than this halves limit; 0: never
	cut      time.Time        // when limit was last halved
	base     [2]time.Duration // the quickest call of this window and of the one before
	window   time.Time        // when this window began
	waiting  [lanes]list.List // of *turn
}

// baseWindow is how long the quickest call counts as the server's usual
// answer, at least: a server that became slower for good is then seen as
// queueing for two windows at most.
const baseWindow = 10 * time.Second

// turn is a waiter: ready is closed, or f started, to hand it a slot.
type turn struct {
	ready  chan struct{}
	f      func(error)
	stop   func() bool // ends the context watch of a start
	handed bool        // given a slot or its context's error
}

// newLimiter returns a limiter of n calls in flight; if slow is positive,
// fewer while calls take longer than slow.
func newLimiter(n int, slow time.Duration) *limiter {
	return &limiter{limit: n, most: n, slow: slow}
}

// take takes a free slot if nobody waits for one.
func (l *limiter) take() bool {
	if l.inFlight < l.limit && l.queued() == 0 {
		l.inFlight++
		return true
	}
	return false
}

// wait takes a slot, queueing in lane behind the calls already waiting.
// If ctx ends first it returns ctx's error and takes nothing.
func (l *limiter) wait(ctx context.Context, lane int) error {
	l.mu.Lock()
	if l.take() {
		l.mu.Unlock()
		return nil
	}
	t := &turn{ready: make(chan struct{})}
	el := l.waiting[lane].PushBack(t)
	l.mu.Unlock()
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	if t.handed { // handed a slot meanwhile: pass it on
		l.mu.Unlock()
		l.done(time.Time{})
		return ctx.Err()
	}
	t.handed = true
	l.waiting[lane].Remove(el)
	l.mu.Unlock()
	return ctx.Err()
}

// start runs f in a goroutine of its own once a slot is free, with a nil
// error (f must then call done, with the time it started), or with ctx's
// error if ctx ends first (f takes nothing). Until then f is only queued.
func (l *limiter) start(ctx context.Context, lane int, f func(error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.take() {
		go f(nil)
		return
	}
	t := &turn{f: f}
	el := l.waiting[lane].PushBack(t)
	t.stop = context.AfterFunc(ctx, func() {
		l.mu.Lock()
		if t.handed {
			l.mu.Unlock()
			return
		}
		t.handed = true
		l.waiting[lane].Remove(el)
		l.mu.Unlock()
		f(ctx.Err())
	})
}

// done gives back the slot of a call that started at start (zero for a
// slot not used), adapting the bound to the call's latency, and hands the
// free slots to the first waiters of the first lanes that have them.
func (l *limiter) done(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	if !start.IsZero() && l.slow > 0 {
		l.adapt(start, time.Since(start))
	}
	for l.inFlight < l.limit {
		t := l.next()
		if t == nil {
			return
		}
		l.inFlight++
		t.handed = true
		if t.ready != nil {
			close(t.ready)
			continue
		}
		t.stop()
		go t.f(nil)
	}
}

// adapt halves the bound after a call that queued too long and started
// since the last cut, and raises it by one for every bound's worth of
// quick calls while calls wait; l.mu held.
func (l *limiter) adapt(start time.Time, took time.Duration) {
	if now := time.Now(); now.Sub(l.window) >= baseWindow {
		l.base, l.window = [2]time.Duration{took, l.base[0]}, now
	}
	l.base[0] = min(l.base[0], took)
	base := l.base[0]
	if l.base[1] > 0 {
		base = min(base, l.base[1])
	}
	switch took -= base; {
	case took > l.slow:
		if !start.Before(l.cut) && l.limit > callsInFlightLeast {
			l.limit = max(l.limit/2, callsInFlightLeast)
			l.cut = time.Now()
			l.grown = 0
		}
	case took < l.slow/2 && l.limit < l.most && l.queued() > 0:
		if l.grown++; l.grown >= l.limit {
			l.limit++
			l.grown = 0
		}
	}
}

// next removes and returns the first waiter of the first lane that has
// one, or nil; l.mu held.
func (l *limiter) next() *turn {
	for i := range l.waiting {
		if f := l.waiting[i].Front(); f != nil {
			l.waiting[i].Remove(f)
			return f.Value.(*turn)
		}
	}
	return nil
}

func (l *limiter) queued() int {
	n := 0
	for i := range l.waiting {
		n += l.waiting[i].Len()
	}
	return n
}

// inTurn runs f on the session when its turn in lane comes, bounded by
// timeout from then on, and by ctx throughout.
func (s *Session) inTurn(ctx context.Context, lane int, timeout time.Duration, f func(ctx context.Context) error) error {
	if err := s.calls.wait(ctx, lane); err != nil {
		return fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
	}
	defer s.calls.done(time.Now())
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(cctx)
}

// release runs f on the session when its turn in lane comes, bounded by
// timeout throughout, the wait for the turn included, and not by ctx's
// end: for releases and other calls of an ending, which the caller's
// context may no longer allow.
func (s *Session) release(ctx context.Context, lane int, timeout time.Duration, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := s.calls.wait(cctx, lane); err != nil {
		return fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
	}
	defer s.calls.done(time.Now())
	return f(cctx)
}
