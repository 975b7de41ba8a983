package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
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
// c.Run returns. A panic in fn goes on up to the caller once c has stopped
// and let the lock go.
//
// termCtx cannot stop a write fn has already decided on: a paused process
// (a GC pause, a stopped VM) writes when it wakes, its term long over. Fence
// fn's writes with elected.Token where they land: the backends' native
// fences (Backend.Fence in your etcd Txn or your PostgreSQL
// transaction, ...) or a fence.Guard in front of another resource refuse
// the writes of a term that ended.
func WhileLeader(ctx context.Context, c *Campaign, fn func(ctx context.Context, term events.Event) error) error {
	if c == nil || fn == nil {
		return fmt.Errorf("%w: nil campaign or function", ErrInvalid)
	}
	return elector.WhileLeader(ctx, c.e, fn)
}

// Every runs fn once per period across every candidate running Every on
// the same lock name: periods are windows aligned to multiples of period
// (on each node's clock), and the one candidate that gets the window's
// lock at its start keeps it until a safety margin before the window's
// end, so candidates whose clocks or schedules run late skip that window.
// A node more than half a period late for a window skips it by itself.
//
// Window k is claimed on the lock name/window-(k mod 2): the hold that
// marks a window taken may outlast the window (etcd frees a lease whole
// seconds after it was granted, and up to half a second late) without
// touching the next window, whose lock is the other one; tokens still
// increase from window to window on every backend of this module. Periods
// shorter than the backend can keep apart are refused with ErrInvalid:
// etcd's leases last at least 2 s, so 2 s there, and 100 ms elsewhere.
//
// fn's context ends with the lease (default: the period). Errors from fn
// are logged and the loop goes on; backend errors too. Every returns
// ctx.Err() when ctx ends, or an error for bad input. Windows follow the
// process's clock (time.Now).
func Every(ctx context.Context, b backends.Backend, name string, period time.Duration, fn func(ctx context.Context, token events.Token) error, opts ...Option) error {
	if period < elector.MinTTL {
		return fmt.Errorf("%w: period %v is shorter than %v", ErrInvalid, period, elector.MinTTL)
	}
	opts = append([]Option{ttl(period)}, opts...)
	cfg := elector.NewConfig(opts)
	if _, err := validateRun(ctx, &cfg, b, name, fn == nil, elector.ForEvery); err != nil {
		return err
	}
	if err := validate.Name(windowName(name, 0)); err != nil { // the caller's name plus "/window-k"
		return elector.Invalid(err)
	}
	if least := minPeriod(b); period < least {
		return fmt.Errorf("%w: period %v is shorter than the %s backend can keep windows apart: at least %v", ErrInvalid, period, elector.BackendLabel(b), least)
	}
	now := cfg.Now
	run := func(ctx context.Context, tok events.Token) (struct{}, error) { return struct{}{}, fn(ctx, tok) }
	for {
		w := now().Truncate(period).Add(period)
		if err := sleepUntil(ctx, w.Sub(now())); err != nil {
			return err
		}
		if late := now().Sub(w); late > period/2 {
			cfg.Logger.Info("late for the window; skipping it", "name", name, "window", w, "late", late)
			continue
		}
		end := w.Add(period - cfg.MarginFor(cfg.RunTTL))
		lock := windowName(name, w.UnixNano()/int64(period))
		res, err := runIfLeader(ctx, b, lock, run, elector.ForEvery, append(opts, minHold(max(end.Sub(now()), 0))))
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

// windowName is the lock that claims window k of Every on name.
func windowName(name string, k int64) string { return fmt.Sprintf("%s/window-%d", name, k&1) }

// minPeriod is the shortest period Every keeps windows apart with on b.
func minPeriod(b backends.Backend) time.Duration {
	if elector.BackendLabel(b) == "etcd" {
		return 2 * time.Second // leases of whole seconds, at least 2
	}
	return elector.MinTTL
}

// sleepUntil waits for d or until ctx ends.
func sleepUntil(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
