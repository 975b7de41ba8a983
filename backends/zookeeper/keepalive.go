package zookeeper

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hustings/hustings/events"
)

// Bounds of one keep-alive transaction, far below the server's 1 MB
// request limit (jute.maxbuffer), past which it would drop the connection:
// at most checkBatch lock checks, whose paths take at most checkBytes
// (1,000 checks of the longest names, escaped, would take about 0.8 MB).
const (
	checkBatch = 1000
	checkBytes = 512 << 10
)

// KeepAlive renews the session node and confirms that the node of every
// lock an Acquire granted the session still exists, in one transaction
// (a ZooKeeper multi of the node's Set and one check per lock): one round
// trip for up to 1,000 locks; each further 1,000 are checked after the
// renewal, in transactions sent together (16 in flight). A multi is all or nothing and names only
// the first op that failed, so each lock found gone costs one more round
// trip: the transaction runs again without it, with the checks that came
// after it. Locks found gone, and those whose lease has ended, are held
// no more: Lost reports them, and the call still succeeds.
//
// It fails with ErrUnavailable while the conn has no session, or if the
// server does not answer, then possibly after renewing the session but
// before confirming every lock; and with ErrSessionLost once the TTL has
// passed since the start of the last successful renewal, the node is
// gone, or the conn's ZooKeeper session changed.
func (s *session) KeepAlive(ctx context.Context) error {
	start := time.Now()
	if err := s.alive(ctx, start); err != nil {
		return err
	}
	all := batches(s.held(start))
	if err := s.confirm(ctx, true, all[0]); err != nil {
		return s.fail(ctx, "keep-alive", err)
	}
	s.renewed(start)
	// The other transactions go out together (the conn pipelines them):
	// one after another, 100 of them (100,000 locks) outlasted the TTL.
	rest := all[1:]
	errs := make([]error, len(rest))
	turns := make(chan struct{}, confirmsInFlight)
	var wg sync.WaitGroup
	for i, batch := range rest {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			errs[i] = s.confirm(ctx, false, batch)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return s.fail(ctx, "keep-alive", err)
		}
	}
	return nil
}

// confirmsInFlight is how many confirming transactions beyond the first a
// keep-alive has in flight at once.
const confirmsInFlight = 16

// Lost returns the locks that KeepAlive, or an Acquire, found gone; see
// backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }

// held returns the session's locks to confirm: those an Acquire granted.
// Those whose lease has ended at now are not held, and Lost reports them;
// their nodes stay the session's, for Acquire, Release or Close to delete.
func (s *session) held(now time.Time) []*lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	var held []*lock
	for _, l := range s.locks {
		switch {
		case !l.granted:
		case l.leaseOver(now):
			s.ledger.Gone(l.name, l.token)
		default:
			held = append(held, l)
		}
	}
	return held
}

// batches splits the checks of locks into transactions within checkBatch
// and checkBytes. There is always one, maybe empty, for the renewal.
func batches(locks []*lock) [][]*lock {
	var out [][]*lock
	var cur []*lock
	size := 0
	for _, l := range locks {
		if len(cur) == checkBatch || size+len(l.path) > checkBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, l), size+len(l.path)
	}
	return append(out, cur)
}

// confirm runs one transaction: the session node's renewal if renew (its
// creation, if no call made it yet: see multi), and a check that the node
// of each of locks exists. If a lock's node is gone, nothing was applied:
// the lock is lost, and the transaction runs again with the checks after
// it (those before it passed). A session node found gone loses the
// session.
func (s *session) confirm(ctx context.Context, renew bool, locks []*lock) error {
	for {
		ops := make([]any, 0, len(locks))
		for _, l := range locks {
			ops = append(ops, &zk.CheckVersionRequest{Path: l.path, Version: -1})
		}
		if len(ops) == 0 && !renew {
			return nil
		}
		res, _, err := s.multi(ctx, "keep-alive", "", renew, ops...)
		i := slices.IndexFunc(res, func(r zk.MultiResponse) bool { return r.Error != nil })
		if !errors.Is(err, zk.ErrNoNode) || i < 0 || i >= len(ops) || !errors.Is(res[i].Error, zk.ErrNoNode) {
			return err // nil, or a failure that names no lock's node: the caller translates it
		}
		s.lose(locks[i])
		locks = locks[i+1:]
	}
}

// renewed extends the session's local deadline after a renewal that
// started at start.
func (s *session) renewed(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil && start.Add(s.ttl).After(s.expires) {
		s.expires = start.Add(s.ttl)
	}
}
