package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one candidate's liveness on a Backend. Every field after ttl
// is guarded by b.mu.
type session struct {
	b   *Backend
	id  string
	ttl time.Duration

	expires time.Time
	ended   bool // the backend forgot it: it expired, or Close reached it
	closed  bool // its owner called Close
	locks   map[string]*lock

	ledger ledger.Ledger // what it was granted, and lost behind its back
}

// alive reports whether the backend still knows s at now.
func (s *session) alive(now time.Time) bool {
	return !s.ended && now.Before(s.expires)
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// Acquire takes name if it is free or already held by s (then it returns
// the same token and leaves the lease as it was).
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return 0, err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	now := s.b.clock.Now()
	if err := s.check(now); err != nil {
		return 0, err
	}
	if l := s.b.lookup(name, now); l != nil {
		if l.sess == s {
			s.ledger.Granted(name, l.token)
			return l.token, nil
		}
		return 0, heldErr(name, l)
	}
	tok := s.b.take(s, name, lease, now)
	s.ledger.Granted(name, tok)
	return tok, nil
}

// KeepAlive extends s by its TTL from now, unless it already expired.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return err // never reached the backend: s is not extended
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	now := s.b.clock.Now()
	if err := s.check(now); err != nil {
		return err
	}
	s.expires = now.Add(s.ttl)
	for name, tok := range s.ledger.Held() {
		if l := s.b.lookup(name, now); l == nil || l.sess != s || l.token != tok {
			s.ledger.Gone(name, tok)
		}
	}
	return nil
}

// Lost returns the locks KeepAlive or Delete found gone; see
// backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }

// Losses tells of locks Delete took from the session; see
// backends.Session.
func (s *session) Losses() <-chan struct{} { return s.ledger.Losses() }

// Release gives up name held by s under token, at once or after hold.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return err
	}
	s.ledger.Released(name, token)
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	now := s.b.clock.Now()
	if err := s.check(now); err != nil {
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, err)
	}
	l := s.b.lookup(name, now)
	if l == nil || l.sess != s || l.token != token {
		return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
	}
	if hold == 0 {
		s.b.remove(name, l)
		return nil
	}
	delete(s.locks, name)
	l.sess, l.until = nil, now.Add(hold)
	s.b.signal(name)
	return nil
}

// Close ends s and frees its locks. If ctx is done or the call is
// partitioned, s is closed for its owner but the backend never hears of
// it, so its locks expire with the TTL.
func (s *session) Close(ctx context.Context) error {
	s.b.mu.Lock()
	closed := s.closed
	s.closed = true
	s.b.mu.Unlock()
	if closed {
		return nil
	}
	if err := s.b.reach(ctx, s.id); err != nil {
		return err
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.end()
	return nil
}

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.closedErr()
}

func (s *session) closedErr() error {
	if s.closed {
		return fmt.Errorf("memory: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

// check returns the error for a call of s arriving at now: closed, or
// lost (then it frees its locks). b.mu must be held.
func (s *session) check(now time.Time) error {
	if err := s.closedErr(); err != nil {
		return err
	}
	if !s.alive(now) {
		s.end()
		return fmt.Errorf("memory: session of %s expired at %v: %w", s.id, s.expires, backends.ErrSessionLost)
	}
	return nil
}

// end makes the backend forget s: its locks are freed and their watchers
// woken. Locks released with a hold are no longer s's and stay held.
// b.mu must be held.
func (s *session) end() {
	s.ended = true
	delete(s.b.open, s)
	for name, l := range s.locks {
		s.b.remove(name, l)
	}
}
