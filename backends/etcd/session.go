package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/ledger"
	"github.com/hustings/hustings/internal/validate"
)

// Open starts a session for candidate id: it grants an etcd lease of ttl
// rounded up to whole seconds (at least one), in one round trip. The
// session's key, bound to the lease, is put by the session's first
// transaction, beside that transaction's work (see session.alive). It
// returns an error matching backends.ErrInvalid for an empty id, a ttl ≤
// 0, or a server that grants a shorter lease than asked.
func (b *Backend) Open(ctx context.Context, id string, ttl time.Duration) (backends.Session, error) {
	if err := validate.Session(id, ttl); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx, "open session"); err != nil {
		return nil, err
	}
	if b.client.Ctx().Err() != nil {
		return nil, fmt.Errorf("%w: etcd: open session: the client is closed", backends.ErrInvalid)
	}
	lease, rev, err := b.grant(ctx, "open session", ttl)
	if err != nil {
		return nil, err
	}
	return &session{b: b, id: id, lease: lease, key: b.sessionKey(lease), opened: rev,
		pending: true, guards: make(map[string]clientv3.LeaseID)}, nil
}

// session is one candidate's liveness on etcd: one lease, to which every
// lock key it holds is bound.
type session struct {
	b      *Backend
	id     string
	lease  clientv3.LeaseID
	key    string // bound to lease: exists while the session lives, once put
	opened int64  // the store's revision when the lease was granted

	mu      sync.Mutex
	closed  bool
	pending bool                        // no transaction that put key has answered yet
	guards  map[string]clientv3.LeaseID // guard leases of locks taken with a lease, by name
	unwatch context.CancelFunc          // stops the loss watch; nil until Losses
	watcher sync.WaitGroup              // the loss watch's goroutine

	ledger ledger.Ledger // what Acquire granted, and what KeepAlive found gone
	mark   mark          // how far the loss watch has seen
}

// ID returns the candidate ID the session was opened for.
func (s *session) ID() string { return s.id }

// KeepAlive renews the session's lease, and so every lock of the
// session, and confirms the locks the session holds. With the loss watch
// following (see Losses) it confirms them in constant work whatever their
// number: beside the lease keep-alive request, a linearizable read of the
// session key gives a revision no older than the call, and KeepAlive
// waits until a progress notification shows the watch has seen every
// change up to it (the watch has put whatever it saw in Lost). Without
// the watch, or if it does not catch up within progressWait, it reads the
// locks: one read-only transaction per maxTxnOps locks (half as many
// locks acquired with a lease). The lease comes first: if it is gone the
// result matches backends.ErrSessionLost; if the confirmation fails the
// result matches backends.ErrUnavailable, although the lease may have
// been renewed.
func (s *session) KeepAlive(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctxErr(ctx, "keep-alive"); err != nil {
		return err
	}
	if !s.mark.usable() {
		return s.keepAliveRead(ctx)
	}
	var rev int64
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() { rev, rerr = s.linearRevision(ctx) })
	_, err := s.b.client.KeepAliveOnce(ctx, s.lease)
	wg.Wait()
	if err != nil {
		return translate(ctx, "keep-alive", err)
	}
	if rerr == nil && s.reach(ctx, rev) {
		return nil
	}
	if err := ctxErr(ctx, "keep-alive: confirm locks"); err != nil {
		return err
	}
	apply, err := s.confirmAll(ctx) // the watch is behind: read
	if err != nil {
		return err
	}
	apply()
	return nil
}

// keepAliveRead renews the lease and, alongside it, confirms the locks by
// reading them; what it finds gone goes to Lost only if the lease lives.
func (s *session) keepAliveRead(ctx context.Context) error {
	var apply func()
	var cerr error
	var wg sync.WaitGroup
	wg.Go(func() { apply, cerr = s.confirmAll(ctx) })
	_, err := s.b.client.KeepAliveOnce(ctx, s.lease)
	wg.Wait()
	if err != nil {
		return translate(ctx, "keep-alive", err)
	}
	if cerr != nil {
		return cerr
	}
	apply()
	return nil
}

// confirmAll reads every lock the session holds, one transaction per
// maxTxnOps compares, all in flight at once, and returns what moves the
// locks found gone to Lost.
func (s *session) confirmAll(ctx context.Context) (apply func(), err error) {
	parts := chunks(s.held())
	gone := make([][]held, len(parts))
	revs := make([]int64, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { gone[i], revs[i], errs[i] = s.confirm(ctx, part) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // one is enough: the locks are not confirmed
		}
	}
	return func() {
		for _, part := range gone {
			for _, l := range part {
				s.ledger.Gone(l.name, l.token)
			}
		}
		if len(revs) > 0 {
			s.mark.read(slices.Min(revs))
		}
	}, nil
}

// Close revokes the session's lease, which deletes every lock key bound to
// it. Locks released with a hold are bound to their own leases and stay.
// Close of a session the server already forgot returns nil.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	closed, unwatch := s.closed, s.unwatch
	s.closed = true
	s.mu.Unlock()
	if closed {
		return nil
	}
	if unwatch != nil {
		unwatch()
		s.watcher.Wait()
	}
	if err := ctxErr(ctx, "close session"); err != nil {
		return err
	}
	_, err := s.b.client.Revoke(ctx, s.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return translate(ctx, "close session", err)
}

// usable returns an error matching backends.ErrSessionClosed once Close
// was called.
func (s *session) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("etcd: session of %s: %w", s.id, backends.ErrSessionClosed)
	}
	return nil
}

// alive returns the operation by which a transaction learns whether the
// session lives: a count of its key once a transaction put it, otherwise
// a put of it (pending). etcd refuses a put bound to a lease it no longer
// knows, and fails the whole transaction with "lease not found", so the
// put writes nothing for a lost session and the key is never put once the
// lease is gone: a transaction that returns has proved the session alive.
// Transactions in flight at once may each put the key; the puts are the
// same, and the key keeps its first create revision. pending reports
// which operation it is; the caller calls put once such a transaction
// answered.
func (s *session) alive() (op clientv3.Op, pending bool) {
	s.mu.Lock()
	pending = s.pending
	s.mu.Unlock()
	if pending {
		return clientv3.OpPut(s.key, s.id, clientv3.WithLease(s.lease)), true
	}
	return clientv3.OpGet(s.key, clientv3.WithCountOnly()), false
}

// put records that a transaction that puts the session key answered: the
// key exists from then on as long as the lease does (unless deleted
// behind the session's back, which later calls then take for its loss).
func (s *session) put() {
	s.mu.Lock()
	s.pending = false
	s.mu.Unlock()
}

// lives reports whether r, the answer to alive's operation, shows the
// session alive: a put answered, or a count found the key.
func lives(r *etcdserverpb.ResponseOp) bool {
	if rr := r.GetResponseRange(); rr != nil {
		return rr.Count > 0
	}
	return r.GetResponsePut() != nil
}

// guard returns the guard lease of the lock name, 0 if it has none.
func (s *session) guard(name string) clientv3.LeaseID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.guards[name]
}

// setGuard records the guard lease of the lock name (0: none).
func (s *session) setGuard(name string, g clientv3.LeaseID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g == 0 {
		delete(s.guards, name)
		return
	}
	s.guards[name] = g
}

// lost is the error for a session the server no longer knows.
func (s *session) lost(what string) error {
	return fmt.Errorf("etcd: %s: session of %s (lease %x) expired: %w", what, s.id, int64(s.lease), backends.ErrSessionLost)
}

// Lost returns the locks KeepAlive found gone; see backends.Session.
func (s *session) Lost() map[string]events.Token { return s.ledger.Lost() }
