package campaign

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// WhileLeader runs c and calls fn(termCtx, elected) for each term, in the
// calling goroutine. termCtx is cancelled the moment the term ends (Revoked
// is published at the same time). A graceful stop (Resign, Close, ctx
// ending) releases the lock only after fn returned, bounded by the grace
// period, so the next leader does not start while this one still works.
//
// If fn returns an error while its term is still in force, the error is
// logged and the term resigned, so another candidate can try. If fn returns
// nil early, the term stays in force until it ends. WhileLeader returns what
// c.Run returns.
func WhileLeader(ctx context.Context, c *Campaign, fn func(ctx context.Context, term events.Event) error) error {
	if c == nil || fn == nil {
		return fmt.Errorf("%w: nil campaign or function", ErrInvalid)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	runErr := make(chan error, 1)
	wg.Go(func() { runErr <- c.Run(ctx) })
	var last events.Token // the term fn last ran for
	for {
		select {
		case err := <-runErr:
			return err
		case <-c.elected:
		}
		tctx, e, done, ok := c.Term(0)
		if !ok || e.Token == last {
			if ok {
				done()
			}
			continue // the term ended before we got to it, or fn ran for it
		}
		last = e.Token
		err := fn(tctx, e)
		done()
		if err != nil && tctx.Err() == nil {
			c.cfg.logger.Warn("work failed; resigning", "name", c.name, "token", e.Token, "err", err)
			_ = c.resign(ctx, e.Token)
		}
	}
}

// Every runs fn at most once per period across every candidate running
// Every on the same lock name: periods are windows aligned to multiples of
// period (on each node's clock), and the one candidate that gets the lock
// at the start of a window keeps it until just before the window's end, so
// candidates whose clocks or schedules run late skip that window. A node
// more than half a period late for a window skips it by itself.
//
// fn's context ends with the lease (default: the period). Errors from fn
// are logged and the loop goes on; backend errors too. Every returns
// ctx.Err() when ctx ends, or an error for bad input.
func Every(ctx context.Context, b backends.Backend, name string, period time.Duration, fn func(ctx context.Context, token events.Token) error, opts ...Option) error {
	if period <= 0 {
		return fmt.Errorf("%w: period %v must be > 0", ErrInvalid, period)
	}
	opts = append([]Option{WithLease(period)}, opts...)
	cfg := newConfig(opts)
	if _, err := cfg.validateRun(b, name, fn == nil); err != nil {
		return err
	}
	run := func(ctx context.Context, tok events.Token) (struct{}, error) { return struct{}{}, fn(ctx, tok) }
	for {
		w := time.Now().Truncate(period).Add(period)
		if err := sleepUntil(ctx, w); err != nil {
			return err
		}
		if late := time.Since(w); late > period/2 {
			cfg.logger.Info("late for the window; skipping it", "name", name, "window", w, "late", late)
			continue
		}
		end := w.Add(period - cfg.marginFor(cfg.lease))
		res, err := RunIfLeader(ctx, b, name, run, append(opts, WithMinHold(max(time.Until(end), 0)))...)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			cfg.logger.Warn("scheduled run failed", "name", name, "window", w, "err", err)
		case res.Outcome == ActionFailed:
			cfg.logger.Warn("scheduled work failed", "name", name, "window", w, "token", res.Token, "err", res.Err)
		case res.Outcome == Skipped:
			cfg.logger.Debug("window taken by another candidate", "name", name, "window", w)
		}
	}
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
