package elector

import (
	"context"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
)

// waiter paces the retries of a one-shot run that may wait for a held
// lock: it is woken by the backend's watch when there is one, and polls at
// the retry interval otherwise.
type waiter struct {
	ctx     context.Context
	cfg     *Config
	until   time.Time // give up after this
	renewed time.Time // start of the session's last Open or KeepAlive
	watch   <-chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the watch's forwarders, for several names
}

// newWaiter sets up the watch before the first try, so that no release
// between a try and the wait is missed.
func newWaiter(ctx context.Context, b backends.Backend, names []string, cfg *Config, start time.Time) *waiter {
	w := &waiter{ctx: ctx, cfg: cfg, until: start.Add(cfg.Wait), renewed: start}
	if wb, ok := b.(backends.Watcher); ok && cfg.Wait > 0 {
		wctx, cancel := context.WithCancel(ctx)
		if ch, err := watchAll(wctx, cancel, wb, names, &w.wg); err == nil {
			w.watch, w.cancel = ch, cancel
		} else {
			cancel()
		}
	}
	return w
}

// wait blocks until the next try is due. It returns false when the wait is
// over (or there was none) or ctx ended.
func (w *waiter) wait() bool {
	left := time.Until(w.until)
	if left <= 0 {
		return false
	}
	// Wake in time to renew the session before half its lease is gone.
	renewIn := max(time.Until(w.renewed.Add(w.cfg.Lease/2)), 0)
	t := time.NewTimer(min(left, w.cfg.RetryPause(), renewIn))
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case _, ok := <-w.watch:
		if !ok {
			w.watch = nil
		}
	case <-t.C:
	}
	return true
}

// renew keeps the session alive when half its lease has gone by while
// waiting, or always if forced.
func (w *waiter) renew(s backends.Session, force bool) error {
	if !force && time.Since(w.renewed) < w.cfg.Lease/2 {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.Lease) // a hung backend is a failure
	defer cancel()
	if err := s.KeepAlive(ctx); err != nil {
		return err
	}
	w.renewed = start
	return nil
}

func (w *waiter) stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}
