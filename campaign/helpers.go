package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
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
	return elector.WhileLeader(ctx, c.e, fn)
}

// Every runs fn at most once per period across every candidate running
// Every on the same lock name: periods are windows aligned to multiples of
// period (on each node's clock), and the one candidate that gets the lock
// at the start of a window keeps it until just before the window's end, so
// candidates whose clocks or schedules run late skip that window. A node
// more than half a period late for a window skips it by itself.
//
// The window's minimum hold ends a safety margin before the next window;
// on backends whose leases are coarse (etcd counts whole seconds and
// expires up to about half a second late) short periods need a larger
// margin (WithSafetyMargin of a second or more), or windows are lost.
//
// fn's context ends with the lease (default: the period). Errors from fn
// are logged and the loop goes on; backend errors too. Every returns
// ctx.Err() when ctx ends, or an error for bad input.
func Every(ctx context.Context, b backends.Backend, name string, period time.Duration, fn func(ctx context.Context, token events.Token) error, opts ...Option) error {
	if period <= 0 {
		return fmt.Errorf("%w: period %v must be > 0", ErrInvalid, period)
	}
	opts = append([]Option{WithLease(period)}, opts...)
	cfg := elector.NewConfig(opts)
	if _, err := validateRun(ctx, &cfg, b, name, fn == nil); err != nil {
		return err
	}
	run := func(ctx context.Context, tok events.Token) (struct{}, error) { return struct{}{}, fn(ctx, tok) }
	for {
		w := time.Now().Truncate(period).Add(period)
		if err := sleepUntil(ctx, w); err != nil {
			return err
		}
		if late := time.Since(w); late > period/2 {
			cfg.Logger.Info("late for the window; skipping it", "name", name, "window", w, "late", late)
			continue
		}
		end := w.Add(period - cfg.MarginFor(cfg.Lease))
		res, err := RunIfLeader(ctx, b, name, run, append(opts, WithMinHold(max(time.Until(end), 0)))...)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			cfg.Logger.Warn("scheduled run failed", "name", name, "window", w, "err", err)
		case res.Outcome == ActionFailed:
			cfg.Logger.Warn("scheduled work failed", "name", name, "window", w, "token", res.Token, "err", res.Err)
		case res.Outcome == Skipped:
			cfg.Logger.Debug("window taken by another candidate", "name", name, "window", w)
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
