package elector

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// waiter paces the retries of a one-shot run that may wait for a held
// lock: it is woken by the backend's watch when there is one, and polls at
// the retry interval otherwise.
type waiter struct {
	ctx      context.Context
	cfg      *Config
	b        backends.Backend
	names    []string
	start    time.Time // the run began
	until    time.Time // give up after this
	renewed  time.Time // start of the session's last Open or KeepAlive
	watch    Rewatch
	releases bool           // the watch signals releases alone (a backends.ReleaseWatcher)
	wg       sync.WaitGroup // the watch's forwarders, for several names
}

// newWaiter returns the waiter of a run that started at start. It does
// not watch yet: a free lock needs no watch (on Redis a watch is a
// connection of its own), so the run watches only once it has found the
// lock held (see watchIfDue).
func newWaiter(ctx context.Context, b backends.Backend, names []string, cfg *Config, start time.Time) *waiter {
	return &waiter{ctx: ctx, cfg: cfg, b: b, names: names, start: start, until: start.Add(cfg.Wait), renewed: start}
}

// watchIfDue sets up the backend's watch when the lock was found held, if
// the run may wait and no watch is up (one that broke is set up again
// after a pause, polling meanwhile), and reports whether the caller should
// try again at once: a release between the try and the watch would
// otherwise be missed.
func (w *waiter) watchIfDue(sess backends.Session) bool {
	watch, releases := releasesOf(w.b, sess)
	now := time.Now()
	if w.cfg.Wait <= 0 || !now.Before(w.until) || !w.watch.Due(now) {
		return false
	}
	setup, done := context.WithDeadline(w.ctx, w.until)
	defer done()
	if err := w.watch.Open(w.ctx, setup, watch, w.names, &w.wg, w.cfg.RetryPause()); err != nil {
		return false // poll meanwhile
	}
	w.releases = releases
	return true
}

// releasesOf returns what a waiter on sess watches b with: its releases
// alone where b can tell them apart (another candidate taking the lock
// is no reason to try again), and then releases is true; else every
// change, through the session where it joins a line so (see watchFor).
func releasesOf(b backends.Backend, sess backends.Session) (watch WatchFunc, releases bool) {
	if rw, ok := b.(backends.ReleaseWatcher); ok {
		return rw.WatchReleases, true
	}
	return watchFor(b, sess), false
}

// wait blocks until the next try is due. It returns false when the wait is
// over (or there was none) or ctx ended.
func (w *waiter) wait() bool {
	left := time.Until(w.until)
	if left <= 0 {
		return false
	}
	// Wake in time to renew the session before half its lease is gone.
	renewIn := max(time.Until(w.renewed.Add(w.cfg.RunTTL/2)), 0)
	t := time.NewTimer(min(left, w.cfg.RetryPause(), renewIn))
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case _, ok := <-w.watch.C():
		if !ok {
			w.watch.Broken(w.cfg.RetryPause())
			return true
		}
		return w.yield(left)
	case <-t.C:
	}
	return true
}

// yieldPause is how long a waiter woken by a release lets pass before it
// tries, where the backend does not queue waiters and tells releases
// apart: long enough that a holder that released and tries again at once
// (a loop of runs) takes the lock back first, so that the lock changes
// hands, at the cost of a notice's round trip, only as often as the
// waiters' tries land while it is free. It adds as much to a handover to
// a waiter. Jittered by half either way, so woken waiters do not come
// back together.
const yieldPause = 2 * time.Millisecond

// starveAfter is how long a waiter may wait before it stops yielding and
// tries at once at every release notice, racing the holder that takes the
// lock back: it bounds how long a waiter may be passed over.
const starveAfter = 50 * time.Millisecond

// yield pauses after a release notice, see yieldPause, within the time
// left; it returns false if ctx ended.
func (w *waiter) yield(left time.Duration) bool {
	if !w.releases || time.Since(w.start) > starveAfter {
		// The signal may be of the lock being taken, when a pause
		// would make every try land while it is held; or it waited
		// long enough.
		return true
	}
	t := time.NewTimer(min(left, yieldPause/2+rand.N(yieldPause)))
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// renew keeps the session alive when half its lease has gone by while
// waiting, or always if forced.
func (w *waiter) renew(s backends.Session, force bool) error {
	if !force && time.Since(w.renewed) < w.cfg.RunTTL/2 {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RunTTL) // a hung backend is a failure
	defer cancel()
	if err := s.KeepAlive(ctx); err != nil {
		return err
	}
	w.renewed = start
	return nil
}

func (w *waiter) stop() {
	w.watch.Stop()
	w.wg.Wait()
}
