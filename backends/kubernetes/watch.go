package kubernetes

import (
	"context"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/hustings/hustings/backends/internal/hub"
	"github.com/hustings/hustings/internal/validate"
)

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
	w, err := b.hub.h.Watch(ctx, name)
	switch {
	case err == nil:
		return w.C(), nil
	case ctx.Err() != nil:
		return nil, ctxErr(ctx, "watch")
	}
	return nil, translate(ctx, "watch", err)
}

// feed is the transport of a Backend's watch hub: one LIST and WATCH of
// the namespace's Leases per run, served by the run's goroutine (serve).
// The sessions it tells of their losses keep the run (Losses).
type feed struct {
	b *Backend
	h *hub.Hub[watched]

	// Of the current run, guarded by h's lock (reset by open):
	sessions map[string]time.Time // when each session seen would end, by Lease name
	lines    map[string]lineSeen  // the lines of locks that listening sessions hold, by lock name
}

// watched is what the hub knows of one watched lock.
type watched struct {
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

// dueAt is due for the hub's schedule.
func (n *watched) dueAt() (time.Time, bool) {
	due := n.due()
	return due, !due.IsZero()
}

// init makes f the transport of b's watch hub.
func (f *feed) init(b *Backend) {
	f.b = b
	f.h = hub.New(hub.Config[watched]{Open: f.open, Due: (*watched).dueAt})
}

// open starts a run; the hub's lock is held.
func (f *feed) open(ctx context.Context, r *hub.Run) func() error {
	f.sessions, f.lines = map[string]time.Time{}, map[string]lineSeen{}
	return func() error { return f.serve(ctx, r) }
}

// current calls fn with the hub's lock held, if a run exists.
func (f *feed) current(fn func(v hub.View[watched])) {
	f.h.With(f.h.Current(), fn)
}

// lease returns the Lease of the lock name as the watch last delivered
// it, if a Watch of name is open and has seen it since it began; nil
// otherwise. The caller must not change it.
func (f *feed) lease(name string) (l *coordv1.Lease) {
	f.current(func(v hub.View[watched]) {
		if n := v.State(name); n != nil {
			l = n.lease
		}
	})
	return l
}

// renewing reports whether the session Lease named lease, as the watch
// last delivered it, was first seen by this process within its TTL
// before at: the end its locks' watches are signalled at.
func (f *feed) renewing(lease string, at time.Time) (ok bool) {
	f.current(func(hub.View[watched]) {
		end, seen := f.sessions[lease]
		ok = seen && at.Before(end)
	})
	return ok
}

// fire signals the watches whose due time has come, and clears it.
func (f *feed) fire(r *hub.Run, now time.Time) {
	f.h.With(r, func(v hub.View[watched]) {
		for name, n := range v.All() {
			if due := n.due(); !due.IsZero() && !due.After(now) {
				n.termEnd, n.sessionEnd = time.Time{}, time.Time{}
				v.Signal(name)
			}
		}
	})
}
