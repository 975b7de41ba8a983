package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/backends"
	"github.com/hustings/hustings/events"
	"github.com/hustings/hustings/internal/validate"
)

// staleTries bounds how often Acquire clears a lock whose lease ended and
// tries again before it reports contention.
const staleTries = 3

// Acquire takes name in one transaction if its key does not exist, and
// binds the key to the session's lease; the token is the key's create
// revision. If the key exists it reports the holder, or returns the same
// token when this session holds it. A lease > 0 costs one more round trip
// first: it grants the lock's guard lease. The lock granted is confirmed by
// every KeepAlive from then on, until Release.
func (s *session) Acquire(ctx context.Context, name string, lease time.Duration) (events.Token, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if err := validate.Acquire(name, lease); err != nil {
		return 0, err
	}
	if err := ctxErr(ctx, "acquire"); err != nil {
		return 0, err
	}
	var guard clientv3.LeaseID
	if lease > 0 {
		g, _, err := s.b.grant(ctx, "acquire", lease)
		if err != nil {
			return 0, err
		}
		guard = g
	}
	tok, used, err := s.acquire(ctx, name, guard)
	if guard != 0 && !used {
		s.b.revoke(ctx, guard)
	}
	if err != nil {
		return 0, err
	}
	s.ledger.Granted(name, tok)
	return tok, nil
}

// acquire runs the acquiring transaction, clearing a lock whose lease
// ended and trying again, a few times at most. used reports whether guard
// now guards the lock.
func (s *session) acquire(ctx context.Context, name string, guard clientv3.LeaseID) (tok events.Token, used bool, err error) {
	key := s.b.lockKey(name)
	for range staleTries {
		resp, err := s.txnAcquire(ctx, key, guard)
		if err != nil {
			return 0, false, translate(ctx, "acquire", err)
		}
		if resp.Succeeded {
			s.setGuard(name, guard)
			return events.Token(resp.Header.Revision), true, nil
		}
		if !lives(resp.Responses[0]) {
			return 0, false, s.lost("acquire")
		}
		kvs := resp.Responses[1].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // cannot be: the key existed in the same transaction
		}
		l, err := s.b.decode(ctx, kvs[0])
		switch {
		case err != nil:
			return 0, false, err
		case !l.alive:
			if err := s.b.clearStale(ctx, key, l); err != nil {
				return 0, false, err
			}
		case l.v.Session == s.lease:
			return l.token, false, nil // a retry: same token, first lease kept
		default:
			return 0, false, heldErr(name, l)
		}
	}
	return 0, false, fmt.Errorf("%w: %q: taken again each time its lease ended, %d times", backends.ErrHeld, name, staleTries)
}

// txnAcquire puts key bound to the session's lease (and its guard key
// bound to guard, if any) if the session is alive and key does not exist.
// Otherwise it reads whether the session is alive, and key. A session
// whose key is pending puts it in either branch instead of reading it
// (see alive), so its first Acquire also opens it, in the same round
// trip and the same revision as the lock.
func (s *session) txnAcquire(ctx context.Context, key string, guard clientv3.LeaseID) (*clientv3.TxnResponse, error) {
	v := value{ID: s.id, Session: s.lease, Guard: guard}
	alive, pending := s.alive()
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
	var put []clientv3.Op
	if pending {
		put = append(put, alive)
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.key), ">", 0))
	}
	put = append(put, clientv3.OpPut(key, v.encode(), clientv3.WithLease(s.lease)))
	if guard != 0 {
		put = append(put, clientv3.OpPut(guardKey(key, guard), "", clientv3.WithLease(guard)))
	}
	resp, err := s.b.client.Txn(ctx).If(cmps...).Then(put...).Else(alive, clientv3.OpGet(key)).Commit()
	if err == nil && pending {
		s.put()
	}
	return resp, err
}

// clearStale deletes the lock key read as l, whose guard is gone, unless
// it changed since.
func (b *Backend) clearStale(ctx context.Context, key string, l lockState) error {
	_, err := b.client.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", l.rev),
		clientv3.Compare(clientv3.CreateRevision(guardKey(key, l.v.Guard)), "=", 0),
	).Then(clientv3.OpDelete(key)).Commit()
	return translate(ctx, "clear a lock whose lease ended", err)
}

// Release deletes name's key, or with hold > 0 binds it to a new lease of
// hold (granted first, one more round trip) and marks it held by nobody
// alive; either way only if the key still has create revision token and
// is bound to this session's lease, so that a retried Release never
// touches a later holder's key.
func (s *session) Release(ctx context.Context, name string, token events.Token, hold time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := validate.Release(name, hold); err != nil {
		return err
	}
	s.ledger.Released(name, token) // whatever the outcome: the session claims this grant no more
	if token == 0 || token > math.MaxInt64 {
		return s.notHeld(name, token)
	}
	if err := ctxErr(ctx, "release"); err != nil {
		return err
	}
	var holdLease clientv3.LeaseID
	if hold > 0 {
		l, _, err := s.b.grant(ctx, "release", hold)
		if err != nil {
			return err
		}
		holdLease = l
	}
	err := s.release(ctx, name, token, holdLease)
	if err != nil && holdLease != 0 {
		s.b.revoke(ctx, holdLease)
	}
	return err
}

// release runs the releasing transaction; holdLease 0 frees the lock.
func (s *session) release(ctx context.Context, name string, token events.Token, holdLease clientv3.LeaseID) error {
	key := s.b.lockKey(name)
	guard := s.guard(name)
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(key), "=", int64(token)),
		clientv3.Compare(clientv3.LeaseValue(key), "=", s.lease),
	}
	op := clientv3.OpDelete(key)
	if holdLease != 0 {
		op = clientv3.OpPut(key, value{ID: s.id}.encode(), clientv3.WithLease(holdLease))
	}
	ops := []clientv3.Op{op}
	if guard != 0 {
		g := guardKey(key, guard)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(g), ">", 0))
		ops = append(ops, clientv3.OpDelete(g))
	}
	alive, pending := s.alive()
	resp, err := s.b.client.Txn(ctx).If(cmps...).Then(ops...).Else(alive).Commit()
	switch {
	case pending && errors.Is(err, rpctypes.ErrLeaseNotFound):
		return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.lost("release"))
	case err != nil:
		return translate(ctx, "release", err)
	case !resp.Succeeded:
		if pending {
			s.put()
		}
		if !lives(resp.Responses[0]) {
			return fmt.Errorf("%w: %q: %w", backends.ErrNotHeld, name, s.lost("release"))
		}
		return s.notHeld(name, token)
	}
	s.setGuard(name, 0) // the guard lease, now without a key, ends on its own
	return nil
}

func (s *session) notHeld(name string, token events.Token) error {
	return fmt.Errorf("%w: %q under token %d by this session of %s", backends.ErrNotHeld, name, token, s.id)
}

// heldErr is the error for name held as l by another session, or by
// nobody alive during a hold.
func heldErr(name string, l lockState) error {
	if l.v.Session == 0 {
		return fmt.Errorf("%w: %q by %s, released with a hold", backends.ErrHeld, name, l.v.ID)
	}
	return fmt.Errorf("%w: %q by %s", backends.ErrHeld, name, l.v.ID)
}
