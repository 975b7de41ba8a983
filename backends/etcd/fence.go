package etcd

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hustings/hustings/events"
)

// Fence returns the comparison that holds only while the lock name is
// held under token, for the caller's own transaction:
//
//	resp, err := cli.Txn(ctx).If(b.Fence(name, token)).Then(clientv3.OpPut(key, v)).Commit()
//	// err == nil && !resp.Succeeded: the term is over; nothing was written
//
// A term's token is the revision of the transaction that acquired the
// lock, which wrote the lock's key; nothing writes that key again while
// the term lasts, and its end deletes the key (a release, the session's
// lease ending, an operator's delete) or rewrites it (a release with a
// hold). So the key's mod revision equals the token exactly while the
// term lasts, and a transaction conditioned on it commits only inside the
// term: a stale leader's write fails however long it was paused, and
// etcd orders it against the takeover. Token 0, no term's, never holds.
//
// A lock acquired with a lease (one-shot runs) stays fenced past the
// lease's end until another candidate takes it: nobody else holds it
// meanwhile.
func (b *Backend) Fence(name string, token events.Token) clientv3.Cmp {
	key := b.lockKey(name)
	if token == 0 {
		// No key has a negative revision: a comparison that never holds.
		return clientv3.Compare(clientv3.ModRevision(key), "<", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", int64(token))
}
