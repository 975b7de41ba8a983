package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/elector"
	"github.com/hustings/hustings/internal/validate"
)

// Outcome tells the three ends of a one-shot run apart.
type Outcome int

const (
	// Succeeded: the lock was had, fn ran and returned nil.
	Succeeded Outcome = iota + 1
	// Skipped: another candidate holds the lock. This is normal, not an
	// error: the work is being done elsewhere.
	Skipped
	// ActionFailed: the lock was had, fn ran and returned an error.
	ActionFailed
)

// String returns "succeeded", "skipped" or "action-failed".
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Skipped:
		return "skipped"
	case ActionFailed:
		return "action-failed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is what RunIfLeader did. The rule: once fn has run, the result
// says how it went (Succeeded: fn returned nil; ActionFailed: fn's error,
// which may be its context's) and RunIfLeader's error is nil, even if ctx
// ended meanwhile; RunIfLeader returns an error only when fn did not run
// and the run could not be decided (bad input, a backend failure, ctx
// ending first), and then the Result is the zero value.
type Result[T any] struct {
	// Outcome is Succeeded, Skipped or ActionFailed.
	Outcome Outcome
	// Value is what fn returned, when it ran.
	Value T
	// Slot is the group slot fn ran in (group.RunIfLeader); 0 otherwise.
	Slot int
	// Token is the fencing token fn ran under; 0 when Skipped, and when fn
	// ran without the lock (WithFailOpen).
	Token events.Token
	// Err is fn's error when ActionFailed; nil otherwise.
	Err error
}

// RunIfLeader runs fn once if the lock name can be had, and releases the
// lock after. fn gets the fencing token, and a context that ends when the
// run's TTL (WithTTL, default 30s) runs out, less the safety margin: after
// that the backend frees the lock whether or not this process lives. A
// write fn makes after a pause can land after that: fence it with the
// token where it lands (see WhileLeader and package fence).
//
// With the lock held elsewhere it returns a Skipped result at once, or
// after waiting up to WithWait. WithMinHold keeps the lock held after fn
// returned until that long after it was acquired.
//
// Each run opens a session of its own and closes it after. With
// WithSession(s) it runs on s instead: an acquire and a release, two
// round trips, taking their turns among s's other calls. The lock then
// lives as long as s does (not the lease): fn's context also ends when s's
// deadline passes without a renewal. A name that a campaign or another
// run on s already claims is Skipped (Contention); a campaign started on s
// for a name a run claims is refused (ErrInvalid), as two campaigns for
// one name on one session are: one session holds a lock under one token.
//
// The error is non-nil only when fn did not run and the run could not be
// decided: bad input (ErrInvalid), a backend failure (wrapped; matches the
// errors of package backends), or ctx ending before fn ran, returned as is
// (ctx.Err()). Once fn ran, the Result says how (see Result) and the error
// is nil. A panic in fn goes on up to the caller once the lock is let go.
func RunIfLeader[T any](ctx context.Context, b backends.Backend, name string, fn func(ctx context.Context, token events.Token) (T, error), opts ...Option) (Result[T], error) {
	return runIfLeader(ctx, b, name, fn, elector.ForRun, opts)
}

// runIfLeader is RunIfLeader for entry (RunIfLeader, or Every's runs).
func runIfLeader[T any](ctx context.Context, b backends.Backend, name string, fn func(ctx context.Context, token events.Token) (T, error), entry elector.Use, opts []Option) (res Result[T], err error) {
	cfg := elector.NewConfig(opts)
	names, err := validateRun(ctx, &cfg, b, name, fn == nil, entry)
	if err != nil {
		return Result[T]{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result[T]{}, err
	}
	label := elector.BackendLabel(b)
	hook := cfg.Hooks.Run(ctx, name, label, cfg.ID)
	defer func() { hook.Ended(outcomeOf(res.Outcome, err), cmp.Or(err, res.Err)) }()
	ctx = hook.Context(ctx)
	h, err := elector.Lock(ctx, b, name, names, &cfg)
	switch {
	case h == nil && err == nil:
		return Result[T]{Outcome: Skipped}, nil
	case err != nil:
		return onFailure(ctx, &cfg, name, label, hook, fn, err)
	}
	fctx, cancel := h.Context(ctx)
	worked := hook.Work(h.Slot, h.Token, h.Deadline)
	// Deferred, so that a panic in fn, which goes on up to the caller,
	// still ends the work and lets the lock go.
	defer h.Unlock(ctx, &cfg)
	defer cancel()
	defer worked()
	v, ferr := fn(fctx, h.Token)
	return ran(v, ferr, h.Slot, h.Token), nil
}

// ran is the Result of a run whose fn returned v and ferr, in slot under
// token (0, 0 without the lock).
func ran[T any](v T, ferr error, slot int, token events.Token) Result[T] {
	if ferr != nil {
		return Result[T]{Outcome: ActionFailed, Value: v, Slot: slot, Token: token, Err: ferr}
	}
	return Result[T]{Outcome: Succeeded, Value: v, Slot: slot, Token: token}
}

// outcomeOf names a run's outcome for its hooks: "" when it returned err,
// or had none (fn panicked).
func outcomeOf(o Outcome, err error) string {
	if err != nil || o == 0 {
		return ""
	}
	return o.String()
}

// onFailure applies the failure mode to a backend error. Context errors and
// invalid input are returned as they are, whatever the mode.
func onFailure[T any](ctx context.Context, cfg *elector.Config, name, label string, hook elector.RunHook, fn func(context.Context, events.Token) (T, error), err error) (Result[T], error) {
	if cerr := ctx.Err(); cerr != nil {
		cfg.Hooks.Try(name, label, elector.Canceled)
		return Result[T]{}, cerr
	}
	if errors.Is(err, backends.ErrInvalid) {
		cfg.Hooks.Try(name, label, elector.InvalidInput)
		return Result[T]{}, err
	}
	if !cfg.FailOpen {
		cfg.Hooks.Try(name, label, elector.BackendError)
		return Result[T]{}, err
	}
	cfg.Hooks.Try(name, label, elector.FailOpenForced)
	cfg.Logger.Warn("backend failed; running without the lock", "id", cfg.ID, "err", err)
	fctx, cancel := context.WithTimeout(ctx, cfg.RunTTL-cfg.MarginFor(cfg.RunTTL))
	defer cancel()
	deadline, _ := fctx.Deadline()
	defer hook.Work(0, 0, deadline)() // no lock: slot 0, token 0
	v, ferr := fn(fctx, 0)
	return ran(v, ferr, 0, 0), nil
}

// validateRun checks the arguments of a one-shot run and returns the
// lock names it may take: the name itself, or a group's slots.
func validateRun(ctx context.Context, c *elector.Config, b backends.Backend, name string, nilFn bool, entry elector.Use) ([]string, error) {
	if err := errors.Join(elector.CheckContext(ctx), elector.CheckBackend(b), c.Refuse(entry)); err != nil {
		return nil, err
	}
	if nilFn {
		return nil, fmt.Errorf("%w: nil function", ErrInvalid)
	}
	if err := c.UseSession(b); err != nil {
		return nil, err
	}
	if err := c.ValidateOneShot(); err != nil {
		return nil, err
	}
	if err := validate.Name(name); err != nil {
		return nil, elector.Invalid(err)
	}
	names := elector.SlotNames(name, c.Slots)
	if len(names) > 1 {
		for _, n := range names {
			if err := validate.Name(n); err != nil {
				return nil, elector.Invalid(err)
			}
		}
	}
	return names, nil
}
