package kubernetes

import (
	"context"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

var _ backends.Watcher = (*Backend)(nil)

// Watch signals when the holder of name may have changed: every write
// to its Lease (take, release, hold, delete) is seen by the one watch of
// the Backend, and so are the session Leases: a holder's session deleted
// signals its locks, and a lock whose holder, lease or hold would end by
// this process's judgment signals then. It returns once the watch's
// first LIST is done, so no change after Watch returned is missed.
// Signals coalesce in a buffer of one. While a Watch of name is open,
// the Backend keeps its Lease as last delivered (one copy per watched
// name), set before the signal, for the Acquire the signal wakes.
//
// Every Watch of a Backend shares one LIST and WATCH of the namespace's
// Leases with the Backend's prefix label, and one goroutine, which exist
// while at least one Watch does; it receives every write to those
// Leases, a session's renewal each tick included. After a disconnect the watch resumes
// from the last resourceVersion it saw (bookmarks keep it recent); when
// the server answers 410 Gone it lists again and signals every watched
// lock, as changes may have been missed. The Backend closes the channel
// when ctx ends, or when the watch cannot be resumed (three failures in
// a row): then every Watch's channel is closed; watch again.
func (b *Backend) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "watch"); err != nil {
		return nil, err
	}
	w, r := b.hub.add(ctx, name)
	select {
	case <-r.ready:
		if r.err != nil {
			w.end()
			return nil, translate(ctx, "watch", r.err)
		}
		return w.ch, nil
	case <-ctx.Done():
		w.end()
		return nil, ctxErr(ctx, "watch")
	}
}

// hub multiplexes the watches of one Backend over one Kubernetes watch,
// served by one goroutine (serve) per run.
type hub struct {
	b        *Backend
	mu       sync.Mutex
	run      *run                 // nil while no watch exists
	names    map[string]*watched  // by lock name
	sessions map[string]time.Time // when each session seen would end, by Lease name

	listeners map[*session]struct{} // sessions told of their locks' losses (Losses)
}

// watched is what the hub knows of one watched lock.
type watched struct {
	subs       map[*watch]struct{}
	lease      *coordv1.Lease // its Lease as last seen (nil if deleted, or not seen since the Watch began); never changed
	session    string         // the session Lease holding it, as last seen
	mark       string         // its term and phase, as last seen
	termEnd    time.Time      // when its lease or hold ends; zero: none known
	sessionEnd time.Time      // when its session ends if not renewed; zero: unknown
}

// due returns when n's holder may be judged gone, or zero.
func (n *watched) due() time.Time {
	switch {
	case n.termEnd.IsZero():
		return n.sessionEnd
	case n.sessionEnd.IsZero() || n.termEnd.Before(n.sessionEnd):
		return n.termEnd
	}
	return n.sessionEnd
}

// watch is one Watch call's channel. The hub closes ch exactly once,
// when it removes the watch.
type watch struct {
	h    *hub
	name string
	ch   chan struct{}
	stop func() bool // unregisters the ctx callback
}

// run is one life of the Kubernetes watch. ready is closed once the
// first LIST is done or failed (err then says why).
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{}
	err    error
	wake   chan struct{} // a due time changed (buffer of one)

	// Guarded by the hub's mu:
	seen     events.Token  // the resourceVersion up to which the run has delivered every change
	advanced chan struct{} // closed when seen moves on; nil until reached waits for it
}

// add registers a watch on name, starting a run if none exists.
func (h *hub) add(ctx context.Context, name string) (*watch, *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.start(ctx)
	w := &watch{h: h, name: name, ch: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.end)
	n := h.names[name]
	if n == nil {
		n = &watched{subs: map[*watch]struct{}{}}
		h.names[name] = n
	}
	n.subs[w] = struct{}{}
	return w, h.run
}

// start starts a run if none exists; h.mu is held.
func (h *hub) start(ctx context.Context) {
	if h.run != nil {
		return
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.run = &run{ctx: rctx, cancel: cancel, ready: make(chan struct{}), wake: make(chan struct{}, 1)}
	h.names, h.sessions, h.listeners = map[string]*watched{}, map[string]time.Time{}, map[*session]struct{}{}
	go h.serve(h.run)
}

// stopIfIdle ends the run once no watch and no listener needs it; h.mu
// is held.
func (h *hub) stopIfIdle() {
	if h.run != nil && len(h.names) == 0 && len(h.listeners) == 0 {
		h.run.cancel() // serve sees it and returns
		h.run, h.names, h.sessions, h.listeners = nil, nil, nil, nil
	}
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
		return // already ended, by its ctx or by a broken watch
	}
	delete(n.subs, w)
	close(w.ch)
	if len(n.subs) > 0 {
		return
	}
	delete(h.names, w.name)
	h.stopIfIdle()
}

// lease returns the Lease of the lock name as the watch last delivered
// it, if a Watch of name is open and has seen it since it began; nil
// otherwise. The caller must not change it.
func (h *hub) lease(name string) *coordv1.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.names[name]; n != nil {
		return n.lease
	}
	return nil
}

// renewing reports whether the session Lease named lease, as the watch
// last delivered it, was first seen by this process within its TTL
// before at: the end its locks' watches are signalled at.
func (h *hub) renewing(lease string, at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	end, ok := h.sessions[lease]
	return ok && at.Before(end)
}

// signal wakes every watch of n.
func (n *watched) signal() {
	for w := range n.subs {
		select {
		case w.ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
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
	h.run, h.names, h.sessions, h.listeners = nil, nil, nil, nil
}

// signalAll wakes every watch of r: changes may have been missed.
func (h *hub) signalAll(r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	for _, n := range h.names {
		n.signal()
	}
}

// nextDue returns the earliest due time of r's watches, or zero.
func (h *hub) nextDue(r *run) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var next time.Time
	if h.run != r {
		return next
	}
	for _, n := range h.names {
		if due := n.due(); !due.IsZero() && (next.IsZero() || due.Before(next)) {
			next = due
		}
	}
	return next
}

// fire signals the watches whose due time has come, and clears it.
func (h *hub) fire(r *run, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	for _, n := range h.names {
		if due := n.due(); !due.IsZero() && !due.After(now) {
			n.termEnd, n.sessionEnd = time.Time{}, time.Time{}
			n.signal()
		}
	}
}
