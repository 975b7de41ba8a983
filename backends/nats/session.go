package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

var (
	_ backends.Session      = (*session)(nil)
	_ backends.LossNotifier = (*session)(nil)
	_ backends.Registrar    = (*session)(nil)
)

// closeWrites bounds the writes Close has in flight at once.
const closeWrites = 64

// session is one Open: the record session.<sid>, which the server
// removes ttl (in whole seconds, rounded up) after its last write, and
// the lock records that name it.
type session struct {
	b   *Backend
	id  string // candidate ID
	sid string // session ID: 32 random hex digits
	key string // session.<sid>
	ttl time.Duration

	mu      sync.Mutex
	rev     uint64 // the session record's last revision
	closed  bool
	groups  map[string]bool  // registry groups it may have an entry in
	grants  map[string]grant // by lock key: the last grant of every lock
	pushed  bool             // Losses was called: the hub reports losses
	covGen  uint64           // the feed that covers the locks granted up to covUpTo
	covUpTo events.Token
	keep    sync.Mutex // one KeepAlive at a time

	ledger ledger.Ledger // what Acquire granted, and what was found gone
}

// Open starts a session for candidate id: a new record that the server
// removes ttl after the write, rounded up to whole seconds (the unit of
// JetStream's per-message TTL), unless KeepAlive writes it again. One
// round trip.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if err := b.ready(ctx, "open"); err != nil {
		return nil, err
	}
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails
	s := &session{b: b, id: id, sid: hex.EncodeToString(r[:]), ttl: ttl}
	s.key = sessionPrefix + s.sid
	rev, err := b.b.write(ctx, s.key, encode(sessionRecord{ID: id}), 0, ttl)
	if err != nil {
		return nil, b.failed(ctx, "open", err)
	}
	s.rev = rev
	return s, nil
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// check returns the error of a call that must not be sent.
func (s *session) check(ctx context.Context, op string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: nats: %s", backends.ErrSessionClosed, op)
	}
	return s.b.ready(ctx, op)
}

// Acquire takes the lock name if it is free, or returns the token this
// session holds it under. It reads the lock record and the session's own
// in one request; a lock another live session holds is ErrHeld without
// a write. A free lock (no record, a marker, or a record whose session
// the stream's leader no longer has) is taken by a write conditioned on
// the revision read; the token is that write's revision. A lease > 0 is
// the record's TTL (whole seconds, rounded up).
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if lease > 0 {
		if err := validate.TTL("lease", lease); err != nil {
			return 0, err
		}
	}
	if err := s.check(ctx, "acquire"); err != nil {
		return 0, err
	}
	key := LockKey(name)
	s.feedUp(ctx) // before the take: the feed covers the lock from it on
	e, alive, err := s.read(ctx, key)
	if err != nil {
		return 0, s.b.failed(ctx, "acquire", err)
	}
	if !alive {
		return 0, fmt.Errorf("%w: nats: acquire %q", backends.ErrSessionLost, name)
	}
	if rec, token, ok := decodeLock(e); e.live && ok && rec.Session == s.sid {
		s.granted(key, name, token) // its own, maybe an acquire whose answer was lost
		return token, nil
	}
	h, err := s.b.judge(ctx, e, true)
	if err != nil {
		return 0, s.b.failed(ctx, "acquire", err)
	}
	if !h.free {
		return 0, fmt.Errorf("%w: nats: %q held by %s", backends.ErrHeld, name, h.rec.ID)
	}
	rev, err := s.b.b.write(ctx, key, encode(lockRecord{Session: s.sid, ID: s.id}), h.rev, lease)
	if errors.Is(err, errChanged) {
		return 0, fmt.Errorf("%w: nats: %q taken meanwhile", backends.ErrHeld, name)
	}
	if err != nil {
		return 0, s.b.failed(ctx, "acquire", err)
	}
	s.granted(key, name, events.Token(rev))
	return events.Token(rev), nil
}

// grant is a lock Acquire granted: its name and token.
type grant struct {
	name  string
	token events.Token
}

// granted records a lock the session holds under token.
func (s *session) granted(key, name string, token events.Token) {
	s.mu.Lock()
	if s.grants == nil {
		s.grants = map[string]grant{}
	}
	s.grants[key] = grant{name, token}
	s.mu.Unlock()
	s.ledger.Granted(name, token)
	// A write after the take that the feed delivered before the grant was
	// in the ledger: the feed's report found nothing to mark.
	if rev := s.b.hub.lastRev(key); rev > uint64(token) {
		s.ledger.Gone(name, token)
	}
}

// changed is the feed's report of a write at rev to the lock record key:
// a lock the session holds under a token below rev was changed behind its
// back (the session's own releases leave the ledger before they write).
func (s *session) changed(key string, rev events.Token) {
	s.mu.Lock()
	g, ok := s.grants[key]
	s.mu.Unlock()
	if ok {
		s.ledger.GoneAt(g.name, rev)
	}
}

// ended is the feed's report that the session record is gone: every lock
// is, with it.
func (s *session) ended() {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	for name, token := range s.ledger.Held() {
		s.ledger.Gone(name, token)
	}
}

// Lost returns the locks found gone while the session lives; see
// backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }

// Losses returns the channel signalled when Lost gains a lock: the
// bucket's feed (see Backend.Watch) reports any write to a lock record
// after the write that took it, and the end of the session's own record.
// The first call joins the session to the feed, which the next Acquire or
// KeepAlive starts if none runs; Close leaves it.
func (s *session) Losses() <-chan struct{} {
	ch := s.ledger.Losses()
	s.mu.Lock()
	first := !s.pushed && !s.closed
	s.pushed = true
	s.mu.Unlock()
	if first {
		s.b.hub.join(s)
	}
	return ch
}

// Release gives up the lock name held under token. Without a hold, a
// lock this session was granted under token is freed in one round trip:
// its record removed, conditioned on the revision its take wrote, beside
// a read of the session record. Otherwise it reads the lock record and
// the session's, then removes the record (or, with hold > 0, writes it
// again as held by nobody alive, with hold as its TTL), conditioned on
// the revision read: two round trips.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	if hold > 0 {
		if err := validate.TTL("hold", hold); err != nil {
			return err
		}
	}
	if err := s.check(ctx, "release"); err != nil {
		return err
	}
	key := LockKey(name)
	if hold == 0 && s.grantedAs(key, token) {
		return s.free(ctx, name, key, token)
	}
	e, alive, err := s.read(ctx, key)
	if err != nil {
		return s.b.failed(ctx, "release", err)
	}
	rec, t, ok := decodeLock(e)
	switch {
	case !alive:
		s.ledger.Released(name, token)
		return fmt.Errorf("%w: nats: release %q: %w", backends.ErrNotHeld, name, backends.ErrSessionLost)
	case !e.live || !ok || rec.Session != s.sid || t != token:
		s.ledger.Released(name, token)
		return fmt.Errorf("%w: nats: %q under token %d", backends.ErrNotHeld, name, token)
	}
	s.ledger.Released(name, token) // before the write, which the feed reports
	if hold > 0 {
		_, err = s.b.b.write(ctx, key, encode(lockRecord{ID: s.id, Token: token}), e.rev, hold)
	} else {
		err = s.b.b.remove(ctx, key, e.rev)
	}
	if errors.Is(err, errChanged) {
		return fmt.Errorf("%w: nats: %q changed meanwhile", backends.ErrNotHeld, name)
	}
	if err != nil {
		return s.b.failed(ctx, "release", err)
	}
	return nil
}

// grantedAs reports whether Acquire granted the lock key under token.
func (s *session) grantedAs(key string, token events.Token) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants[key].token == token
}

// free releases a lock granted under token without a hold, in one round
// trip: the removal of its record on the revision its take wrote (which
// is the session's if the record is unchanged) and a read of the session
// record, sent together. If the session is gone, the removal freed a
// lock that was free already; it reports ErrNotHeld.
func (s *session) free(ctx context.Context, name, key string, token events.Token) error {
	var se entry
	var serr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if se, serr = s.b.b.get(ctx, s.key); serr == nil && !se.live {
			se, serr = s.b.b.getLeader(ctx, s.key) // a replica may lag
		}
	})
	s.ledger.Released(name, token) // before the write, which the feed reports
	err := s.b.b.remove(ctx, key, uint64(token))
	wg.Wait()
	switch {
	case serr == nil && !se.live:
		return fmt.Errorf("%w: nats: release %q: %w", backends.ErrNotHeld, name, backends.ErrSessionLost)
	case errors.Is(err, errChanged):
		return fmt.Errorf("%w: nats: %q under token %d", backends.ErrNotHeld, name, token)
	case err != nil:
		return s.b.failed(ctx, "release", err)
	}
	return nil
}

// Close removes the session record, the lock records it holds (each
// conditioned on the revision it was taken at) and its registry entries,
// all at once. It returns backends.ErrSessionLost if the session record
// was gone already. Locks released with a hold stay until their hold
// ends.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	last := s.rev
	groups := slices.Collect(maps.Keys(s.groups))
	s.mu.Unlock()
	s.b.hub.leave(s)
	if err := s.b.ready(ctx, "close"); err != nil {
		return err
	}
	type removal struct {
		key string
		rev uint64 // 0: whatever its revision
	}
	var rs []removal
	for name, token := range s.ledger.Held() {
		rs = append(rs, removal{LockKey(name), uint64(token)})
		s.ledger.Released(name, token)
	}
	for _, g := range groups {
		rs = append(rs, removal{memberPrefix + keyOf(g) + "." + s.sid, 0})
	}
	errs := make([]error, len(rs))
	sem := make(chan struct{}, closeWrites)
	var wg sync.WaitGroup
	for i, r := range rs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.b.b.remove(ctx, r.key, r.rev)
		})
	}
	err := s.removeRecord(ctx, last)
	wg.Wait()
	if errors.Is(err, errChanged) {
		return fmt.Errorf("%w: nats: close: session %s", backends.ErrSessionLost, s.sid)
	}
	if err != nil {
		return s.b.failed(ctx, "close", err)
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, errChanged) {
			return s.b.failed(ctx, "close", e)
		}
	}
	return nil
}
