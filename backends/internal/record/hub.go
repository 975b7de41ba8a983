package record

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/internal/validate"
)

// Watch signals when the holder of name may have changed: pushed by the
// driver's Notifier, or found by polling at Config.Poll; either way a
// lock that expires as last read (a crashed holder, a lease, a hold, on
// the store's clock) with nobody telling is read again then. Writes
// through this Store signal its watchers at once. It returns once the
// feed is confirmed (a Notifier) and the lock was read, so no change
// after Watch returned is missed. Signals coalesce in a buffer of one.
//
// Every watch of a Store shares one goroutine (and the driver's feed),
// which exist while at least one watch (or a session's Losses) does. The
// Store closes the channel when ctx ends, or when the feed breaks or a
// poll fails: then every watch's channel is closed; watch again.
func (s *Store) Watch(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, false)
}

// WatchReleases is Watch for a candidate waiting for name: it signals
// only the changes that may free the lock (a release, an expiry, the end
// of its holder's session, a delete by hand), not a take.
func (s *Store) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, true)
}

func (s *Store) watch(ctx context.Context, name string, releases bool) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, s.unavailable(ctx, "watch", err)
	}
	w, r, fresh := s.hub.add(ctx, name, releases)
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

// hub multiplexes the watches of one Store, and the pushed losses of its
// sessions, over one goroutine (hub.serve) per run, and the driver's
// feed if it has one.
type hub struct {
	s    *Store
	poll time.Duration
	feed Notifier // nil: poll

	mu       sync.Mutex
	run      *run                  // nil while no watch and no pushed session needs one
	names    map[string]*watched   // by lock name
	sessions map[*session]struct{} // whose losses the feed reports
}

// watched is what the hub knows of one watched lock.
type watched struct {
	subs    map[*watch]struct{}
	seen    bool      // read at least once
	version uint64    // as last read or pushed
	live    bool      // as last read or pushed
	holder  string    // the session it names, as last read or pushed
	timed   bool      // the last read reported an expiry: the store's clock ends it
	due     time.Time // when to read it again; zero: when told
}

// watch is one Watch call's channel. The hub closes ch exactly once, when
// it removes the watch.
type watch struct {
	h        *hub
	name     string
	releases bool // signalled only when the lock may have become free
	ch       chan struct{}
	stop     func() bool // unregisters the ctx callback
}

// run is one life of the hub's goroutine. ready is closed once the feed
// is confirmed or failed (err then says why).
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{}
	err    error
	wake   chan struct{} // buffer 1: look at the schedule again
	done   chan struct{} // closed when serve (and the feed) returned

	// The feed's progress (Feed.Progress), under the hub's mu.
	seen uint64        // the last version delivered; 0: none reported
	tick chan struct{} // closed at the next progress; nil: nobody waits
}

// startLocked starts a run if none exists; h.mu is held.
func (h *hub) startLocked(ctx context.Context) *run {
	if h.run == nil {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.run = &run{ctx: rctx, cancel: cancel, ready: make(chan struct{}), wake: make(chan struct{}, 1), done: make(chan struct{})}
		go h.serve(h.run)
	}
	if h.names == nil {
		h.names = map[string]*watched{}
	}
	return h.run
}

// add registers a watch on name, starting a run if none exists; fresh
// reports that name was not watched before.
func (h *hub) add(ctx context.Context, name string, releases bool) (w *watch, r *run, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r = h.startLocked(ctx)
	w = &watch{h: h, name: name, releases: releases, ch: make(chan struct{}, 1)}
	w.stop = context.AfterFunc(ctx, w.end)
	n := h.names[name]
	if n == nil {
		n = &watched{subs: map[*watch]struct{}{}}
		h.names[name] = n
		fresh = true
	}
	n.subs[w] = struct{}{}
	return w, r, fresh
}

// end removes w and closes its channel, and ends the run if nothing
// needs it any more. Calling it again does nothing.
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
	if len(n.subs) == 0 {
		delete(h.names, w.name)
	}
	h.idleLocked()
}

// idleLocked ends the run if no watch and no pushed session needs it,
// and returns it (nil if it goes on or there is none).
func (h *hub) idleLocked() *run {
	r := h.run
	if r == nil || len(h.names) > 0 || len(h.sessions) > 0 {
		return nil
	}
	r.cancel()
	h.run = nil
	return r
}

// join makes the feed report ss's losses, and returns the run (started
// if none was).
func (h *hub) join(ctx context.Context, ss *session) *run {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions == nil {
		h.sessions = map[*session]struct{}{}
	}
	h.sessions[ss] = struct{}{}
	return h.startLocked(ctx)
}

// leave stops reporting ss's losses, and returns the run that ended with
// it, if any: the caller waits for its done (a feed can take a while to
// stop, as a client reconnecting does).
func (h *hub) leave(ss *session) *run {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, ss)
	return h.idleLocked()
}

// serve starts the feed (or none, to poll), then reads every watched lock
// when it is due, until the run is cancelled or breaks.
func (h *hub) serve(r *run) {
	defer close(r.done)
	var feed sync.WaitGroup
	defer feed.Wait()
	if h.feed == nil {
		close(r.ready)
	} else {
		var once sync.Once
		ready := func(err error) { once.Do(func() { r.err = err; close(r.ready) }) }
		feed.Go(func() {
			err := h.feed.Notify(r.ctx, &Feed{h: h, r: r, ready: func() { ready(nil) }})
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
		n.signal(!alive)
	}
	if !n.seen && h.run != nil {
		select { // its Watch's read: the first due time, which serve has not seen
		case h.run.wake <- struct{}{}:
		default:
		}
	}
	n.seen, n.version, n.live, n.holder = true, v.Lock.Version, alive, v.Lock.Session
	n.timed = !v.Lock.Expires.IsZero() || !v.HolderExpires.IsZero()
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

// changed signals the watches of name after this Store's own write
// (freed: the write freed the lock), and reads it again soon (for its
// expiry) unless the feed reports its changes.
func (h *hub) changed(name string, freed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.names[name]; n != nil {
		n.signal(freed)
		h.rereadLocked(n)
	}
}

// rereadLocked schedules a read of n now, unless a feed reports its
// changes and its store's clock does not end it.
func (h *hub) rereadLocked(n *watched) {
	if h.feed != nil && !n.timed {
		return
	}
	n.due = time.Now()
	select {
	case h.run.wake <- struct{}{}:
	default:
	}
}

// pushed handles a lock record's change from the feed of run r.
func (h *hub) pushed(r *run, l Lock) {
	h.mu.Lock()
	if h.run != r {
		h.mu.Unlock()
		return
	}
	if n := h.names[l.Name]; n != nil {
		freed := l.Session == "" && !l.Hold
		n.signal(freed)
		n.version, n.live, n.holder = l.Version, !freed, l.Session
		h.rereadLocked(n)
	}
	ss := h.sessionsLocked()
	h.mu.Unlock()
	for _, s := range ss {
		s.pushed(l)
	}
}

// ended handles the end of session sid's record from the feed of run r.
func (h *hub) ended(r *run, sid string) {
	h.mu.Lock()
	if h.run != r {
		h.mu.Unlock()
		return
	}
	for _, n := range h.names {
		if n.live && n.holder == sid {
			n.signal(true)
			n.live = false
		}
	}
	ss := h.sessionsLocked()
	h.mu.Unlock()
	for _, s := range ss {
		if s.sid == sid {
			s.ended()
		}
	}
}

// progress records that the feed of run r delivered every change up to
// version.
func (h *hub) progress(r *run, version uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.seen = max(r.seen, version)
	if r.tick != nil {
		close(r.tick)
		r.tick = nil
	}
}

// ordered reports whether run r is the running one and its feed reports
// progress.
func (h *hub) ordered(r *run) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.run == r && r.seen != 0
}

// delivered waits until run r's feed delivered version, at most wait;
// false if it did not, or r ended.
func (h *hub) delivered(ctx context.Context, r *run, version uint64, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if h.run != r {
			h.mu.Unlock()
			return false
		}
		if r.seen >= version {
			h.mu.Unlock()
			return true
		}
		if r.tick == nil {
			r.tick = make(chan struct{})
		}
		tick := r.tick
		h.mu.Unlock()
		select {
		case <-tick:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (h *hub) sessionsLocked() []*session {
	out := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		out = append(out, s)
	}
	return out
}

// signal wakes the watches of n; those of releases only if freed.
func (n *watched) signal(freed bool) {
	for w := range n.subs {
		if w.releases && !freed {
			continue
		}
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

// broken ends every watch of r, unless the hub has ended r itself. Pushed
// sessions stay joined: their next call starts a run again.
func (h *hub) broken(r *run) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return // cancelled on purpose when nothing needed it
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
