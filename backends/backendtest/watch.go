package backendtest

import (
	"context"
	"time"

	"github.com/hustings/hustings/backends"
)

// watch starts watching name until the check ends, with any signal
// already pending drained.
func (e *env) watch(name string) <-chan struct{} {
	e.t.Helper()
	ch, err := e.b.Watch(e.ctx, name)
	if err != nil {
		e.t.Fatalf("Watch(%q): %v", name, err)
	}
	select {
	case <-ch:
	default:
	}
	return ch
}

// woken fails the check unless ch receives a value within wakeBound.
func (e *env) woken(ch <-chan struct{}, after string) {
	e.t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			e.t.Fatalf("watch channel closed, want a signal after %s", after)
		}
	case <-time.After(wakeBound):
		e.t.Fatalf("no watch signal within %v after %s", wakeBound, after)
	}
}

// releaseWakesWaiter: a Release wakes a watching candidate, which then
// takes the lock.
func releaseWakesWaiter(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	tok := e.acquire(a, name, 0)
	ch := e.watch(name)
	e.release(a, name, tok, 0)
	e.woken(ch, "Release")
	e.acquire(b, name, 0)
}

// closeWakesWaiter: closing the holder's session wakes a watching
// candidate, which then takes the lock.
func closeWakesWaiter(e *env) {
	a, b := e.open("a"), e.open("b")
	name := e.name()
	e.acquire(a, name, 0)
	ch := e.watch(name)
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.woken(ch, "Close of the holder's session")
	e.acquire(b, name, 0)
}

// watchClosedWithContext: the backend closes a watch channel when the
// watch's context ends.
func watchClosedWithContext(e *env) {
	e.closedWithContext("Watch", e.b.Watch)
}

// closedWithContext checks that the channel watch returns is closed when
// the watch's context ends.
func (e *env) closedWithContext(what string, watch func(context.Context, string) (<-chan struct{}, error)) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	ch, err := watch(ctx, e.name())
	if err != nil {
		cancel()
		e.t.Fatalf("%s: %v", what, err)
	}
	cancel()
	timeout := time.After(wakeBound)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			e.t.Fatalf("%s channel still open %v after its context ended", what, wakeBound)
		}
	}
}

// releaseWatcher returns the backend as a ReleaseWatcher; the suite runs
// the checks that call it only where the backend has the power.
func (e *env) releaseWatcher() backends.ReleaseWatcher {
	e.t.Helper()
	rw, ok := e.b.(backends.ReleaseWatcher)
	if !ok {
		e.t.Fatalf("%T is not a backends.ReleaseWatcher", e.b)
	}
	return rw
}

// watchReleases has waiter find name held, then watches its releases, as
// a waiting candidate does.
func (e *env) watchReleases(waiter backends.Session, name string) <-chan struct{} {
	e.t.Helper()
	rw := e.releaseWatcher()
	_, err := waiter.Acquire(e.ctx, name, 0)
	e.wantErr("Acquire of a held lock", err, backends.ErrHeld)
	ch, err := rw.WatchReleases(e.ctx, name)
	if err != nil {
		e.t.Fatalf("WatchReleases(%q): %v", name, err)
	}
	return ch
}

// releaseWakesReleaseWatcher: where the backend is a ReleaseWatcher, a
// Release of a lock a waiter found held wakes the waiter's WatchReleases,
// and the waiter then takes the lock.
func releaseWakesReleaseWatcher(e *env) {
	e.releaseWatcher()
	a, b := e.open("a"), e.open("b")
	name := e.name()
	tok := e.acquire(a, name, 0)
	ch := e.watchReleases(b, name)
	e.release(a, name, tok, 0)
	e.woken(ch, "Release")
	e.acquire(b, name, 0)
}

// closeWakesReleaseWatcher: where the backend is a ReleaseWatcher,
// closing the session of a lock's holder wakes a waiter's WatchReleases.
func closeWakesReleaseWatcher(e *env) {
	e.releaseWatcher()
	a, b := e.open("a"), e.open("b")
	name := e.name()
	e.acquire(a, name, 0)
	ch := e.watchReleases(b, name)
	if err := a.Close(e.ctx); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.woken(ch, "Close of the holder's session")
	e.acquire(b, name, 0)
}

// releaseWatchClosedWithContext: where the backend is a ReleaseWatcher,
// it closes a WatchReleases channel when the watch's context ends.
func releaseWatchClosedWithContext(e *env) {
	e.closedWithContext("WatchReleases", e.releaseWatcher().WatchReleases)
}
