package hub

import (
	"context"
	"errors"
	"sync"
	"time"
)

var (
	// ErrEnded is a feed that returned nil while its run was still wanted.
	ErrEnded = errors.New("hub: feed ended")
	// errStopped settles the readiness of a run the Hub ended itself.
	errStopped = errors.New("hub: run stopped")
)

// Config is what a transport gives the Hub. Open is required; the rest
// is optional.
type Config[S any] struct {
	// Open starts one run of the feed, with the Hub's lock held: it must
	// not block. It returns the function the run's goroutine calls: that
	// function confirms the feed with r.Ready, reports through the Hub,
	// and returns when ctx ends or the feed breaks (with why).
	Open func(ctx context.Context, r *Run) func() error
	// Join, if not nil, subscribes the run's feed to name when name gets
	// its first watch (or again after a join failed). Its error answers
	// at once; nil means the transport answers later with Hub.Joined.
	// The watches of name are ready once the join is answered.
	Join func(r *Run, name string) error
	// Leave unsubscribes a joined name that the run drops while it lives
	// on (never when the run ends).
	Leave func(r *Run, name string)
	// Linger is how long a name stays, joined and with its state, and the
	// run with it, after its last watch ended; a Watch meanwhile finds it
	// ready. Zero drops it at once. A name whose join is pending is never
	// dropped before the answer (a late answer would be taken for a later
	// join's).
	Linger time.Duration
	// Due, if not nil, says when a name is due (Next, Due): ok false
	// means never; a zero time with ok means now.
	Due func(s *S) (at time.Time, ok bool)
}

// Hub multiplexes the watches of one backend over one feed (see the
// package doc).
type Hub[S any] struct {
	cfg Config[S]

	mu      sync.Mutex
	run     *Run                 // nil while nothing needs the feed
	names   map[string]*entry[S] // by name; nil while run is
	keep    map[any]struct{}     // keepers of the run (Keep)
	sweeper *time.Timer          // drops lingering names; nil if not armed
	active  int                  // runs whose goroutine has not returned
	idle    chan struct{}        // closed when active falls to 0 (Wait)
}

// entry is what the Hub knows of one name.
type entry[S any] struct {
	subs   map[*Sub[S]]struct{}
	state  S
	join   *join     // the join in flight, or nil
	joined bool      // the feed confirmed the join
	idle   time.Time // when its last watch ended; zero while watched
}

// join is one join of a name, answered by closing done after err is set.
type join struct {
	done chan struct{}
	err  error
}

// Kinds is a set of kinds of signal, one bit each, which the transport
// defines: a watch wakes only for the kinds it asked for (WatchOnly), and
// a signal names the kinds it is of (View.SignalKinds).
type Kinds uint64

// AllKinds is every kind: what Watch asks for, and what Signal is of.
const AllKinds = ^Kinds(0)

// Sub is one Watch call's channel.
type Sub[S any] struct {
	h     *Hub[S]
	e     *entry[S]
	name  string
	kinds Kinds // of the signals it wakes for
	ch    chan struct{}
	join  *join       // the join its Watch waits for; nil if none
	stop  func() bool // unregisters the ctx callback
	ended bool        // guarded by h.mu
	fresh bool
}

// New returns a Hub for a transport. It starts nothing.
func New[S any](cfg Config[S]) *Hub[S] {
	return &Hub[S]{cfg: cfg}
}

// Watch adds a watch of name, starting a run if none exists, and returns
// once the run's feed is ready (and name joined, with Config.Join): no
// Signal after Watch returned is missed. It returns ctx.Err() if ctx
// ends first, or the error that made the feed (or the join) fail; the
// watch is then removed. The Sub ends when ctx ends.
func (h *Hub[S]) Watch(ctx context.Context, name string) (*Sub[S], error) {
	return h.WatchOnly(ctx, name, AllKinds)
}

// WatchOnly is Watch for a watch that wakes only for the signals of the
// kinds k (View.SignalKinds).
func (h *Hub[S]) WatchOnly(ctx context.Context, name string, k Kinds) (*Sub[S], error) {
	w, r := h.add(ctx, name, k)
	if err := r.Wait(ctx); err != nil {
		w.End()
		return nil, err
	}
	if w.join != nil {
		select {
		case <-w.join.done:
		case <-ctx.Done():
			w.End()
			return nil, ctx.Err()
		}
		if w.join.err != nil {
			w.End()
			return nil, w.join.err
		}
	}
	return w, nil
}

// add registers a watch of name in the current run, starting one if
// needed, and joins name if it must.
func (h *Hub[S]) add(ctx context.Context, name string, k Kinds) (*Sub[S], *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.start(ctx)
	e := h.names[name]
	w := &Sub[S]{h: h, name: name, kinds: k, ch: make(chan struct{}, 1), fresh: e == nil}
	if e == nil {
		e = &entry[S]{subs: map[*Sub[S]]struct{}{}}
		h.names[name] = e
		if h.cfg.Due != nil {
			r.Poke() // a new name may be due at once
		}
	}
	e.idle = time.Time{}
	w.e = e
	w.stop = context.AfterFunc(ctx, w.End)
	e.subs[w] = struct{}{}
	if h.cfg.Join != nil && !e.joined {
		if e.join == nil {
			e.join = &join{done: make(chan struct{})}
			if err := h.cfg.Join(r, name); err != nil {
				j := e.join
				h.answer(name, e, err)
				w.join = j
				return w, r
			}
		}
		w.join = e.join
	}
	return w, r
}

// start returns the current run, starting one if none exists; h.mu is
// held.
func (h *Hub[S]) start(ctx context.Context) *Run {
	if h.run != nil {
		return h.run
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Run{ctx: rctx, cancel: cancel, ready: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.run, h.names, h.keep = r, map[string]*entry[S]{}, map[any]struct{}{}
	serve := h.cfg.Open(rctx, r)
	if h.active++; h.active == 1 {
		h.idle = make(chan struct{})
	}
	go h.serve(r, serve)
	return r
}

// Wait returns once every run the Hub started has returned, or ctx ended
// (with its error). A run stopped by the end of its last watch winds
// down on its own goroutine, which nobody else waits for: the owner of
// the client the feed uses calls Wait once nothing watches any more and
// the client is closed, so that no goroutine outlives it.
func (h *Hub[S]) Wait(ctx context.Context) error {
	h.mu.Lock()
	idle := h.idle
	if h.active == 0 {
		idle = nil
	}
	h.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serve runs one run's feed, and ends every watch of the run if the feed
// broke while the run was still wanted.
func (h *Hub[S]) serve(r *Run, feed func() error) {
	defer func() {
		close(r.done)
		h.mu.Lock()
		if h.active--; h.active == 0 {
			close(h.idle)
		}
		h.mu.Unlock()
	}()
	err := feed()
	if r.ctx.Err() != nil {
		return // the Hub ended the run (or Break did)
	}
	if err == nil {
		err = ErrEnded
	}
	h.Break(r, err)
}

// Break ends r as a feed that returned err does, at once, for a
// transport that finds its feed broken before the run's function can
// return (a second goroutine of its own to wind down): every watch of r
// is closed, and r's context ends. It does nothing if r is no longer the
// Hub's run.
func (h *Hub[S]) Break(r *Run, err error) {
	r.Ready(err)
	h.broken(r, err)
}

// Fresh reports whether the Watch that returned w was the first of its
// name (in the name's current stay in the Hub).
func (w *Sub[S]) Fresh() bool { return w.fresh }

// C returns the channel that signals name's changes; closed when w ends.
func (w *Sub[S]) C() <-chan struct{} { return w.ch }

// End removes w and closes its channel; the run stops if that was the
// last watch (after lingering, see Config.Linger). Calling it again does
// nothing.
func (w *Sub[S]) End() {
	h := w.h
	h.mu.Lock() // add sets w.stop under it; a ctx already done calls End at once
	defer h.mu.Unlock()
	if w.ended {
		return // already ended, by its ctx or by a broken feed
	}
	w.ended = true
	w.stop()
	delete(w.e.subs, w)
	close(w.ch)
	if len(w.e.subs) == 0 {
		h.left(w.name, w.e)
	}
}

// left handles name's last watch ending: it lingers, waits for its join's
// answer, or goes. h.mu is held.
func (h *Hub[S]) left(name string, e *entry[S]) {
	if h.cfg.Linger <= 0 && e.join == nil {
		h.drop(name, e)
		return
	}
	e.idle = time.Now()
	if h.cfg.Linger > 0 && h.sweeper == nil {
		r := h.run
		h.sweeper = time.AfterFunc(h.cfg.Linger, func() { h.sweep(r) })
	}
}

// drop forgets name, and stops the run if nothing else needs it; h.mu is
// held.
func (h *Hub[S]) drop(name string, e *entry[S]) {
	delete(h.names, name)
	if len(h.names) == 0 && len(h.keep) == 0 {
		h.stop()
		return
	}
	if e.joined && h.cfg.Leave != nil {
		h.cfg.Leave(h.run, name)
	}
}

// sweep drops the names that have lingered Config.Linger, and arms
// itself again for those still lingering.
func (h *Hub[S]) sweep(r *Run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return // ended meanwhile: everything went with it
	}
	h.sweeper = nil
	next := time.Duration(0)
	for name, e := range h.names {
		if e.idle.IsZero() || e.join != nil {
			continue // watched, or waiting for its answer (which lingers it again)
		}
		if left := h.cfg.Linger - time.Since(e.idle); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		if h.drop(name, e); h.run != r {
			return
		}
	}
	if next > 0 {
		h.sweeper = time.AfterFunc(next, func() { h.sweep(r) })
	}
}

// stop ends the current run; h.mu is held.
func (h *Hub[S]) stop() {
	r := h.run
	r.cancel() // the feed sees it and returns
	r.Ready(errStopped)
	if h.sweeper != nil {
		h.sweeper.Stop()
		h.sweeper = nil
	}
	h.run, h.names, h.keep = nil, nil, nil
}

// broken ends every watch of r and answers every pending join with err,
// unless r is no longer the Hub's run.
func (h *Hub[S]) broken(r *Run, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return // ended on purpose meanwhile
	}
	for _, e := range h.names {
		if j := e.join; j != nil {
			j.err = err
			close(j.done)
			e.join = nil
		}
		for w := range e.subs {
			w.ended = true
			w.stop()
			close(w.ch)
		}
	}
	h.stop()
}

// Joined answers the join of name in r (see Config.Join): the watches
// waiting for it return err from Watch, or are ready if it is nil. An
// answer to no pending join does nothing.
func (h *Hub[S]) Joined(r *Run, name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	if e := h.names[name]; e != nil && e.join != nil {
		h.answer(name, e, err)
	}
}

// answer settles e's pending join; h.mu is held.
func (h *Hub[S]) answer(name string, e *entry[S], err error) {
	j := e.join
	j.err = err
	close(j.done)
	e.join, e.joined = nil, err == nil
	if len(e.subs) == 0 {
		h.left(name, e) // every watch of it ended meanwhile
	}
}
