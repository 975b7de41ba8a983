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

// LockOn is LockOnce on a live Session: no Open and no Close, so a run is
// an acquire and a release, two round trips. The calls take their turns on
// the session like a campaign's. A lock name that another campaign or run
// on the session already claims is skipped (both would be told they hold
// it, under one token). It returns nil, nil when skipped.
func LockOn(ctx context.Context, s *Session, name string, names []string, cfg *Config) (*Held, error) {
	label := BackendLabel(s.backend)
	cfg.Observer.Attempt(name, label)
	h, err := lockOn(ctx, s, names, cfg)
	switch {
	case err != nil:
	case h == nil:
		cfg.Observer.NotAcquired(name, label, Contention)
	default:
		cfg.Observer.Acquired(name, label)
	}
	return h, err
}

func lockOn(ctx context.Context, s *Session, names []string, cfg *Config) (*Held, error) {
	start := time.Now()
	cur, err := s.await(ctx, cfg.Lease)
	if err != nil {
		return nil, ctxOr(ctx, err)
	}
	if err := s.attach(names); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, err
		}
		return nil, nil // another campaign or run of this session wants it
	}
	if s.orphaned(names) {
		s.detach(names) // a release of ours is pending: the lock is not free
		return nil, nil
	}
	w := newWaiter(ctx, s.backend, names, cfg, start)
	w.renewed = never // the session renews itself
	defer w.stop()
	held := false
	var doubt []string
	for {
		var slot int
		var tok events.Token
		err := s.inTurn(ctx, laneTake, cfg.Lease, func(ctx context.Context) (err error) {
			slot, tok, doubt, err = acquireAny(ctx, cur.sess, names, s.cfg.ID, doubt, 0)
			if err == nil {
				doubt = disownAll(ctx, cur.sess, doubt)
			}
			return err
		})
		if err == nil {
			return &Held{on: s, gen: cur.gen, sess: cur.sess, name: names[slot], names: names, Slot: slot, Token: tok,
				acquired: time.Now(), Deadline: start.Add(cfg.Lease - cfg.MarginFor(cfg.Lease))}, nil
		}
		held = held || errors.Is(err, backends.ErrHeld)
		if errors.Is(err, backends.ErrHeld) && w.watchIfDue() {
			continue
		}
		if !errors.Is(err, backends.ErrHeld) || !w.wait() {
			s.disownAndDetach(ctx, cur, names, doubt, cfg.Lease)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case held:
				return nil, nil
			}
			return nil, wrapBackend("acquire", err)
		}
	}
}

// await returns the session's state once it has a backend session open,
// waiting at most limit (a backend that cannot open one is a failure) or
// until ctx ends. It returns ErrClosed once the session is closing.
func (s *Session) await(ctx context.Context, limit time.Duration) (shared, error) {
	var timer *time.Timer // made only if the run has to wait
	for {
		cur, changed := s.state()
		switch {
		case cur.closing:
			return cur, ErrClosed
		case cur.sess != nil:
			return cur, nil
		case timer == nil:
			timer = time.NewTimer(limit)
			defer timer.Stop()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return cur, ctx.Err()
		case <-timer.C:
			return cur, fmt.Errorf("campaign: the session has no backend session open after %v: %w", limit, backends.ErrUnavailable)
		}
	}
}

// inTurn runs f on the session when its turn in lane comes, bounded by
// timeout from then on, and by ctx throughout.
func (s *Session) inTurn(ctx context.Context, lane int, timeout time.Duration, f func(ctx context.Context) error) error {
	if err := s.calls.wait(ctx, lane); err != nil {
		return fmt.Errorf("%w: %w", backends.ErrUnavailable, err)
	}
	defer s.calls.done()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(cctx)
}

// disownAndDetach ends a run that did not get the lock: it disowns the
// locks in doubt (the session lives on, and would hold them for nobody)
// and gives the names back.
func (s *Session) disownAndDetach(ctx context.Context, cur shared, names, doubt []string, limit time.Duration) {
	if len(doubt) > 0 {
		_ = s.inTurn(context.WithoutCancel(ctx), laneFree, limit, func(ctx context.Context) error {
			disownAll(ctx, cur.sess, doubt)
			return nil
		})
	}
	s.detach(names)
}

// unlockOn releases a lock held on a session, keeping it held until hold
// has passed, and gives its names back. A release that fails is left to
// the session, which retries it at its next renewal.
func (h *Held) unlockOn(ctx context.Context, cfg *Config, hold time.Duration) {
	defer h.on.detach(h.names)
	err := h.on.inTurn(context.WithoutCancel(ctx), laneFree, cfg.Lease, func(ctx context.Context) error {
		return h.sess.Release(ctx, h.name, h.Token, hold)
	})
	if err != nil && !errors.Is(err, backends.ErrNotHeld) && !errors.Is(err, backends.ErrSessionLost) {
		cfg.Logger.Warn("release failed; the session will retry it", "name", h.name, "token", h.Token, "err", err)
		h.on.orphan(h.name, h.Token, h.gen)
	}
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
