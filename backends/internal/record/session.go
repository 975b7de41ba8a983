package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/backends/internal/hub"
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

	mu      sync.Mutex
	closed  bool
	version uint64 // the session record's, as its last write returned
	// since is the start of the call that last wrote the session record:
	// the session is lost a TTL after it, whatever the store says later
	// (see expired).
	since   time.Time
	granted map[string]grant // by name
	push    bool             // Losses was called: the feed reports losses

	ledger ledger.Ledger // what Acquire granted, and what was found gone
}

// grant is what the session knows of a lock Acquire granted.
type grant struct {
	token   events.Token
	version uint64   // the record's, as the take wrote it (or Acquire found it)
	cover   *hub.Run // the feed's run that delivers every write after it; nil: none
	tied    bool     // no lease: it lives exactly while the session does
}

// grant records the lock l a write of Acquire returned (tied: with no
// lease) or found, the feed's run r confirmed before the read it followed
// (nil: none). A grant found again is kept as it was.
func (ss *session) grant(l Lock, r *hub.Run, tied bool) {
	ss.mu.Lock()
	if ss.granted == nil {
		ss.granted = map[string]grant{}
	}
	if g, ok := ss.granted[l.Name]; !ok || g.token != l.Token {
		ss.granted[l.Name] = grant{token: l.Token, version: l.Version, cover: r, tied: tied}
	}
	ss.mu.Unlock()
	ss.ledger.Granted(l.Name, l.Token)
}

// record returns the session record as the core knows it, and the locks
// it holds with the versions their grants wrote.
func (ss *session) record() (Session, []Lock) {
	held := ss.ledger.Held()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	locks := make([]Lock, 0, len(held))
	for name, tok := range held {
		locks = append(locks, Lock{Name: name, Token: tok, Version: ss.granted[name].version})
	}
	return Session{ID: ss.sid, Candidate: ss.id, TTL: ss.ttl, Version: ss.version}, locks
}

// ID returns the candidate ID the session was opened for.
func (ss *session) ID() string { return ss.id }

// Acquire reads the lock record and takes it if it is missing (CreateLock)
// or not live (SwapLock over the version read); a lock this session holds
// keeps its token and lease. A write that lost a race reads again; one
// that lost every race (a lock taken and freed by others all the while)
// is ErrHeld.
func (ss *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := ss.usable(); err != nil {
		return 0, err
	}
	if ss.expired(time.Now()) {
		return 0, ss.lost()
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if lease > 0 { // a store's per-key TTL has a range
		if err := validate.TTL("lease", lease); err != nil {
			return 0, err
		}
	}
	r := ss.feedUp(ctx) // before the take: the feed covers the lock from it on
	var got Lock
	tied := false // a write of Acquire's with no lease
	err := ss.s.retry(ctx, "acquire", func() (bool, error) {
		v, err := ss.s.d.ReadLock(ctx, name, ss.sid)
		switch {
		case err != nil:
			return false, err
		case !v.SelfAlive:
			return true, ss.lost()
		case live(v) && v.Lock.Session == ss.sid && !v.Lock.Hold:
			got = v.Lock
			return true, nil
		case live(v):
			return true, fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, v.Lock.Candidate)
		}
		l := Lock{Name: name, Session: ss.sid, Candidate: ss.id}
		if lease > 0 {
			l.Expires, l.TTL = v.Now.Add(lease), lease
		}
		tied = lease == 0
		if v.Lock.Version == 0 {
			got, err = ss.s.d.CreateLock(ctx, l)
		} else {
			got, err = ss.s.d.SwapLock(ctx, l, v.Lock.Version)
		}
		return err == nil, err
	})
	if errors.Is(err, errContended) { // contention, not a failure
		return 0, fmt.Errorf("%w: %q: %w", backends.ErrHeld, name, errContended)
	}
	if err != nil {
		return 0, err
	}
	got.Name = name
	ss.grant(got, r, tied)
	return got.Token, nil
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
	if hold > 0 {
		if err := validate.TTL("hold", hold); err != nil {
			return err
		}
	}
	ss.ledger.Released(name, token)
	ss.mu.Lock()
	g, ok := ss.granted[name]
	if ok = ok && g.token == token; ok {
		delete(ss.granted, name)
	}
	ss.mu.Unlock()
	if ok && g.tied && hold == 0 {
		return ss.free(ctx, name, token, g.version)
	}
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
			l.Hold, l.Expires, l.TTL = true, v.Now.Add(hold), hold
			_, err = ss.s.d.SwapLock(ctx, l, l.Version)
		}
		if err != nil {
			return false, err
		}
		ss.s.hub.changed(name, hold == 0 || !live(v))
		if !live(v) {
			return true, ss.notHeld(name, token, v)
		}
		return true, nil
	})
	return err
}

// free releases without a hold a lock granted under token with no lease,
// in one round trip: the removal of its record at the version its take
// wrote, beside a read for the session's own liveness (a removal of a
// record whose session had expired freed a lock that was free already).
func (ss *session) free(ctx context.Context, name string, token events.Token, version uint64) error {
	var (
		v    View
		rerr error
		wg   sync.WaitGroup
	)
	wg.Go(func() { v, rerr = ss.s.d.ReadLock(ctx, name, ss.sid) })
	err := ss.s.call(ctx, "release", func() error { return ss.s.d.DeleteLock(ctx, name, version) })
	wg.Wait()
	if err == nil {
		ss.s.hub.changed(name, true)
	}
	switch {
	case err != nil && !errors.Is(err, ErrConflict):
		return err
	case err != nil && rerr != nil: // changed since the take: another's now
		return ss.notHeld(name, token, View{SelfAlive: true})
	case err != nil, rerr == nil && !v.SelfAlive:
		return ss.notHeld(name, token, v)
	}
	return nil
}

// feedStop bounds how long Close waits for the feed it stopped: beyond
// nats.go's longest reset backoff (10 s) and one request's timeout.
const feedStop = 25 * time.Second

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
	start := time.Now()
	if ss.expired(start) {
		return ss.lost()
	}
	fr := ss.feedUp(ctx)
	if ss.confirmedByFeed(ctx, fr, start) {
		return nil
	}
	rec, held := ss.record()
	var r Renewal
	err := ss.s.call(ctx, "keep-alive", func() (err error) {
		r, err = ss.s.d.Renew(ctx, rec, held)
		return err
	})
	switch {
	case err != nil:
		return err
	case !r.Alive:
		return ss.lost()
	}
	ss.renewed(r.Version, start, fr, held)
	found := make(map[string]Lock, len(r.Locks))
	for _, l := range r.Locks {
		found[l.Name] = l
	}
	for _, g := range held {
		l, ok := found[g.Name]
		if !ok || l.Token != g.Token || l.Hold || !l.Expires.IsZero() && !l.Expires.After(r.Now) {
			ss.ledger.Gone(g.Name, g.Token)
		}
	}
	return nil
}

// Close deletes the session record and its locks (but holds), which wakes
// their waiters in this process at once. If it does not reach the store,
// the session is closed all the same, and its locks are freed when its
// record expires. A session whose losses were pushed, the last to use
// the Store's feed, then waits until the feed stopped, whatever ctx
// says (at most feedStop): a client caught reconnecting holds its feed
// for its backoff, and the caller closes the client after Close.
func (ss *session) Close(ctx context.Context) error {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()
	ended := ss.s.hub.h.Unkeep(ss)
	rec, held := ss.record()
	var freed []string
	err := ss.s.call(ctx, "close", func() (err error) {
		freed, err = ss.s.d.DeleteSession(ctx, rec, held)
		return err
	})
	for _, name := range freed {
		ss.s.hub.changed(name, true)
	}
	if ended != nil { // wait for the feed it stopped
		t := time.NewTimer(feedStop)
		select {
		case <-ended.Done():
		case <-t.C:
		}
		t.Stop()
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

// expired reports whether a TTL has passed at now since the start of the
// session record's last write. A store may keep a record past its TTL
// (Consul invalidates a session up to 2×TTL after its last renewal; a
// per-key TTL is swept late) and renew it then; but the campaigns on the
// session ended their terms at its deadline, and a session that lived
// again would hand a lock it still holds to a new term under the old
// term's token. It is lost instead.
func (ss *session) expired(now time.Time) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return now.Sub(ss.since) >= ss.ttl
}

func (ss *session) lost() error {
	return fmt.Errorf("%s: session of %s: %w", ss.s.name, ss.id, backends.ErrSessionLost)
}
