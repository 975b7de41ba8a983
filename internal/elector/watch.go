package elector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hustings/hustings/backends"
)

// watchAll watches every name and merges the signals into one channel
// (buffer 1, coalescing). With one name it is the backend's own channel.
// With more, one goroutine per name forwards signals, tracked by wg; the
// first source to close cancels the rest (cancel ends ctx), and the merged
// channel closes when all have stopped, so the receiver sets the watch up
// again. With fired non-nil, the forwarder of names[i] (i < 64) sets bit i
// of fired before it signals, so the receiver can tell which names may
// have changed.
func watchAll(ctx context.Context, cancel context.CancelFunc, watch WatchFunc, names []string, wg *sync.WaitGroup, fired *atomic.Uint64) (<-chan struct{}, error) {
	if len(names) == 1 {
		return watch(ctx, names[0])
	}
	sources := make([]<-chan struct{}, 0, len(names))
	for _, n := range names {
		ch, err := watch(ctx, n)
		if err != nil {
			cancel() // closes the sources opened so far
			return nil, err
		}
		sources = append(sources, ch)
	}
	merged := make(chan struct{}, 1)
	var forwarders sync.WaitGroup
	for i, src := range sources {
		forwarders.Add(1)
		wg.Go(func() {
			defer forwarders.Done()
			for range src {
				if fired != nil && i < 64 {
					fired.Or(1 << i)
				}
				select {
				case merged <- struct{}{}:
				default:
				}
			}
			cancel()
		})
	}
	wg.Go(func() {
		forwarders.Wait()
		close(merged)
	})
	return merged, nil
}

// waiting is what a campaign that waits for the lock knows of it: the
// backend's watch, the slots whose watch signalled, and what its tries
// found. It lets a woken waiter ask only for the slots that may have
// changed (see asks).
type waiting struct {
	watch Rewatch       // the backend's watch of the lock's slots, while it waits
	fired atomic.Uint64 // slots whose watch signalled since the last try began (bit i: slot i < 64)
	// swept: the last try found every slot it asked held, with the watch
	// up, so every slot not asked was found held after its last signal.
	swept bool
}

// asks returns the slots a try starting now asks for, as acquireAny's
// mask (0: every slot), and starts the try: signals from now on count
// for the next one. After a try that swept, only the slots whose watch
// signalled since; after anything else (a timer, a new or broken watch,
// a win, an error) every slot.
func (w *waiting) asks() uint64 {
	only := w.fired.Swap(0)
	if !w.swept {
		only = 0
	}
	w.swept = false // until this try's answer says otherwise
	return only
}

// held records a try that found every slot it asked held: with its
// watch up, the try swept.
func (w *waiting) held() {
	w.swept = w.watch.C() != nil // a signal for any slot from now on is marked
}

// watchFor returns what a waiter on sess watches b with: the session's
// WatchInLine where it has one (it joins the line only so), else b's
// Watch.
func watchFor(b backends.Backend, sess backends.Session) WatchFunc {
	if lw, ok := sess.(backends.LineWatcher); ok {
		return lw.WatchInLine
	}
	return b.Watch
}

// startWatch asks the backend to wake us when the lock changes. The watch
// lives until a.wait.watch.Stop; only its set-up is bounded by the op's timeout.
// While it lives, one goroutine hands its signals to the actor: a waiting
// campaign costs that goroutine, a holding one does not.
func (a *actor) startWatch() {
	watch := watchFor(a.e.backend, a.on.sess)
	a.call(opWatch, nil, func(ctx context.Context, sent error) outcome {
		var (
			ch     <-chan struct{}
			cancel context.CancelFunc
		)
		err := sent
		if sent == nil {
			ch, cancel, err = OpenWatch(a.ctx, ctx, watch, a.e.slots, &a.wg, &a.wait.fired)
		}
		return outcome{
			apply: func() { a.watched(ch, cancel, err) },
			discard: func() {
				if cancel != nil {
					cancel()
				}
			},
		}
	})
}

// needWatch reports whether a watch should be set up before the next try:
// once a try has found the lock held, so that a candidate that wins at
// once never opens one (on Redis a watch is a connection). A candidate
// behind a strategy's gate watches from the start: it may wait without
// trying, and a release is what tells it to rank again.
func (a *actor) needWatch(now time.Time) bool {
	return (a.losing() || a.gate != nil) && a.wait.watch.Due(now)
}

func (a *actor) watched(ch <-chan struct{}, cancel context.CancelFunc, err error) {
	if err != nil {
		if !errors.Is(err, errNotSent) {
			a.failed("watch", err)
		}
		a.wait.watch.Failed(a.backoff())
		return
	}
	a.wait.watch.Set(ch, cancel)
	a.at.try = time.Now() // a release before the watch was set up is not missed
	a.wait.swept = false  // nor one in a slot that the next try would skip
	a.wg.Go(func() {
		for range ch {
			a.do(func() { a.watchFired(ch, true) })
		}
		a.do(func() { a.watchFired(ch, false) })
	})
}

// watchFired wakes the campaign when the lock may have been released; a
// closed watch is set up again after a pause, polling meanwhile. Signals
// of a watch already stopped are ignored.
func (a *actor) watchFired(ch <-chan struct{}, ok bool) {
	if a.wait.watch.C() != ch {
		return
	}
	if !ok {
		a.wait.watch.Broken(a.cfg().RetryPause())
		a.wait.swept = false
		return
	}
	if a.term == nil {
		a.at.try = time.Now()
		if a.gate != nil {
			a.gate.fresh = false
		}
	}
}
