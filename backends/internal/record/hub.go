package record

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/internal/validate"
)

// Watch signals when the holder of name may have changed: pushed by the
// driver's Notifier, or found by polling at Config.Poll; either way a
// lock that expires with nobody telling (a crashed holder, a lease, a
// hold) is re-read when it expires as last seen. Writes through this
// Store signal its watchers at once. It returns once the feed is
// confirmed (a Notifier) and the lock was read, so no change after Watch
// returned is missed. Signals coalesce in a buffer of one.
//
// Every watch of a Store shares one goroutine (and the driver's feed),
// which exist while at least one watch does. The Store closes the channel
// when ctx ends, or when the feed breaks or a poll fails: then every
// watch's channel is closed; watch again.
func (s *Store) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, s.unavailable(ctx, "watch", err)
	}
	w, r, fresh := s.hub.add(ctx, name)
	select {
	case <-r.ready:
	case <-ctx.Done():
		w.end()
		return nil, s.unavailable(ctx, "watch", ctx.Err())
	}
	if r.err != nil {
		w.end()
		return nil, s.unavailable(ctx, "watch", r.err)
	}
	if fresh {
		v, err := s.d.ReadLock(ctx, name, "")
		if err != nil {
			w.end()
			return nil, s.unavailable(ctx, "watch", err)
		}
		s.hub.observe(name, v)
	}
	return w.ch, nil
}

// hub multiplexes the watches of one Store over one goroutine
// (hub.serve) per run, and the driver's feed if it has one.
type hub struct {
	s    *Store
	poll time.Duration
	feed Notifier // nil: poll

	mu    sync.Mutex
	run   *run                // nil while no watch exists
	names map[string]*watched // by lock name
}

// watched is what the hub knows of one watched lock.
type watched struct {
	subs    map[*watch]struct{}
	seen    bool      // read at least once
	version uint64    // as last read
	live    bool      // as last read
	due     time.Time // when to read it again; zero: when told
}

// watch is one Watch call's channel. The hub closes ch exactly once, when
// it removes the watch.
type watch struct {
	h    *hub
	name string
	ch   chan struct{}
	stop func() bool // unregisters the ctx callback
}

// run is one life of the hub's goroutine. ready is closed once the feed
// is confirmed or failed (err then says why).
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{}
	err    error
	wake   chan struct{} // buffer 1: look at the schedule again
}

// add registers a watch on name, starting a run if none exists; fresh
// reports that name was not watched before.
func (h *hub) add(ctx context.Context, name string) (w *watch, r *run, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.run = &run{ctx: rctx, cancel: cancel, ready: make(chan struct{}), wake: make(chan struct{}, 1)}
		h.names = map[string]*watched{}
		go h.serve(h.run)
	}
	w = &watch{h: h, name: name, ch: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.end)
	n := h.names[name]
	if n == nil {
		n = &watched{subs: map[*watch]struct{}{}}
		h.names[name] = n
		fresh = true
	}
	n.subs[w] = struct{}{}
	return w, h.run, fresh
}

// end removes w and closes its channel, and ends the run if it was the
// last watch. Calling it again does nothing.
func (w *watch) end() {
	h := w.h
	h.mu.Lock() // add sets w.stop under it; a ctx already done calls end at once
	defer h.mu.Unlock()
	if w.stop != nil {
		w.stop()
	}
	n := h.names[w.name]
	if n == nil {
		return
	}
	if _, in := n.subs[w]; !in {
		return // already ended, by its ctx or by a broken feed
	}
	delete(n.subs, w)
	close(w.ch)
	if len(n.subs) > 0 {
		return
	}
	delete(h.names, w.name)
	if len(h.names) == 0 {
		h.run.cancel()
		h.run, h.names = nil, nil
	}
}

// serve starts the feed (or none, to poll), then reads every watched lock
// when it is due, until the run is cancelled or breaks.
func (h *hub) serve(r *run) {
	var feed sync.WaitGroup
	defer feed.Wait()
	if h.feed == nil {
		close(r.ready)
	} else {
		var once sync.Once
		ready := func(err error) { once.Do(func() { r.err = err; close(r.ready) }) }
		feed.Go(func() {
			err := h.feed.Notify(r.ctx, func() { ready(nil) }, h.changed)
			if r.ctx.Err() == nil {
				ready(err)
				h.broken(r)
			}
		})
	}
	for {
		for _, name := range h.dueNames(time.Now()) {
			v, err := h.s.d.ReadLock(r.ctx, name, "")
			if err != nil {
				if r.ctx.Err() == nil {
					h.broken(r)
				}
				return
			}
			h.observe(name, v)
		}
		t := time.NewTimer(time.Until(h.nextDue()))
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-r.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// observe records what a read of name found: a signal if its record
// changed (or its holder's expiry passed) since the last read, and when
// to read it next.
func (h *hub) observe(name string, v View) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names[name]
	if n == nil {
		return
	}
	alive := live(v)
	if n.seen && (v.Lock.Version != n.version || n.live && !alive) {
		n.signal()
	}
	n.seen, n.version, n.live = true, v.Lock.Version, alive
	n.due = time.Time{}
	if h.feed == nil {
		n.due = time.Now().Add(h.poll)
	}
	if !alive {
		return
	}
	end := v.Lock.Expires
	if !v.Lock.Hold && !v.HolderExpires.IsZero() && (end.IsZero() || v.HolderExpires.Before(end)) {
		end = v.HolderExpires
	}
	if !end.IsZero() {
		at := time.Now().Add(end.Sub(v.Now))
		if n.due.IsZero() || at.Before(n.due) {
			n.due = at
		}
	}
}

// changed signals the watches of name and reads it again soon (for its
// expiry); from the feed, and from this Store's own writes.
func (h *hub) changed(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.names[name]
	if n == nil {
		return
	}
	n.signal()
	n.due = time.Now()
	select {
	case h.run.wake <- struct{}{}:
	default:
	}
}

func (n *watched) signal() {
	for w := range n.subs {
		select {
		case w.ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

// dueNames returns the watched names to read now.
func (h *hub) dueNames(now time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name, n := range h.names {
		if n.seen && !n.due.IsZero() && !n.due.After(now) {
			out = append(out, name)
		}
	}
	return out
}

// nextDue returns the earliest due time, or an hour from now if none.
func (h *hub) nextDue() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := time.Now().Add(time.Hour)
	for _, n := range h.names {
		if n.seen && !n.due.IsZero() && n.due.Before(next) {
			next = n.due
		}
	}
	return next
}

// broken ends every watch of r, unless the hub has ended r itself.
func (h *hub) broken(r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return // cancelled on purpose when the last watch ended
	}
	for _, n := range h.names {
		for w := range n.subs {
			w.stop()
			close(w.ch)
		}
	}
	r.cancel()
	h.run, h.names = nil, nil
}
