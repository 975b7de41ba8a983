package campaign

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Outcome tells the three ends of a one-shot run apart.
type Outcome int

const (
	// Elected: the lock was had and fn ran and returned nil.
	Elected Outcome = iota + 1
	// Skipped: another candidate holds the lock. This is normal, not an
	// error: the work is being done elsewhere.
	Skipped
	// ActionFailed: the lock was had, fn ran and returned an error.
	ActionFailed
)

// String returns "elected", "skipped" or "action-failed".
func (o Outcome) String() string {
	switch o {
	case Elected:
		return "elected"
	case Skipped:
		return "skipped"
	case ActionFailed:
		return "action-failed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is what RunIfLeader did.
type Result[T any] struct {
	// Outcome is Elected, Skipped or ActionFailed.
	Outcome Outcome
	// Value is what fn returned, when it ran.
	Value T
	// Token is the fencing token fn ran under; 0 when Skipped.
	Token events.Token
	// Err is fn's error when ActionFailed.
	Err error
}

// Ran reports whether fn ran (Elected or ActionFailed).
func (r Result[T]) Ran() bool { return r.Outcome == Elected || r.Outcome == ActionFailed }

// RunIfLeader runs fn once if the lock name can be had, and releases the
// lock after. fn gets the fencing token, and a context that ends when the
// lease (WithLease, default 30s) runs out, less the safety margin: after
// that the backend frees the lock whether or not this process lives.
//
// With the lock held elsewhere it returns a Skipped result at once, or
// after waiting up to WithWait. WithMinHold keeps the lock held after fn
// returned until that long after it was acquired.
//
// The error is non-nil only when the run could not be decided: bad input
// (ErrInvalid), a backend failure (wrapped; matches the errors of package
// backends), or ctx ending, which is returned as is (ctx.Err()), also when
// it ends while fn runs; the result then says whether fn ran.
func RunIfLeader[T any](ctx context.Context, b backends.Backend, name string, fn func(ctx context.Context, token events.Token) (T, error), opts ...Option) (Result[T], error) {
	cfg := newConfig(opts)
	full, err := cfg.validateRun(b, name, fn == nil)
	if err != nil {
		return Result[T]{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result[T]{}, err
	}
	h, err := lockOnce(ctx, b, full, &cfg)
	if err != nil || h == nil {
		return Result[T]{Outcome: Skipped}, err
	}
	fctx, cancel := context.WithDeadline(ctx, h.deadline)
	v, ferr := fn(fctx, h.token)
	cancel()
	h.unlock(ctx, &cfg)
	res := Result[T]{Outcome: Elected, Value: v, Token: h.token}
	if ferr != nil {
		res.Outcome, res.Err = ActionFailed, ferr
	}
	return res, ctx.Err()
}

// validateRun checks the arguments of a one-shot run and returns the full
// lock name.
func (c *config) validateRun(b backends.Backend, name string, nilFn bool) (string, error) {
	if b == nil || nilFn {
		return "", fmt.Errorf("%w: nil backend or function", ErrInvalid)
	}
	if err := c.validateOneShot(); err != nil {
		return "", err
	}
	full := c.fullName(name)
	if err := backends.ValidateName(full); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return full, nil
}

// held is a lock taken by a one-shot run.
type held struct {
	sess     backends.Session
	name     string
	token    events.Token
	acquired time.Time
	deadline time.Time
}

// lockOnce opens a session whose TTL is the lease and tries to acquire
// name, waiting up to cfg.wait. It returns nil, nil when skipped.
func lockOnce(ctx context.Context, b backends.Backend, name string, cfg *config) (*held, error) {
	start := time.Now()
	s, err := b.Open(ctx, cfg.id, cfg.lease)
	if err != nil {
		return nil, ctxOr(ctx, fmt.Errorf("campaign: open session: %w", err))
	}
	w := newWaiter(ctx, b, name, cfg, start)
	defer w.stop()
	for {
		tok, err := s.Acquire(ctx, name, 0)
		if err == nil {
			return w.held(s, name, tok)
		}
		if !errors.Is(err, backends.ErrHeld) || !w.wait() {
			closeSession(ctx, s, cfg.lease)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, backends.ErrHeld) {
				return nil, nil // skipped
			}
			return nil, wrapBackend("acquire", err)
		}
		if err := w.renew(s, false); err != nil {
			closeSession(ctx, s, cfg.lease)
			return nil, ctxOr(ctx, wrapBackend("keep-alive", err))
		}
	}
}

// held returns the lock just acquired, renewing the session first if the
// deadline it allows has already come (a slow Open or a long wait), so fn
// never starts with a spent lease.
func (w *waiter) held(s backends.Session, name string, tok events.Token) (*held, error) {
	h := &held{sess: s, name: name, token: tok, acquired: time.Now()}
	h.deadline = w.renewed.Add(w.cfg.lease - w.cfg.marginFor(w.cfg.lease))
	if h.deadline.After(h.acquired) {
		return h, nil
	}
	if err := w.renew(s, true); err != nil {
		closeSession(w.ctx, s, w.cfg.lease)
		return nil, ctxOr(w.ctx, wrapBackend("keep-alive", err))
	}
	h.deadline = w.renewed.Add(w.cfg.lease - w.cfg.marginFor(w.cfg.lease))
	return h, nil
}

// unlock releases the lock, keeping it held until the minimum hold has
// passed, and closes the session. Errors are logged: the lease bounds the
// lock anyway.
func (h *held) unlock(ctx context.Context, cfg *config) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.lease)
	defer cancel()
	hold := cfg.minHold - time.Since(h.acquired)
	if err := h.sess.Release(rctx, h.name, h.token, max(hold, 0)); err != nil {
		cfg.logger.Warn("release failed", "name", h.name, "token", h.token, "err", err)
	}
	if err := h.sess.Close(rctx); err != nil {
		cfg.logger.Warn("close session failed", "name", h.name, "err", err)
	}
}

func closeSession(ctx context.Context, s backends.Session, limit time.Duration) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	_ = s.Close(cctx)
}

// ctxOr returns ctx's error if it ended, else err.
func ctxOr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func wrapBackend(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("campaign: %s: %w", what, err)
}
