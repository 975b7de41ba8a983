package elector

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// watchAll watches every name and merges the signals into one channel
// (buffer 1, coalescing). With one name it is the backend's own channel.
// With more, one goroutine per name forwards signals, tracked by wg; the
// first source to close cancels the rest (cancel ends ctx), and the merged
// channel closes when all have stopped, so the receiver sets the watch up
// again.
func watchAll(ctx context.Context, cancel context.CancelFunc, w backends.Watcher, names []string, wg *sync.WaitGroup) (<-chan struct{}, error) {
	if len(names) == 1 {
		return w.Watch(ctx, names[0])
	}
	sources := make([]<-chan struct{}, 0, len(names))
	for _, n := range names {
		ch, err := w.Watch(ctx, n)
		if err != nil {
			cancel() // closes the sources opened so far
			return nil, err
		}
		sources = append(sources, ch)
	}
	merged := make(chan struct{}, 1)
	var forwarders sync.WaitGroup
	for _, src := range sources {
		forwarders.Add(1)
		wg.Go(func() {
			defer forwarders.Done()
			for range src {
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

// startWatch asks the backend to wake us when the lock changes. The watch
// lives until stopWatch; only its set-up is bounded by the op's timeout.
func (a *actor) startWatch() {
	w := a.e.backend.(backends.Watcher)
	wctx, wcancel := context.WithCancel(a.ctx)
	a.call(opWatch, a.cfg.TTL, func(ctx context.Context) result {
		stop := context.AfterFunc(ctx, wcancel)
		ch, err := watchAll(wctx, wcancel, w, a.e.slots, &a.wg)
		stop()
		if err != nil {
			wcancel()
		}
		return result{watch: ch, watchCancel: wcancel, err: err}
	})
}

// needWatch reports whether a watch should be set up before the next try:
// once a try has found the lock held, so that a candidate that wins at
// once never opens one (on Redis a watch is a connection). A candidate
// behind a strategy's gate watches from the start: it may wait without
// trying, and a release is what tells it to rank again.
func (a *actor) needWatch(now time.Time) bool {
	_, ok := a.e.backend.(backends.Watcher)
	return ok && (a.lost || a.gate != nil) && a.watch == nil && !now.Before(a.watchAt)
}

func (a *actor) watched(r result) {
	if r.err != nil {
		a.fail("watch", r.err)
		a.watchAt = time.Now().Add(a.backoff())
		return
	}
	a.watch, a.watchCancel = r.watch, r.watchCancel
	a.tryAt = time.Now() // a release before the watch was set up is not missed
}

// watchFired wakes the campaign when the lock may have been released; a
// closed watch is set up again after a pause, polling meanwhile.
func (a *actor) watchFired(ok bool) {
	if !ok {
		a.stopWatch()
		a.watchAt = time.Now().Add(a.cfg.RetryPause())
		return
	}
	if a.term == nil {
		a.tryAt = time.Now()
		if a.op != nil && a.op.kind == opAcquire {
			a.woken = true
		}
		if a.gate != nil {
			a.gate.fresh = false
		}
	}
}

func (a *actor) stopWatch() {
	if a.watchCancel != nil {
		a.watchCancel()
	}
	a.watch, a.watchCancel = nil, nil
}
