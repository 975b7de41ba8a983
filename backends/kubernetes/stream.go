package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/hustings/hustings/backends/internal/hub"
)

// Watch tuning: how many failures to start or resume the watch in a row
// end every Watch, and the pause between tries.
const (
	maxWatchFailures = 3
	watchPause       = 200 * time.Millisecond
)

// errGone says the watch's resourceVersion is too old: list again.
var errGone = errors.New("kubernetes: watch: resourceVersion too old (410 Gone)")

// selector selects every Lease of the Backend.
func (b *Backend) selector() string {
	return labels.SelectorFromSet(map[string]string{labelPrefix: b.prefix}).String()
}

// serve lists the Backend's Leases, then watches them from the list's
// resourceVersion, resuming from the last one seen after a disconnect
// and listing again on 410 Gone, until ctx ends or the watch fails
// maxWatchFailures times in a row.
func (f *feed) serve(ctx context.Context, r *hub.Run) error {
	rv, err := f.list(ctx, r)
	r.Ready(err)
	if err != nil {
		return err
	}
	failures := 0
	for ctx.Err() == nil {
		next, err := f.follow(ctx, r, rv)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, errGone):
			if next, err = f.list(ctx, r); err != nil {
				next = rv // no progress: a LIST that fails is a failure like any other
			}
			f.h.SignalAll(r)
		}
		if next != rv {
			failures = 0 // the watch made progress
		}
		if err != nil {
			if failures++; failures >= maxWatchFailures {
				return err
			}
			sleep(ctx, watchPause)
			continue
		}
		rv = next
	}
	return ctx.Err()
}

// list reads every Lease of the Backend, feeding what it sees to the
// observer and r's watches, and returns the list's resourceVersion.
func (f *feed) list(ctx context.Context, r *hub.Run) (string, error) {
	list, err := f.b.leases.List(ctx, metav1.ListOptions{LabelSelector: f.b.selector()})
	if err != nil {
		return "", err
	}
	for i := range list.Items {
		f.deliver(ctx, r, kwatch.Modified, &list.Items[i])
	}
	if rv, err := tokenOf(list.ResourceVersion); err == nil {
		f.h.With(r, func(v hub.View[watched]) { f.sawList(v, lockNames(list.Items), rv) })
	}
	advance(r, list.ResourceVersion)
	return list.ResourceVersion, nil
}

// follow watches from rv until the watch ends, and returns the last
// resourceVersion seen: errGone when the server no longer has rv,
// another error when the watch could not start or ended with one, nil
// when it just ended (a disconnect, the server's timeout).
func (f *feed) follow(ctx context.Context, r *hub.Run, rv string) (string, error) {
	opts := metav1.ListOptions{LabelSelector: f.b.selector(), ResourceVersion: rv, AllowWatchBookmarks: true}
	if f.b.watchTimeout > 0 {
		opts.TimeoutSeconds = &f.b.watchTimeout
	}
	w, err := f.b.leases.Watch(ctx, opts)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return rv, errGone
	}
	if err != nil {
		return rv, err
	}
	defer w.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, _ := f.h.Next(r)
		reset(timer, next)
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case <-r.Wake():
		case now := <-timer.C:
			f.fire(r, now)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			if ev.Type == kwatch.Error {
				if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
					return rv, errGone
				}
				return rv, fmt.Errorf("kubernetes: watch: %w", apierrors.FromObject(ev.Object))
			}
			l, ok := ev.Object.(*coordv1.Lease)
			if !ok {
				continue
			}
			rv = l.ResourceVersion
			if ev.Type != kwatch.Bookmark {
				f.deliver(ctx, r, ev.Type, l)
			}
			advance(r, rv) // after deliver: a loss is in the ledger before a keep-alive hears of it
		}
	}
}

// deliver hands one change of a Lease to the observer and, if r is
// still the hub's run, to its watches: a run that was stopped (the last
// watch ended) may still be delivering while the next one starts, and
// its late, older news must not set the new run's due times.
func (f *feed) deliver(ctx context.Context, r *hub.Run, typ kwatch.EventType, l *coordv1.Lease) {
	if held := f.b.held.Load(); held != nil { // tests: a watch that runs behind
		select {
		case <-*held:
		case <-ctx.Done():
			return
		}
	}
	switch l.Labels[labelKind] {
	case kindLock:
		f.lockChanged(r, typ, l)
	case kindSession:
		f.sessionChanged(r, typ, l)
	}
}

// lockChanged signals the watches of a lock whose Lease changed, keeps
// the Lease for their Acquire, and sets when its hold or lease ends if
// nothing else changes (from when this term was first seen: a fenced
// write does not move it).
func (f *feed) lockChanged(r *hub.Run, typ kwatch.EventType, l *coordv1.Lease) {
	t := termOf(l)
	live := typ != kwatch.Deleted && t.token != 0
	if live && t.timed() {
		f.b.seen.see(lockKey(t.name), t.mark())
	}
	f.h.With(r, func(v hub.View[watched]) {
		if rv, err := tokenOf(l.ResourceVersion); err == nil {
			f.sawLine(t.name, t, l, rv, f.sawLock(v, typ, t, rv))
		}
		n := v.State(t.name)
		if n == nil {
			return
		}
		defer v.Signal(t.name) // after n.lease is set: a woken Acquire reads it
		if !live {
			*n = watched{}
			if typ != kwatch.Deleted {
				n.lease = l.DeepCopy() // not a LIST's item: that would keep the whole LIST
			}
			return
		}
		n.lease = l.DeepCopy()
		if n.mark != t.mark() {
			n.mark, n.session, n.termEnd, n.sessionEnd = t.mark(), "", time.Time{}, time.Time{}
			if d := max(t.hold, t.lease); d > 0 {
				n.termEnd = time.Now().Add(d)
			}
		}
		if n.session != t.session {
			n.session, n.sessionEnd = t.session, f.sessions[t.session] // zero if not seen yet
		}
		r.Poke()
	})
}

// sessionChanged feeds a session Lease's renewal to the observer, and
// moves the end of the locks it holds to its TTL from now; a session
// deleted signals them at once.
func (f *feed) sessionChanged(r *hub.Run, typ kwatch.EventType, l *coordv1.Lease) {
	// The session ends a TTL after this process first saw its record, as
	// the observer judges it: a LIST after 410 Gone that delivers the same
	// record again does not move its end.
	now, shown := time.Now(), time.Duration(0)
	if typ == kwatch.Deleted {
		f.b.seen.forget(sessionKey(l.Name))
	} else {
		shown = f.b.seen.unchanged(sessionKey(l.Name), l.ResourceVersion, now)
	}
	ttl := ttlOf(l) // as sessionLive judges it
	f.h.With(r, func(v hub.View[watched]) {
		end := now.Add(ttl - shown)
		if typ == kwatch.Deleted {
			delete(f.sessions, l.Name)
		} else {
			f.sessions[l.Name] = end
		}
		for name, n := range v.All() {
			switch {
			case n.session != l.Name:
			case typ == kwatch.Deleted:
				*n = watched{}
				v.Signal(name)
			case ttl > 0:
				n.sessionEnd = end
			}
		}
		r.Poke()
	})
}

// reset sets timer to fire at due (or not for an hour, if zero).
func reset(timer *time.Timer, due time.Time) {
	d := time.Hour
	if !due.IsZero() {
		d = max(time.Until(due), 0)
	}
	timer.Reset(d)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
