package record

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/backends/internal/hub"
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
	return s.watch(ctx, name, hub.AllKinds)
}

// WatchReleases is Watch for a candidate waiting for name: it signals
// only the changes that may free the lock (a release, an expiry, the end
// of its holder's session, a delete by hand), not a take.
func (s *Store) WatchReleases(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, freed)
}

// The kinds of the hub's signals: a change that leaves the lock held,
// and one that may have freed it (all WatchReleases wakes for).
const (
	taken hub.Kinds = 1 << iota
	freed
)

// kind returns the kind of a change that freed the lock, or did not.
func kind(free bool) hub.Kinds {
	if free {
		return freed
	}
	return taken
}

func (s *Store) watch(ctx context.Context, name string, k hub.Kinds) (<-chan struct{}, error) {
	if err := validate.Name(name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, s.unavailable(ctx, "watch", err)
	}
	w, err := s.hub.h.WatchOnly(ctx, name, k)
	if err != nil {
		return nil, s.unavailable(ctx, "watch", err)
	}
	if w.Fresh() {
		v, err := s.d.ReadLock(ctx, name, "")
		if err != nil {
			w.End()
			return nil, s.unavailable(ctx, "watch", err)
		}
		s.hub.observe(s.hub.h.Current(), name, v)
	}
	return w.C(), nil
}

// transport is the transport of a Store's watch hub: the driver's feed
// (or none, to poll) and the reads of the watched locks when due, from
// one goroutine per run. The sessions whose losses the feed reports keep
// the run (Losses).
type transport struct {
	s    *Store
	poll time.Duration
	feed Notifier // nil: poll
	h    *hub.Hub[watched]
}

// Wait returns once every goroutine the backend started for its watches
// has returned, or with ctx's error when ctx ends first. They stop when
// the last watch ends, and a store's client can hold one for seconds
// while it reconnects (nats.go re-creating a consumer): call Wait after
// the last watch ended, or after closing the client, so that none
// outlives the program's use of the backend. Package dial's closers call
// it, bounded at 25 s.
func (s *Store) Wait(ctx context.Context) error {
	return s.hub.h.Wait(ctx)
}

// WaitBounded is Wait bounded at 25 s, for package dial's closers.
func WaitBounded(s *Store) {
	ctx, cancel := context.WithTimeout(context.Background(), feedStop)
	defer cancel()
	_ = s.Wait(ctx)
}

// watched is what the hub knows of one watched lock.
type watched struct {
	seen    bool      // read at least once
	version uint64    // as last read or pushed
	live    bool      // as last read or pushed
	holder  string    // the session it names, as last read or pushed
	timed   bool      // the last read reported an expiry: the store's clock ends it
	due     time.Time // when to read it again; zero: when told
}

// dueAt is when n is to be read again, for the hub's schedule.
func (n *watched) dueAt() (time.Time, bool) { return n.due, n.seen && !n.due.IsZero() }

// init makes t the transport of s's watch hub.
func (t *transport) init(s *Store, poll time.Duration, feed Notifier) {
	t.s, t.poll, t.feed = s, poll, feed
	t.h = hub.New(hub.Config[watched]{Open: t.open, Due: (*watched).dueAt})
}

// open starts a run; the hub's lock is held.
func (t *transport) open(ctx context.Context, r *hub.Run) func() error {
	return func() error { return t.serve(ctx, r) }
}

// serve starts the feed (or none, to poll), then reads every watched lock
// when it is due, until ctx ends or the run breaks: the feed broke, or a
// read failed, which ends the run at once (hub.Break), before the feed
// stopped. It returns once the feed did.
func (t *transport) serve(ctx context.Context, r *hub.Run) error {
	var feed sync.WaitGroup
	defer feed.Wait()
	if t.feed == nil {
		r.Ready(nil)
	} else {
		feed.Go(func() {
			err := t.feed.Notify(ctx, &Feed{t: t, r: r})
			if ctx.Err() == nil {
				if err == nil {
					err = hub.ErrEnded
				}
				t.h.Break(r, err)
			}
		})
	}
	for {
		for _, name := range t.h.Due(r, time.Now()) {
			v, err := t.s.d.ReadLock(ctx, name, "")
			if err != nil {
				t.h.Break(r, err) // nothing if the run ended meanwhile
				return err
			}
			t.observe(r, name, v)
		}
		next, ok := t.h.Next(r)
		if !ok {
			next = time.Now().Add(time.Hour)
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.Wake():
		case <-timer.C:
		}
		timer.Stop()
	}
}

// observe records what a read of name in run r found: a signal if its
// record changed (or its holder's expiry passed) since the last read, and
// when to read it next.
func (t *transport) observe(r *hub.Run, name string, v View) {
	t.h.With(r, func(hv hub.View[watched]) {
		n := hv.State(name)
		if n == nil {
			return
		}
		alive := live(v)
		if n.seen && (v.Lock.Version != n.version || n.live && !alive) {
			hv.SignalKinds(name, kind(!alive))
		}
		if !n.seen {
			r.Poke() // its Watch's read: the first due time, which serve has not seen
		}
		n.seen, n.version, n.live, n.holder = true, v.Lock.Version, alive, v.Lock.Session
		n.timed = !v.Lock.Expires.IsZero() || !v.HolderExpires.IsZero()
		n.due = time.Time{}
		if t.feed == nil {
			n.due = time.Now().Add(t.poll)
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
	})
}

// changed signals the watches of name after this Store's own write
// (free: the write freed the lock), and reads it again soon (for its
// expiry) unless the feed reports its changes.
func (t *transport) changed(name string, free bool) {
	r := t.h.Current()
	t.h.With(r, func(hv hub.View[watched]) {
		if n := hv.State(name); n != nil {
			hv.SignalKinds(name, kind(free))
			t.reread(r, n)
		}
	})
}

// reread schedules a read of n now, unless a feed reports its changes
// and its store's clock does not end it; the hub's lock is held.
func (t *transport) reread(r *hub.Run, n *watched) {
	if t.feed != nil && !n.timed {
		return
	}
	n.due = time.Now()
	r.Poke()
}

// pushed handles a lock record's change from the feed of run r.
func (t *transport) pushed(r *hub.Run, l Lock) {
	var ss []*session
	t.h.With(r, func(hv hub.View[watched]) {
		if n := hv.State(l.Name); n != nil {
			free := l.Session == "" && !l.Hold
			hv.SignalKinds(l.Name, kind(free))
			n.version, n.live, n.holder = l.Version, !free, l.Session
			t.reread(r, n)
		}
		for k := range hv.Keepers() {
			ss = append(ss, k.(*session))
		}
	})
	for _, s := range ss { // outside the hub's lock: they take their own
		s.pushed(l)
	}
}

// ended handles the end of session sid's record from the feed of run r.
func (t *transport) ended(r *hub.Run, sid string) {
	var ss []*session
	t.h.With(r, func(hv hub.View[watched]) {
		for name, n := range hv.All() {
			if n.live && n.holder == sid {
				hv.SignalKinds(name, freed)
				n.live = false
			}
		}
		for k := range hv.Keepers() {
			if s := k.(*session); s.sid == sid {
				ss = append(ss, s)
			}
		}
	})
	for _, s := range ss {
		s.ended()
	}
}
