package hub

import (
	"context"
	"sync"
	"time"
)

// Run is one life of a Hub's feed, from its first watch (or keeper) to
// its last, or until the feed breaks.
type Run struct {
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	ready  chan struct{} // closed once err is set
	err    error
	wake   chan struct{} // buffer one: look at the schedule again
	done   chan struct{} // closed when the run's function returned

	mu        sync.Mutex
	interrupt context.CancelFunc // ends the current Until; nil if none
	seen      uint64             // the feed has delivered every change up to it (Advance)
	advanced  chan struct{}      // closed when seen moves on; nil until Reached waits
}

// Context returns the run's context, which ends when the run does.
func (r *Run) Context() context.Context { return r.ctx }

// Ready settles whether the feed is confirmed: nil, or why it failed.
// Watches wait for it. Only the first call counts.
func (r *Run) Ready(err error) {
	r.once.Do(func() {
		r.err = err
		close(r.ready)
	})
}

// Wait waits until the feed is confirmed (nil) or failed (why), or ctx
// ends (ctx.Err()): for a keeper (Keep) that needs the feed to cover
// what follows.
func (r *Run) Wait(ctx context.Context) error {
	select {
	case <-r.ready:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done returns a channel closed once the run's function (Config.Open's)
// has returned: nothing of the run's feed runs after.
func (r *Run) Done() <-chan struct{} { return r.done }

// OK reports whether the feed is confirmed, without waiting.
func (r *Run) OK() bool {
	select {
	case <-r.ready:
		return r.err == nil
	default:
		return false
	}
}

// Poke tells the feed to look at its schedule again: it ends the current
// Until, or else leaves a signal on Wake. It never blocks.
func (r *Run) Poke() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interrupt != nil {
		r.interrupt()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default: // pending already
	}
}

// Wake returns the channel Poke signals on (buffer one), for a feed that
// waits in a select.
func (r *Run) Wake() <-chan struct{} { return r.wake }

// Until returns a context that ends at deadline, when the run ends, or at
// the next Poke (also one made since the last Until), for a feed that
// waits in a call that takes a context. Call stop when done.
func (r *Run) Until(deadline time.Time) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithDeadline(r.ctx, deadline)
	r.mu.Lock()
	r.interrupt = cancel
	select {
	case <-r.wake:
		cancel()
	default:
	}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		r.interrupt = nil
		r.mu.Unlock()
		cancel()
	}
}

// Advance records that the feed has delivered every change up to v, for
// a feed whose versions are one sequence in the order it delivers them
// (a stream's sequence, a resourceVersion); it wakes Reached.
func (r *Run) Advance(v uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v <= r.seen {
		return
	}
	r.seen = v
	if r.advanced != nil {
		close(r.advanced)
		r.advanced = nil
	}
}

// Advanced returns the version up to which the feed has delivered every
// change (Advance); 0 if it reported none.
func (r *Run) Advanced() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

// Reached reports whether the feed has delivered every change up to v
// while the run lasts, waiting for it at most wait, and while ctx lasts.
func (r *Run) Reached(ctx context.Context, v uint64, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if r.ctx.Err() != nil {
			return false
		}
		r.mu.Lock()
		if r.seen >= v {
			r.mu.Unlock()
			return true
		}
		if r.advanced == nil {
			r.advanced = make(chan struct{})
		}
		advanced := r.advanced
		r.mu.Unlock()
		select {
		case <-advanced:
		case <-r.ctx.Done():
			return false
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}
