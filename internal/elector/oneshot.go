package elector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// Held is a lock taken by a one-shot run, on a shared Session or on a
// private one of its own.
type Held struct {
	on       *Session
	private  bool     // on was opened for the run, and is closed with it
	gen      uint64   // on's generation the lock was taken on
	names    []string // the names the run claimed on on
	sess     backends.Session
	name     string
	Slot     int          // the slot had, for a group
	Token    events.Token // the fencing token
	acquired time.Time
	Deadline time.Time // fn's deadline: the lease less the margin
}

// Lock is a one-shot run's try for one of names (a group's slots, or one
// lock), waiting up to cfg.Wait. On cfg.Session a run is an acquire and a
// release, two round trips, whose calls take their turns like a
// campaign's; a name that another campaign or run of the session already
// claims is skipped (both would be told they hold it, under one token).
// Without a Session the run opens a private session on b with its TTL
// (cfg.RunTTL), renewed only while it waits and closed after it. Lock
// tells the hooks how the try ended unless it failed (the caller's
// failure mode says why), and returns nil, nil when skipped.
func Lock(ctx context.Context, b backends.Backend, name string, names []string, cfg *Config) (*Held, error) {
	label := BackendLabel(b)
	h, err := lock(ctx, b, cfg.Session, names, cfg)
	switch {
	case err != nil: // the caller's failure mode says which reason
	case h == nil:
		cfg.Hooks.Try(name, label, Contention)
	default:
		cfg.Hooks.Try(name, label, NoReason)
	}
	return h, err
}

// lock is the retry loop of one-shot runs: it tries for one of names until
// it has one, the backend says it is held and the run may wait no more, or
// a call fails. Each call is bounded by the lease: a backend that hangs is
// a backend failure, for the failure mode to decide, not a wait forever.
func lock(ctx context.Context, b backends.Backend, s *Session, names []string, cfg *Config) (*Held, error) {
	start := time.Now()
	private := s == nil
	var cur shared
	var err error
	if private {
		s, err = openRun(ctx, b, cfg)
		if s != nil {
			cur = s.cur
		}
	} else {
		cur, err = s.await(ctx, cfg.RunTTL)
	}
	if err != nil {
		return nil, ctxOr(ctx, err)
	}
	if err := s.claim(names); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, nil // another campaign or run of this session wants it
	}
	if s.orphaned(names) {
		s.unclaim(names) // a release of ours is pending: the lock is not free
		return nil, nil
	}
	w := newWaiter(ctx, b, names, cfg, start)
	if !private {
		w.renewed = never // the session renews itself
	}
	defer w.stop()
	held := false // the backend has said another candidate holds the lock
	var doubt []string
	for {
		var slot int
		var tok events.Token
		err := s.inTurn(ctx, laneTake, cfg.RunTTL, func(ctx context.Context) (err error) {
			slot, tok, doubt, err = acquireAny(ctx, cur.sess, names, cfg.ID, doubt, 0)
			if err == nil {
				doubt = disownAll(ctx, cur.sess, doubt)
			}
			return err
		})
		if err == nil {
			h := &Held{on: s, private: private, gen: cur.gen, sess: cur.sess, name: names[slot], names: names, Slot: slot, Token: tok, acquired: time.Now()}
			return w.held(h)
		}
		held = held || errors.Is(err, backends.ErrHeld)
		if errors.Is(err, backends.ErrHeld) && w.watchIfDue(cur.sess) {
			continue
		}
		err = wrapBackend("acquire", err)
		if errors.Is(err, backends.ErrHeld) && w.wait() {
			if err = w.renew(cur.sess, false); err == nil {
				continue
			}
			err = wrapBackend("keep-alive", err)
		}
		h := &Held{on: s, private: private, sess: cur.sess, names: names}
		h.giveUp(ctx, doubt, cfg.RunTTL)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case held:
			// A failure after contention must never count as an outage, or
			// a fail-open run would run beside the holder.
			return nil, nil
		}
		return nil, err
	}
}

// openRun opens the private session of a one-shot run on b: its TTL is
// the lease, and nothing renews it but the run while it waits (the
// waiter, which keeps the start of its last renewal).
func openRun(ctx context.Context, b backends.Backend, cfg *Config) (*Session, error) {
	octx, cancel := context.WithTimeout(ctx, cfg.RunTTL)
	defer cancel()
	bs, err := b.Open(octx, cfg.ID, cfg.RunTTL)
	if err != nil {
		return nil, fmt.Errorf("campaign: open session: %w", err)
	}
	s := newSession(b, *cfg)
	s.cur = shared{sess: bs, gen: 1}
	return s, nil
}

// held returns h, just acquired, with fn's deadline: the lease less the
// margin from the start of the private session's last renewal, which is
// renewed first if that has come already (a slow Open or a long wait) so
// fn never starts with a spent lease; or, on a Session, from the acquire
// (the session's own deadline bounds it besides), however long the run
// waited for the lock.
func (w *waiter) held(h *Held) (*Held, error) {
	span := w.cfg.RunTTL - w.cfg.MarginFor(w.cfg.RunTTL)
	if !h.private {
		h.Deadline = h.acquired.Add(span)
		return h, nil
	}
	if h.Deadline = w.renewed.Add(span); h.Deadline.After(h.acquired) {
		return h, nil
	}
	if err := w.renew(h.sess, true); err != nil {
		h.giveUp(w.ctx, nil, w.cfg.RunTTL)
		return nil, ctxOr(w.ctx, wrapBackend("keep-alive", err))
	}
	h.Deadline = w.renewed.Add(span)
	return h, nil
}

// giveUp ends a run that did not keep the lock: a private session is
// closed, which frees whatever it holds; on a Session, which lives on, the
// locks in doubt are disowned (it would hold them for nobody) and the
// names given back.
func (h *Held) giveUp(ctx context.Context, doubt []string, limit time.Duration) {
	if h.private {
		closeSession(ctx, h.sess, limit)
		return
	}
	if len(doubt) > 0 {
		_ = h.on.release(ctx, laneFree, limit, func(ctx context.Context) error {
			disownAll(ctx, h.sess, doubt)
			return nil
		})
	}
	h.on.unclaim(h.names)
}

// Context returns fn's context: it ends at the run's deadline and, on a
// shared Session, when the session's deadline passes without a renewal.
// Call cancel once fn returned.
func (h *Held) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if h.private {
		return context.WithDeadline(parent, h.Deadline)
	}
	return h.bindOn(parent)
}

// Unlock releases the lock, keeping it held until the minimum hold has
// passed. A private session is closed, which alone frees the lock when
// there is no hold left; errors are logged, since the lease bounds the
// lock anyway. On a Session the names are given back, and a release that
// fails is left to the session, which retries it at its next renewal.
func (h *Held) Unlock(ctx context.Context, cfg *Config) {
	hold := max(cfg.MinHold-time.Since(h.acquired), 0)
	if !h.private {
		defer h.on.unclaim(h.names)
		err := h.on.release(ctx, laneFree, cfg.RunTTL, func(ctx context.Context) error {
			return h.sess.Release(ctx, h.name, h.Token, hold)
		})
		if err != nil && !errors.Is(err, backends.ErrNotHeld) && !errors.Is(err, backends.ErrSessionLost) {
			cfg.Logger.Warn("release failed; the session will retry it", "name", h.name, "token", h.Token, "err", err)
			h.on.orphan(h.name, h.Token, h.gen)
		}
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.RunTTL)
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

// bindOn returns fn's context for a lock held on a session: it ends at
// the run's deadline, or when the session's own deadline passes without a
// renewal, or the session was replaced by then, whichever comes first. A
// timer looks at the session at its deadline, and again at each later
// one while renewals move it on: no goroutine waits meanwhile.
func (h *Held) bindOn(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(parent, h.Deadline)
	s := h.on
	limit := s.cfg.TTL - s.cfg.MarginFor(s.cfg.TTL)
	var mu sync.Mutex // t, between its own firing and the caller's cancel
	var t *time.Timer
	follow := func() {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return // fn returned, or its deadline came: nothing to follow
		}
		cur, _ := s.state()
		left := time.Until(cur.renewed.Add(limit))
		if cur.gen != h.gen || cur.sess == nil || left <= 0 {
			cancel()
			return
		}
		t.Reset(left) // renewed since: look again at the new deadline
	}
	cur, _ := s.state()
	mu.Lock()
	t = time.AfterFunc(max(time.Until(cur.renewed.Add(limit)), 0), follow)
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		t.Stop()
		mu.Unlock()
		cancel()
	}
}
