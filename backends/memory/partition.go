package memory

import (
	"context"
	"fmt"

	"github.com/hustings/hustings/backends"
)

// Partition cuts candidate id off the backend, to test how callers live
// through a network partition: from now on, every call of a session opened
// for id, and every Open for id, blocks until its context ends and then
// returns an error matching backends.ErrUnavailable and the context's
// error. A KeepAlive that never arrives does not extend its session, so the
// session expires and others can take its locks. Calls already blocked stay
// blocked. Heal ends the partition. An empty id does nothing.
func (b *Backend) Partition(id string) {
	if id == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut[id] == nil {
		b.cut[id] = make(chan struct{})
	}
}

// Heal ends the partition of candidate id: calls blocked by it go on as if
// they had just arrived, and later calls do not block. Healing an id that
// is not partitioned does nothing; it does not end PartitionAll.
func (b *Backend) Heal(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch := b.cut[id]; ch != nil {
		close(ch)
		delete(b.cut, id)
	}
}

// PartitionAll cuts every caller off the backend, as Partition does for
// one candidate, including Holder and Watch. Channels of earlier watches
// stay open. HealAll ends it.
func (b *Backend) PartitionAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cutAll == nil {
		b.cutAll = make(chan struct{})
	}
}

// HealAll ends PartitionAll and every partition made by Partition.
func (b *Backend) HealAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cutAll != nil {
		close(b.cutAll)
		b.cutAll = nil
	}
	for id, ch := range b.cut {
		close(ch)
		delete(b.cut, id)
	}
}

// reach stands for the round trip to the backend. It fails at once if ctx
// is done, and blocks while the caller is partitioned, until the partition
// heals or ctx ends. id is the calling candidate, or "" for Holder and
// Watch, which only PartitionAll cuts off.
func (b *Backend) reach(ctx context.Context, id string) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: memory: %w", backends.ErrUnavailable, err)
		}
		b.mu.Lock()
		cut := b.cutAll
		if cut == nil && id != "" {
			cut = b.cut[id]
		}
		b.mu.Unlock()
		if cut == nil {
			return nil
		}
		select {
		case <-cut:
		case <-ctx.Done():
			return fmt.Errorf("%w: memory: partitioned: %w", backends.ErrUnavailable, ctx.Err())
		}
	}
}

// Delete removes the lock name whoever holds it, the way an operator's
// delete or an eviction would on a real server: the holder's session
// reports it in Lost at once, as a watch on its own keys would (and its
// next KeepAlive would find it anyway), and waiters are woken. A lock released with a hold is removed too; the
// fencing counter is kept. Deleting a free lock does nothing.
func (b *Backend) Delete(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.locks[name]; l != nil {
		if l.sess != nil {
			l.sess.ledger.Gone(name, l.token) // pushed at once, as a watch would
		}
		b.remove(name, l)
	}
}

// Expire ends every session of candidate id now, as a server ends a
// session whose TTL ran out without a renewal: its locks are freed (a
// lock it released with a hold stays held until the hold ends) and their
// waiters woken, its registry entries vanish, its holder hears of the
// lost locks at once in Lost (as a watch on its own keys would tell it),
// and its next call fails with backends.ErrSessionLost. The candidate
// itself is not cut off: it may open a new session. An id with no live
// session does nothing.
func (b *Backend) Expire(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.open {
		if s.id != id {
			continue
		}
		for name, l := range s.locks {
			s.ledger.Gone(name, l.token)
		}
		s.expires = b.clock.Now()
		s.end()
	}
}
