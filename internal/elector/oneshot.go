package elector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Held is a lock taken by a one-shot run, on a session of its own or on a
// shared Session.
type Held struct {
	on       *Session // the shared Session, nil if the run opened its own
	gen      uint64   // on's generation the lock was taken on
	names    []string // the names the run claimed on on
	sess     backends.Session
	name     string
	Slot     int          // the slot had, for a group
	Token    events.Token // the fencing token
	acquired time.Time
	Deadline time.Time // fn's deadline: the lease less the margin
}

// LockOnce opens a session whose TTL is the lease and tries to acquire one
// of names (a group's slots, or one lock), waiting up to cfg.Wait. It
// returns nil, nil when skipped.
func LockOnce(ctx context.Context, b backends.Backend, name string, names []string, cfg *Config) (*Held, error) {
	label := BackendLabel(b)
	cfg.Observer.Attempt(name, label)
	h, err := lockOnce(ctx, b, names, cfg)
	switch {
	case err != nil: // the caller's failure mode says which reason
	case h == nil:
		cfg.Observer.NotAcquired(name, label, Contention)
	default:
		cfg.Observer.Acquired(name, label)
	}
	return h, err
}

func lockOnce(ctx context.Context, b backends.Backend, names []string, cfg *Config) (*Held, error) {
	start := time.Now()
	// Each call is bounded by the lease: a backend that hangs is a backend
	// failure, for the failure mode to decide, not a wait forever.
	octx, cancel := context.WithTimeout(ctx, cfg.Lease)
	s, err := b.Open(octx, cfg.ID, cfg.Lease)
	cancel()
	if err != nil {
		return nil, ctxOr(ctx, fmt.Errorf("campaign: open session: %w", err))
	}
	w := newWaiter(ctx, b, names, cfg, start)
	defer w.stop()
	held := false // the backend has said another candidate holds the lock
	var doubt []string
	for {
		actx, cancel := context.WithTimeout(ctx, cfg.Lease)
		slot, tok, left, err := acquireAny(actx, s, names, cfg.ID, doubt, 0)
		doubt = left
		if err == nil {
			disownAll(actx, s, doubt)
			cancel()
			return w.held(s, names[slot], slot, tok)
		}
		cancel()
		held = held || errors.Is(err, backends.ErrHeld)
		if errors.Is(err, backends.ErrHeld) && w.watchIfDue() {
			continue
		}
		if !errors.Is(err, backends.ErrHeld) || !w.wait() {
			return contended(ctx, s, cfg, held, wrapBackend("acquire", err))
		}
		if err := w.renew(s, false); err != nil {
			return contended(ctx, s, cfg, held, wrapBackend("keep-alive", err))
		}
	}
}

// contended ends a try that did not get the lock: ctx's error if it ended;
// a skip if the backend said the lock is held, even when a later call
// failed (a failure after contention must never count as an outage, or a
// fail-open run would run beside the holder); else the backend's error.
func contended(ctx context.Context, s backends.Session, cfg *Config, held bool, err error) (*Held, error) {
	closeSession(ctx, s, cfg.Lease)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case held:
		return nil, nil
	}
	return nil, err
}

// held returns the lock just acquired, renewing the session first if the
// deadline it allows has already come (a slow Open or a long wait), so fn
// never starts with a spent lease.
func (w *waiter) held(s backends.Session, name string, slot int, tok events.Token) (*Held, error) {
	h := &Held{sess: s, name: name, Slot: slot, Token: tok, acquired: time.Now()}
	h.Deadline = w.renewed.Add(w.cfg.Lease - w.cfg.MarginFor(w.cfg.Lease))
	if h.Deadline.After(h.acquired) {
		return h, nil
	}
	if err := w.renew(s, true); err != nil {
		closeSession(w.ctx, s, w.cfg.Lease)
		return nil, ctxOr(w.ctx, wrapBackend("keep-alive", err))
	}
	h.Deadline = w.renewed.Add(w.cfg.Lease - w.cfg.MarginFor(w.cfg.Lease))
	return h, nil
}

// Context returns fn's context: it ends at the run's deadline and, on a
// shared Session, when the session's deadline passes without a renewal.
// Call cancel once fn returned.
func (h *Held) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if h.on != nil {
		return h.bindOn(parent)
	}
	return context.WithDeadline(parent, h.Deadline)
}

// Unlock releases the lock, keeping it held until the minimum hold has
// passed, and closes the session the run opened (which alone frees the
// lock when there is no hold left). Errors are logged: the
// lease bounds the lock anyway (on a shared Session, the session retries
// the release at its next renewal).
func (h *Held) Unlock(ctx context.Context, cfg *Config) {
	hold := max(cfg.MinHold-time.Since(h.acquired), 0)
	if h.on != nil {
		h.unlockOn(ctx, cfg, hold)
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Lease)
	defer cancel()
	if hold > 0 {
		// Close would free the lock at once: release it with its hold
		// first. Without one, Close alone frees it (and wakes its
		// waiters), a round trip less.
		if err := h.sess.Release(rctx, h.name, h.Token, hold); err != nil {
			cfg.Logger.Warn("release failed", "name", h.name, "token", h.Token, "err", err)
		}
	}
	if err := h.sess.Close(rctx); err != nil {
		cfg.Logger.Warn("close session failed", "name", h.name, "err", err)
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
