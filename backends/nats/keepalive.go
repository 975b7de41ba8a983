package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
)

// KeepAlive writes the session record again, conditioned on its last
// revision, with the TTL, and confirms every lock the session was
// granted, in one round trip whatever their number. A session whose
// losses are pushed (Losses) confirms them by the feed: once it has
// delivered the renewal, it has delivered every earlier write to the
// locks' records, and reported those after their takes. Otherwise, or if
// the feed did not cover a lock or lags, it reads every lock with one
// multi-key get per 1,024, sent beside the write (the server's work
// grows with them). A lock whose record changed since its take is
// reported by Lost. If the session record is gone (expired, or deleted),
// it returns backends.ErrSessionLost.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.check(ctx, "keep-alive"); err != nil {
		return err
	}
	s.keep.Lock()
	defer s.keep.Unlock()
	pushed := s.feedUp(ctx)
	held := s.ledger.Held()
	gen, first, running := s.b.hub.coverage()
	if pushed && running && len(held) > 0 && s.covered(held, gen, first) {
		rev, err := s.renew(ctx)
		if err != nil {
			return err
		}
		if s.b.hub.delivered(ctx, gen, rev, feedLag) {
			return nil
		}
		return s.confirm(ctx, held, gen, running)
	}
	var err, cerr error
	var wg sync.WaitGroup
	if len(held) > 0 {
		wg.Go(func() { cerr = s.confirm(ctx, held, gen, pushed && running) })
	}
	_, err = s.renew(ctx)
	wg.Wait()
	if err != nil {
		return err
	}
	return cerr
}

// feedLag bounds how long KeepAlive waits for the feed to deliver its
// renewal before it reads the locks instead.
const feedLag = 500 * time.Millisecond

// covered reports whether the feed gen, which first delivered the write
// at first, has delivered every write to the held locks' records since
// their takes: each was taken at or after first, or confirmed by a read
// sent while that feed ran.
func (s *session) covered(held map[string]events.Token, gen, first uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range held {
		if (first == 0 || uint64(t) < first) && (s.covGen != gen || t > s.covUpTo) {
			return false
		}
	}
	return true
}

// confirm reads the held locks' records (a multi-key get per 1,024) and
// reports those changed since their takes. If the feed gen ran before the
// read was sent, it covers them from then on.
func (s *session) confirm(ctx context.Context, held map[string]events.Token, gen uint64, running bool) error {
	keys := make([]string, 0, len(held))
	var upTo events.Token
	for name, t := range held {
		keys = append(keys, LockKey(name))
		upTo = max(upTo, t)
	}
	got, err := s.b.b.getMany(ctx, keys)
	if err != nil {
		return s.b.failed(ctx, "keep-alive", err)
	}
	for name, token := range held {
		e := got[LockKey(name)]
		if e.rev < uint64(token) { // a replica behind the take: ask the leader
			if e, err = s.b.b.getLeader(ctx, LockKey(name)); err != nil {
				return s.b.failed(ctx, "keep-alive", err)
			}
		}
		if rec, t, ok := decodeLock(e); !e.live || !ok || rec.Session != s.sid || t != token {
			s.ledger.Gone(name, token)
		}
	}
	if running {
		s.mu.Lock()
		s.covGen, s.covUpTo = gen, upTo
		s.mu.Unlock()
	}
	return nil
}

// renew writes the session record on its last revision. A write that
// finds another revision reads the record from the stream's leader: if
// it is still the session's (an earlier renewal applied whose answer was
// lost), it writes again on that revision; if it is gone, the session is
// lost.
func (s *session) renew(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	last := s.rev
	s.mu.Unlock()
	value := encode(sessionRecord{ID: s.id})
	for range 2 {
		rev, err := s.b.b.write(ctx, s.key, value, last, s.ttl)
		if err == nil {
			s.mu.Lock()
			s.rev = max(s.rev, rev)
			s.mu.Unlock()
			return rev, nil
		}
		if !errors.Is(err, errChanged) {
			return 0, s.b.failed(ctx, "keep-alive", err)
		}
		e, err := s.b.b.getLeader(ctx, s.key)
		if err != nil {
			return 0, s.b.failed(ctx, "keep-alive", err)
		}
		var rec sessionRecord
		if !e.live || json.Unmarshal(e.value, &rec) != nil || rec.ID != s.id {
			return 0, fmt.Errorf("%w: nats: session %s", backends.ErrSessionLost, s.sid)
		}
		last = e.rev
	}
	return 0, fmt.Errorf("%w: nats: keep-alive: session record %s keeps changing", backends.ErrUnavailable, s.sid)
}

// removeRecord removes the session record on its revision last; if it
// finds another, it reads the record from the stream's leader and, if it
// is still the session's (a renewal applied whose answer was lost),
// removes it on that revision.
func (s *session) removeRecord(ctx context.Context, last uint64) error {
	err := s.b.b.remove(ctx, s.key, last)
	if !errors.Is(err, errChanged) {
		return err
	}
	e, gerr := s.b.b.getLeader(ctx, s.key)
	if gerr != nil {
		return gerr
	}
	if !e.live {
		return err
	}
	return s.b.b.remove(ctx, s.key, e.rev)
}

// read returns the record key as the stream's leader has it, and whether
// the session's own record lives, read beside it: by a direct get, and if
// that finds it gone, by the leader too (a replica answering a direct
// get may lag behind the leader; a write relies on neither answer).
func (s *session) read(ctx context.Context, key string) (entry, bool, error) {
	var own entry
	var oerr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if own, oerr = s.b.b.get(ctx, s.key); oerr == nil && !own.live {
			own, oerr = s.b.b.getLeader(ctx, s.key)
		}
	})
	e, err := s.b.b.getLeader(ctx, key)
	wg.Wait()
	return e, own.live, errors.Join(err, oerr)
}

// feedUp starts the bucket's feed, if the session's losses are pushed
// and no feed runs (it ended, or never started), and reports whether they
// are pushed. A start that fails leaves KeepAlive to read the locks.
func (s *session) feedUp(ctx context.Context) bool {
	s.mu.Lock()
	pushed := s.pushed && !s.closed
	s.mu.Unlock()
	if pushed {
		_ = s.b.hub.start(ctx)
	}
	return pushed
}
