package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// session is one Open: a session record that KeepAlive renews, with the
// lock records naming it.
type session struct {
	s   *Store
	id  string // candidate ID
	sid string // session record's ID: 32 random hex digits
	ttl time.Duration

	mu     sync.Mutex
	closed bool

	ledger ledger.Ledger // what Acquire granted, and what KeepAlive found gone
}

// ID returns the candidate ID the session was opened for.
func (ss *session) ID() string { return ss.id }

// Acquire reads the lock record and takes it if it is missing (CreateLock)
// or not live (SwapLock over the version read); a lock this session holds
// keeps its token and lease. A write that lost a race reads again.
func (ss *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := ss.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	var tok events.Token
	err := ss.s.retry(ctx, "acquire", func() (bool, error) {
		v, err := ss.s.d.ReadLock(ctx, name, ss.sid)
		switch {
		case err != nil:
			return false, err
		case !v.SelfAlive:
			return true, ss.lost()
		case live(v) && v.Lock.Session == ss.sid && !v.Lock.Hold:
			tok = v.Lock.Token
			return true, nil
		case live(v):
			return true, fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, v.Lock.Candidate)
		}
		l := Lock{Name: name, Session: ss.sid, Candidate: ss.id}
		if lease > 0 {
			l.Expires = v.Now.Add(lease)
		}
		if v.Lock.Version == 0 {
			l, err = ss.s.d.CreateLock(ctx, l)
		} else {
			l, err = ss.s.d.SwapLock(ctx, l, v.Lock.Version)
		}
		tok = l.Token
		return err == nil, err
	})
	if err != nil {
		return 0, err
	}
	ss.ledger.Granted(name, tok)
	return tok, nil
}

// Release deletes the lock record (hold 0), or rewrites it as a hold, if
// this session holds it under token; a record of the session's that is no
// longer live is deleted all the same, and ErrNotHeld returned. Whatever
// its outcome, the session claims name under token no more.
func (ss *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := ss.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	ss.ledger.Released(name, token)
	var v View
	err := ss.s.retry(ctx, "release", func() (_ bool, err error) {
		v, err = ss.s.d.ReadLock(ctx, name, ss.sid)
		l := v.Lock
		switch {
		case err != nil:
			return false, err
		case l.Version == 0 || l.Session != ss.sid || l.Token != token || l.Hold:
			return true, ss.notHeld(name, token, v)
		case hold == 0 || !live(v):
			err = ss.s.d.DeleteLock(ctx, name, l.Version)
		default:
			l.Hold, l.Expires = true, v.Now.Add(hold)
			_, err = ss.s.d.SwapLock(ctx, l, l.Version)
		}
		if err != nil {
			return false, err
		}
		ss.s.hub.changed(name)
		if !live(v) {
			return true, ss.notHeld(name, token, v)
		}
		return true, nil
	})
	return err
}

func (ss *session) notHeld(name string, token events.Token, v View) error {
	if !v.SelfAlive {
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, ss.lost())
	}
	return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, ss.id)
}

// KeepAlive renews the session record and reads the lock records naming
// it, in one Renew whatever their number, and confirms the locks it was
// granted against them: one not found under its token, or no longer live,
// goes to Lost; the call still succeeds. A session that expired stays
// lost: ErrSessionLost.
func (ss *session) KeepAlive(ctx context.Context) error {
	if err := ss.usable(); err != nil {
		return err
	}
	granted := ss.ledger.Held()
	var (
		alive bool
		locks []Lock
		now   time.Time
	)
	err := ss.s.call(ctx, "keep-alive", func() (err error) {
		alive, locks, now, err = ss.s.d.Renew(ctx, ss.sid)
		return err
	})
	switch {
	case err != nil:
		return err
	case !alive:
		return ss.lost()
	}
	found := make(map[string]Lock, len(locks))
	for _, l := range locks {
		found[l.Name] = l
	}
	for name, tok := range granted {
		l, ok := found[name]
		if !ok || l.Token != tok || l.Hold || !l.Expires.IsZero() && !l.Expires.After(now) {
			ss.ledger.Gone(name, tok)
		}
	}
	return nil
}

// Close deletes the session record and its locks (but holds), which wakes
// their waiters in this process at once. If it does not reach the store,
// the session is closed all the same, and its locks are freed when its
// record expires.
func (ss *session) Close(ctx context.Context) error {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()
	names := make([]string, 0)
	for name := range ss.ledger.Held() {
		names = append(names, name)
	}
	var freed []string
	err := ss.s.call(ctx, "close", func() (err error) {
		freed, err = ss.s.d.DeleteSession(ctx, ss.sid, names)
		return err
	})
	for _, name := range freed {
		ss.s.hub.changed(name)
	}
	if errors.Is(err, backends.ErrSessionLost) {
		return nil
	}
	return err
}

// Lost returns the locks KeepAlive found gone; see backends.Session.
func (ss *session) Lost() map[string]events.Token { return ss.ledger.Lost() }

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (ss *session) usable() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return fmt.Errorf("%s: session of %s: %w", ss.s.name, ss.id, backends.ErrSessionClosed)
	}
	return nil
}

func (ss *session) lost() error {
	return fmt.Errorf("%s: session of %s: %w", ss.s.name, ss.id, backends.ErrSessionLost)
}
