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
// trips on one connection (ZooKeeper).
const callsInFlight = 64

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
type limiter struct {
	mu      sync.Mutex
	free    int
	waiting [lanes]list.List // of *turn
}

// turn is a waiter: ready is closed, or f started, to hand it a slot.
type turn struct {
	ready  chan struct{}
	f      func(error)
	stop   func() bool // ends the context watch of a start
	handed bool        // given a slot or its context's error
}

func newLimiter(n int) *limiter { return &limiter{free: n} }

// take takes a free slot if nobody waits for one.
func (l *limiter) take() bool {
	if l.free > 0 && l.queued() == 0 {
		l.free--
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
		l.done()
		return ctx.Err()
	}
	t.handed = true
	l.waiting[lane].Remove(el)
	l.mu.Unlock()
	return ctx.Err()
}

// start runs f in a goroutine of its own once a slot is free, with a nil
// error (f must then call done), or with ctx's error if ctx ends first
// (f takes nothing). Until then f is only queued.
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

// done gives a slot back: to the first waiter of the first lane that has
// one, else to the pool.
func (l *limiter) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.waiting {
		if f := l.waiting[i].Front(); f != nil {
			l.waiting[i].Remove(f)
			t := f.Value.(*turn)
			t.handed = true
			if t.ready != nil {
				close(t.ready)
				return
			}
			t.stop()
			go t.f(nil)
			return
		}
	}
	l.free++
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
	defer s.calls.done()
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
	defer s.calls.done()
	return f(cctx)
}
